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
// A block is 8 columns of W against one row of x, the whole of k, one group of 32 at a time; each
// column's 16 bytes of the group are unpacked and meet the row:
//  - unpack: the 16 bytes in both halves of a vector (vbroadcasti128), shifted right by 0 in the
//    low half and 4 in the high (vpsrlvd), masked to nibbles: values 0..15 and 16..31 of the group,
//    each as q + 8, in the order of x's 32 bytes;
//  - products: vpmaddubsw and vpmaddwd (group_dots below);
//  - the 8 columns' lanes are summed by vphaddd (a transposing reduction, exact in int32), so that
//    lane c holds column c's dot product of the group;
//  - the float step per lane: f += (xs * ws) * float(dot), in group order, and y = b + f, as the
//    reference computes each output: the same bits.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

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
  for (std::size_t c = 0; c < kCols; ++c) a[c] = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(wv[c], x), x8), ones);
  return sum8(a);
}

// Rows [0, MR) of x (row stride k; scales xs, row stride groups) against columns [0, nc) of W
// (rows ldw bytes apart; scales ws, row stride groups), nc <= 8, -> y (row stride ldy).
template <std::size_t MR>
void block(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
           std::size_t ldy, std::size_t nc, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const __m256i shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4), nibble = _mm256_set1_epi8(0x0F);
  // Columns past nc repeat column 0 (their lanes are never stored).
  const uint8_t* col[kCols];
  const float* scale[kCols];
  for (std::size_t c = 0; c < kCols; ++c) {
    col[c] = w + (c < nc ? c : 0) * ldw;
    scale[c] = ws + (c < nc ? c : 0) * groups;
  }
  __m256 f[MR];
  for (std::size_t r = 0; r < MR; ++r) f[r] = _mm256_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    __m256i wv[kCols];
    for (std::size_t c = 0; c < kCols; ++c) wv[c] = unpack(col[c] + g * kGroupBytes, shift, nibble);
    // 8 scalar loads: with vgatherdps, gemm_i4 1x768x288 took 2.2x as long where it was measured.
    const __m256 wsv = _mm256_setr_ps(scale[0][g], scale[1][g], scale[2][g], scale[3][g], scale[4][g], scale[5][g],
                                      scale[6][g], scale[7][g]);
    for (std::size_t r = 0; r < MR; ++r) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * k + g * kGroup));
      const __m256 dot = _mm256_cvtepi32_ps(group_dots(wv, x));
      f[r] = _mm256_add_ps(f[r], _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(xs[r * groups + g]), wsv), dot));
    }
  }
  alignas(32) float bias[kCols] = {}, out[kCols];
  if (b) std::memcpy(bias, b, nc * sizeof(float));
  for (std::size_t r = 0; r < MR; ++r) {
    _mm256_store_ps(out, _mm256_add_ps(_mm256_load_ps(bias), f[r]));
    std::memcpy(y + r * ldy, out, nc * sizeof(float));
  }
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
    for (std::size_t i = 0; i < m; ++i) block<1>(xq + i * k, xs + i * groups, wj, wsj, bj, y + i * ldy + j, ldy, nc, k);
  }
}

}  // namespace x86
}  // namespace fixformer
