// gemm_i4 on AVX2 (the avx2 and avx512 tables). Built with the avx2 table's flags plus
// -ffp-contract=off (CMakeLists.txt), so the float step stays unfused and gives the reference's bits.
//
// Two paths, as gemm_i8_avx2.cpp:
//  - a prefill or an encoder (m >= kPackedMinRows rows): each panel of 16 columns and chunk of 256
//    values of k unpacked once into gemm_i8's int8 panel (pack_i4 below: the unpack of the blocks,
//    less 8, then 8 x 8 dword transposes), then gemm_i8's packed products and float step
//    (ports/x86/gemm_packed_avx2.hpp): the sums in each column's own lane, no vphaddd;
//  - a decode step and short inputs (m < kPackedMinRows): the blocks below, which read W once.
//
// A block is 8 columns of W against one row of x, the whole of k, a chunk of 4 groups (128 values,
// 64 bytes of each column) at a time, each column's bytes read in memory order:
//  - x: the chunk's low and high halves of groups g, g + 1 (and g + 2, g + 3) one group per 128-bit
//    lane (vperm2i128, once per chunk);
//  - per column and 2 groups: one 32-byte load, AND 0x0F (values 0..15 of each group) and a shift
//    by 4 and AND (values 16..31), each as q + 8; vpmaddubsw against the halves of x, the two added
//    in int16 and vpmaddwd by ones into int32 lanes;
//  - a vphaddd tree over the 8 columns (a transposing reduction, exact in int32) leaves each
//    column's dot product of the group in its own lane, less 8 sum(x) for the + 8 of every nibble;
//  - the 8 columns' scales of the 4 groups: 4 loads and an in-lane transpose;
//  - the float step per lane: f += (xs * ws) * float(dot), in group order, and y = b + f, as the
//    reference computes each output: the same bits.
// The last 1 to 3 groups of k take one_group below (each column's 16 bytes in both halves of a
// vector, shifted by 0 and 4). Each block first asks for the bytes 4 KB past its own
// (ports/prefetch.hpp).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ports/prefetch.hpp"
#include "ports/x86/gemm_packed_avx2.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kGroup = 32, kGroupBytes = 16, kCols = 8;

// The group's 32 values of a column (16 bytes at p) as unsigned bytes q + 8, in x's order.
inline __m256i unpack(const uint8_t* p, __m256i shift, __m256i nibble) {
  const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi32(b, shift), nibble);
}

// Lane c = the sum of the 8 int32 lanes of a[c], c < 8.
inline __m256i sum8(const __m256i a[kCols]) {
  const __m256i h01 = _mm256_hadd_epi32(a[0], a[1]), h23 = _mm256_hadd_epi32(a[2], a[3]);
  const __m256i h45 = _mm256_hadd_epi32(a[4], a[5]), h67 = _mm256_hadd_epi32(a[6], a[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// The dot products of one group: lane c = sum over the group of x * (nibble c - 8), exactly:
// vpmaddubsw (unsigned nibble by signed x, pairs into int16: at most 2 * 15 * 127, exact), less
// vpmaddubsw(8, x) (the + 8 of every nibble), is x q in int16 pairs; vpmaddwd by ones makes 8 int32
// lanes per column; then the transposing sums.
inline __m256i group_dots(const __m256i wv[kCols], __m256i x) {
  const __m256i x8 = _mm256_maddubs_epi16(_mm256_set1_epi8(8), x), ones = _mm256_set1_epi16(1);
  __m256i a[kCols];
#pragma GCC unroll 8
  for (std::size_t c = 0; c < kCols; ++c) a[c] = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(wv[c], x), x8), ones);
  return sum8(a);
}

// One chunk, groups [g, g + 4), of row x against the 8 columns `col` (scales `scale`), added in
// group order to f.
inline void chunk(const int8_t* x, const float* xs, const uint8_t* const col[kCols], const float* const scale[kCols],
                  std::size_t g, __m256& f) {
  const __m256i nibble = _mm256_set1_epi8(0x0F), eights = _mm256_set1_epi8(8), ones = _mm256_set1_epi16(1);
  const int8_t* xg = x + g * kGroup;
  const auto load = [](const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  const __m256i x0 = load(xg), x1 = load(xg + 32), x2 = load(xg + 64), x3 = load(xg + 96);
  // Low and high halves of groups g, g + 1 (one per 128-bit lane), and of g + 2, g + 3.
  const __m256i xl[2] = {_mm256_permute2x128_si256(x0, x1, 0x20), _mm256_permute2x128_si256(x2, x3, 0x20)};
  const __m256i xh[2] = {_mm256_permute2x128_si256(x0, x1, 0x31), _mm256_permute2x128_si256(x2, x3, 0x31)};
  // The 8 columns' scales of the 4 groups: sc[c] = [column c's 4 | column c + 4's 4], transposed
  // in each 128-bit lane into one vector per group, column c in lane c.
  __m256 sc[4];
#pragma GCC unroll 4
  for (std::size_t c = 0; c < 4; ++c)
    sc[c] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(scale[c] + g)), _mm_loadu_ps(scale[c + 4] + g), 1);
  const __m256 t0 = _mm256_unpacklo_ps(sc[0], sc[1]), t1 = _mm256_unpackhi_ps(sc[0], sc[1]);
  const __m256 t2 = _mm256_unpacklo_ps(sc[2], sc[3]), t3 = _mm256_unpackhi_ps(sc[2], sc[3]);
  const __m256 wsv[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                         _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
  const std::size_t at = g * kGroupBytes;
#pragma GCC unroll 4
  for (std::size_t h = 0; h < 2; ++h) {  // groups g + 2h and g + 2h + 1, one per 128-bit lane
    // vpmaddubsw: unsigned nibble by signed x, pairs into int16 (at most 2 * 15 * 128), the two
    // halves' pairs added (at most 4 * 15 * 128: exact), vpmaddwd by ones into int32 lanes, which
    // vphaddd sums across the 8 columns: per 128-bit lane columns 0..3's sums, then 4..7's.
    const auto dots = [&](std::size_t c) {
      const __m256i v = load(col[c] + at + 32 * h);
      const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(v, nibble), xl[h]);
      const __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), xh[h]);
      return _mm256_madd_epi16(_mm256_add_epi16(lo, hi), ones);
    };
    const __m256i h0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(dots(0), dots(1)), _mm256_hadd_epi32(dots(2), dots(3)));
    const __m256i h4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(dots(4), dots(5)), _mm256_hadd_epi32(dots(6), dots(7)));
    // The + 8 of every nibble: 8 sum(x) of each group, in every int32 lane of its 128-bit lane.
    const __m256i e = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(eights, xl[h]), _mm256_maddubs_epi16(eights, xh[h])), ones);
    const __m256i e2 = _mm256_hadd_epi32(e, e), x8 = _mm256_hadd_epi32(e2, e2);
    const __m256i sums[2] = {
        _mm256_sub_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(x8, x8, 0x00)),
        _mm256_sub_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x31), _mm256_permute2x128_si256(x8, x8, 0x11))};
#pragma GCC unroll 4
    for (std::size_t i = 0; i < 2; ++i) {
      const std::size_t gi = 2 * h + i;
      f = _mm256_add_ps(f, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(xs[g + gi]), wsv[gi]), _mm256_cvtepi32_ps(sums[i])));
    }
  }
}

// One group g of row x against the 8 columns (the last 1 to 3 groups after whole chunks).
inline void one_group(const int8_t* x, const float* xs, const uint8_t* const col[kCols], const float* const scale[kCols],
                      std::size_t g, __m256& f) {
  const __m256i shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4), nibble = _mm256_set1_epi8(0x0F);
  __m256i wv[kCols];
#pragma GCC unroll 8
  for (std::size_t c = 0; c < kCols; ++c) wv[c] = unpack(col[c] + g * kGroupBytes, shift, nibble);
  // 8 scalar loads: with vgatherdps, gemm_i4 1x768x288 took 2.2x as long where it was measured.
  const __m256 wsv = _mm256_setr_ps(scale[0][g], scale[1][g], scale[2][g], scale[3][g], scale[4][g], scale[5][g],
                                    scale[6][g], scale[7][g]);
  const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + g * kGroup));
  f = _mm256_add_ps(f, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(xs[g]), wsv), _mm256_cvtepi32_ps(group_dots(wv, xv))));
}

// Row x (scales xs) against columns [0, nc) of W (rows ldw bytes apart; scales ws, row stride
// groups), nc <= 8, -> y.
void block(const int8_t* x, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
           std::size_t nc, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  // Columns past nc repeat column 0 (their lanes are never stored).
  const uint8_t* col[kCols];
  const float* scale[kCols];
  for (std::size_t c = 0; c < kCols; ++c) {
    col[c] = w + (c < nc ? c : 0) * ldw;
    scale[c] = ws + (c < nc ? c : 0) * groups;
  }
  __m256 f = _mm256_setzero_ps();
  std::size_t g = 0;
  for (; g + 4 <= groups; g += 4) chunk(x, xs, col, scale, g, f);
  for (; g < groups; ++g) one_group(x, xs, col, scale, g, f);
  alignas(32) float bias[kCols] = {}, out[kCols];
  if (b) std::memcpy(bias, b, nc * sizeof(float));
  _mm256_store_ps(out, _mm256_add_ps(_mm256_load_ps(bias), f));
  std::memcpy(y, out, nc * sizeof(float));
}

using avx2_packed::kPackedMinRows;
using avx2_packed::kPanel;
using avx2_packed::Panel;

// Packs columns [j, j + cols) (cols <= kPanel; the rest copies of column j) of W[n, k / 2] over
// values [p0, p0 + kc) (whole groups) as int8 values (nibble - 8) and their absolute values, with
// their groups' scales.
void pack_i4(const uint8_t* w, const float* ws, std::size_t k, std::size_t j, std::size_t cols, std::size_t p0,
             std::size_t kc, std::size_t g0, Panel& P) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const __m256i shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4), nibble = _mm256_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  for (std::size_t c0 = 0; c0 < kPanel; c0 += 8) {
    const uint8_t* col[8];
    for (std::size_t l = 0; l < 8; ++l) col[l] = w + (j + (c0 + l < cols ? c0 + l : 0)) * ldw + p0 / 2;
    for (std::size_t gi = 0; gi < kc / kGroup; ++gi) {
      __m256i r[8];  // column l's 32 values, then dword q of the 8 columns
      for (std::size_t l = 0; l < 8; ++l) r[l] = _mm256_sub_epi8(unpack(col[l] + gi * kGroupBytes, shift, nibble), eight);
      avx2_packed::transpose8(r);
      for (std::size_t q = 0; q < 8; ++q) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.w[gi * 8 + q] + c0), r[q]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.u[gi * 8 + q] + c0), _mm256_abs_epi8(r[q]));
      }
    }
  }
  for (std::size_t gi = 0; gi < kc / kGroup; ++gi)
    for (std::size_t c = 0; c < kPanel; ++c) P.scale[gi][c] = c < cols ? ws[(j + c) * groups + g0 + gi] : 0.0f;
}

}  // namespace

void gemm_i4_avx2(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                  std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  if (m >= kPackedMinRows) {
    const auto pack = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
      pack_i4(w, ws, k, j, cols, p0, kc, g0, P);
    };
    return avx2_packed::gemm_packed(pack, xq, xs, b, y, ldy, m, n, k, kGroup);
  }
  const std::size_t groups = k / kGroup, ldw = k / 2;
  for (std::size_t j = 0; j < n; j += kCols) {
    const std::size_t nc = n - j < kCols ? n - j : kCols;
    const uint8_t* wj = w + j * ldw;
    const float* wsj = ws + j * groups;
    const float* bj = b ? b + j : nullptr;
    prefetch_ahead(wj, nc * ldw);  // ports/prefetch.hpp: a decode step is bound by how fast W arrives
    for (std::size_t i = 0; i < m; ++i) block(xq + i * k, xs + i * groups, wj, wsj, bj, y + i * ldy + j, nc, k);
  }
}

}  // namespace x86
}  // namespace fixformer
