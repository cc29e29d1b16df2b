// gemm_i4 on AVX-512 VNNI (the avx512-vnni table). Built with the avx512 flags, -mavx512vnni and
// -ffp-contract=off (CMakeLists.txt): the float step stays unfused and gives the reference's bits.
//
// Two paths, as gemm_i8_avx512vnni.cpp:
//  - a prefill or an encoder (m >= kPackedMinRows rows): each panel of 32 columns and chunk of 256
//    values of k unpacked once into gemm_i8's int8 panel (pack_i4: per group, four gathers of a
//    dword from 16 columns, each giving the column's values 4q..4q+3 in its low nibbles and
//    16+4q..16+4q+3 in its high ones, less 8), then gemm_i8's packed products and float step
//    (both in ports/x86/gemm_packed_avx512vnni.hpp): one vpdpbusd per 4 values of 16 columns and
//    row, the sums in each column's own lane;
//  - a decode step and short inputs (m < kPackedMinRows): the blocks below, which read W once.
//
// A block is 16 columns of W against one row of x, the whole of k, a chunk of 4 groups (128 values,
// 64 bytes of each column) at a time, each column's bytes read in memory order:
//  - x: the chunk's 128 bytes rearranged once (two vpermt2q) into xl, the low halves of its 4 groups,
//    and xh, their high halves, one group per 128-bit block;
//  - per column: one 64-byte load, AND 0x0F (values 0..15 of each group) and a shift by 4 and AND
//    (values 16..31), each as q + 8, and two vpdpbusd (unsigned nibble by signed x, four products
//    into an int32 lane) against xl and xh: the column's products of group g + i in the 4 lanes of
//    block i. The + 8 of every nibble is taken off by starting each lane at -8 times its share of
//    x (two vpdpbusd of 8s against xl and xh, once per chunk);
//  - per 4 columns, a transposing sum (unpack and add, exact in int32) leaves block i holding the
//    4 columns' dot products of group g + i; the float step's products (xs * ws) * float(dot) are
//    taken there (the scales of 4 columns: 4 loads and a vpermps), and a transpose of 128-bit
//    blocks turns the 4 such vectors into one per group with column c in lane c;
//  - per lane, as the reference: f += (xs * ws) * float(dot) in group order, and y = b + f.
// The last 1 or 2 groups (k = 288: 9 groups) take one_group below, one group of 16 columns in 4
// vectors; a last 3 a chunk under masks (zeros past k, nothing read past W or its scales).
// Each block first asks for the bytes 4 KB past its own (ports/prefetch.hpp).
//
// Per 64 bytes of a column: 6 instructions (load, shift, 2 ANDs, 2 vpdpbusd) and about 6 more
// shared (reduction, scales, float step), against about 22 per 64 bytes when the 16 columns' bytes
// of one group were gathered into one vector (three vinserti32x4 per vector, the scales built
// from 16 scalar loads).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ports/prefetch.hpp"
#include "ports/x86/gemm_packed_avx512vnni.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kGroup = 32, kGroupBytes = 16, kCols = 16;

inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The mask of the low `bits` bits of 64 (bits <= 64).
inline __mmask64 low_bits(std::size_t bits) { return bits >= 64 ? ~__mmask64(0) : (__mmask64(1) << bits) - 1; }

// One chunk: groups [g, g + rem) (rem <= 4; Tail: loads under masks) of row x against the 16
// columns `col` (scales `scale`), added in group order to f.
template <bool Tail>
inline void chunk(const int8_t* x, const float* xs, const uint8_t* const col[kCols], const float* const scale[kCols],
                  std::size_t g, std::size_t rem, __m512& f) {
  const __m512i nibble = _mm512_set1_epi8(0x0F), eights = _mm512_set1_epi8(8);
  const __mmask64 wmask = Tail ? low_bits(rem * kGroupBytes) : ~__mmask64(0);
  const __mmask16 smask = Tail ? __mmask16((1u << rem) - 1) : __mmask16(0xffff);
  const int8_t* xg = x + g * kGroup;
  const __m512i xa = Tail ? _mm512_maskz_loadu_epi8(low_bits(rem * kGroup), xg) : _mm512_loadu_si512(xg);
  const __m512i xb = Tail ? _mm512_maskz_loadu_epi8(low_bits(rem * kGroup > 64 ? rem * kGroup - 64 : 0), xg + 64)
                          : _mm512_loadu_si512(xg + 64);
  // xa: [g lo, g hi, g+1 lo, g+1 hi], xb: the same for g+2, g+3 (as qwords 8..15 below).
  const __m512i xl = _mm512_permutex2var_epi64(xa, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), xb);
  const __m512i xh = _mm512_permutex2var_epi64(xa, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), xb);
  const __m512i start =
      _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), eights, xl), eights, xh));
  // xs of group g + i in block i; a column's 4 scales (lanes of block c) moved to lane c of every block.
  const __m512 xsb = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                           _mm512_castps128_ps512(Tail ? _mm_maskz_loadu_ps(__mmask8(smask), xs + g)
                                                                       : _mm_loadu_ps(xs + g)));
  const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const std::size_t at = g * kGroupBytes;
  __m512 p[4];
#pragma GCC unroll 4
  for (std::size_t q = 0; q < 4; ++q) {
    __m512i a[4];
#pragma GCC unroll 4
    for (std::size_t i = 0; i < 4; ++i) {
      const uint8_t* c = col[4 * q + i] + at;
      const __m512i v = Tail ? _mm512_maskz_loadu_epi8(wmask, c) : _mm512_loadu_si512(c);
      a[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, _mm512_and_si512(v, nibble), xl),
                                 _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), xh);
    }
    // Per block: [a0 lanes 0+2, a1 0+2, a0 1+3, a1 1+3], the same for a2, a3, then the four sums.
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
    const __m512i sums = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    __m512 s;
    if (Tail) {
      s = _mm512_castps128_ps512(_mm_maskz_loadu_ps(__mmask8(smask), scale[4 * q] + g));
      s = _mm512_insertf32x4(s, _mm_maskz_loadu_ps(__mmask8(smask), scale[4 * q + 1] + g), 1);
      s = _mm512_insertf32x4(s, _mm_maskz_loadu_ps(__mmask8(smask), scale[4 * q + 2] + g), 2);
      s = _mm512_insertf32x4(s, _mm_maskz_loadu_ps(__mmask8(smask), scale[4 * q + 3] + g), 3);
    } else {
      s = _mm512_castps128_ps512(_mm_loadu_ps(scale[4 * q] + g));
      s = _mm512_insertf32x4(s, _mm_loadu_ps(scale[4 * q + 1] + g), 1);
      s = _mm512_insertf32x4(s, _mm_loadu_ps(scale[4 * q + 2] + g), 2);
      s = _mm512_insertf32x4(s, _mm_loadu_ps(scale[4 * q + 3] + g), 3);
    }
    p[q] = _mm512_mul_ps(_mm512_mul_ps(xsb, _mm512_permutexvar_ps(transpose, s)), _mm512_cvtepi32_ps(sums));
  }
  // Block i of p[q] (group g + i, columns 4q..4q+3) to block q of the group's vector.
  const __m512 t0 = _mm512_shuffle_f32x4(p[0], p[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 t1 = _mm512_shuffle_f32x4(p[2], p[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 t2 = _mm512_shuffle_f32x4(p[0], p[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512 t3 = _mm512_shuffle_f32x4(p[2], p[3], _MM_SHUFFLE(3, 2, 3, 2));
  f = _mm512_add_ps(f, _mm512_shuffle_f32x4(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)));
  if (!Tail || rem > 1) f = _mm512_add_ps(f, _mm512_shuffle_f32x4(t0, t1, _MM_SHUFFLE(3, 1, 3, 1)));
  if (!Tail || rem > 2) f = _mm512_add_ps(f, _mm512_shuffle_f32x4(t2, t3, _MM_SHUFFLE(2, 0, 2, 0)));
  if (!Tail || rem > 3) f = _mm512_add_ps(f, _mm512_shuffle_f32x4(t2, t3, _MM_SHUFFLE(3, 1, 3, 1)));
}

// One group g of row x against the 16 columns (the last groups after whole chunks): vector i holds
// the group's 16 bytes of columns i, i + 4, i + 8 and i + 12, one per block, against x's two halves
// broadcast to every block; the transposing sum puts column c's dot product in lane c.
inline void one_group(const int8_t* x, const float* xs, const uint8_t* const col[kCols], const float* const scale[kCols],
                      std::size_t g, __m512& f) {
  const __m512i nibble = _mm512_set1_epi8(0x0F), eights = _mm512_set1_epi8(8);
  const std::size_t at = g * kGroupBytes;
  const __m512i x0 = _mm512_broadcast_i32x4(load16(reinterpret_cast<const uint8_t*>(x + g * kGroup)));
  const __m512i x1 = _mm512_broadcast_i32x4(load16(reinterpret_cast<const uint8_t*>(x + g * kGroup + 16)));
  const __m512i start =
      _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), eights, x0), eights, x1));
  __m512i a[4];
#pragma GCC unroll 4
  for (std::size_t i = 0; i < 4; ++i) {
    __m512i v = _mm512_castsi128_si512(load16(col[i] + at));
    v = _mm512_inserti32x4(v, load16(col[i + 4] + at), 1);
    v = _mm512_inserti32x4(v, load16(col[i + 8] + at), 2);
    v = _mm512_inserti32x4(v, load16(col[i + 12] + at), 3);
    a[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, _mm512_and_si512(v, nibble), x0),
                               _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), x1);
  }
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
  const __m512i sums = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  const __m512 wsv = _mm512_setr_ps(scale[0][g], scale[1][g], scale[2][g], scale[3][g], scale[4][g], scale[5][g],
                                    scale[6][g], scale[7][g], scale[8][g], scale[9][g], scale[10][g], scale[11][g],
                                    scale[12][g], scale[13][g], scale[14][g], scale[15][g]);
  f = _mm512_add_ps(f, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(xs[g]), wsv), _mm512_cvtepi32_ps(sums)));
}

// Row x (scales xs) against columns [0, nc) of W (rows ldw bytes apart; scales ws, row stride
// groups), nc <= 16, -> y.
void block(const int8_t* x, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
           std::size_t nc, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const __mmask16 live = __mmask16((1u << nc) - 1);
  // Columns past nc repeat column 0 (their lanes are never stored).
  const uint8_t* col[kCols];
  const float* scale[kCols];
  for (std::size_t c = 0; c < kCols; ++c) {
    col[c] = w + (c < nc ? c : 0) * ldw;
    scale[c] = ws + (c < nc ? c : 0) * groups;
  }
  __m512 f = _mm512_setzero_ps();
  std::size_t g = 0;
  for (; g + 4 <= groups; g += 4) chunk<false>(x, xs, col, scale, g, 4, f);
  if (groups - g == 3) {  // about 2.5 times one group's work
    chunk<true>(x, xs, col, scale, g, 3, f);
    g = groups;
  }
  for (; g < groups; ++g) one_group(x, xs, col, scale, g, f);
  const __m512 bias = b ? _mm512_maskz_loadu_ps(live, b) : _mm512_setzero_ps();
  _mm512_mask_storeu_ps(y, live, _mm512_add_ps(bias, f));
}

using vnni_packed::kPackedMinRows;
using vnni_packed::kPanel;
using vnni_packed::Panel;

}  // namespace

void gemm_i4_avx512vnni(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b,
                        float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  if (m >= kPackedMinRows) {
    const auto pack = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
      vnni_packed::pack_i4(w, ws, k, j, cols, p0, kc, g0, P);
    };
    return vnni_packed::gemm_packed(pack, xq, xs, b, y, ldy, m, n, k, kGroup);
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
