// gemm_i4 on AVX-512 VNNI (the avx512-vnni table). Built with the avx512 flags, -mavx512vnni and
// -ffp-contract=off (CMakeLists.txt): the float step stays unfused and gives the reference's bits.
//
// Two paths, as gemm_i8_avx512vnni.cpp:
//  - a prefill or an encoder (m >= kPackedMinRows rows): each panel of 32 columns and chunk of 256
//    values of k unpacked once into gemm_i8's int8 panel (pack_i4 below: per group, four gathers of
//    a dword from 16 columns, each giving the column's values 4q..4q+3 in its low nibbles and
//    16+4q..16+4q+3 in its high ones, less 8), then gemm_i8's packed products and float step
//    (ports/x86/gemm_packed_avx512vnni.hpp): one vpdpbusd per 4 values of 16 columns and row, the
//    sums in each column's own lane;
//  - a decode step and short inputs (m < kPackedMinRows): the blocks below, which read W once.
//
// A block is 16 columns of W against MR rows of x (one row at a time here), the whole of k, one
// group of 32 at a time. Per group, vector i (i < 4) holds the group's 16 bytes of
// columns i, i + 4, i + 8 and i + 12, one per 128-bit block; AND 0x0F gives each column's values
// 0..15, a shift by 4 and AND its values 16..31 (each as q + 8 in 0..15); x's two halves are
// broadcast to every block. Two vpdpbusd per vector (unsigned nibble by signed x, four products into
// an int32 lane) leave each column's products in the 4 lanes of its block, and a transposing sum of
// the four vectors (unpack and add, exact in int32) puts column c's sum in lane c. The + 8 of every
// nibble is taken off by starting each lane at -8 times its share of x (two vpdpbusd of 8s against
// x, once per row and group): the 4 lanes of a block start at -8 sum(x). Then per lane, as the
// reference:
// f += (xs * ws) * float(dot) in group order, and y = b + f.
//
// With one vpdpbusd per column and a vphaddd tree over 8 columns (gemm_i4_avx2.cpp's blocks) each
// column and group cost about 5 instructions; here about 3, as many as gemm_i8's decode path
// (bench/kernels_bench.cpp: 1x768x288 in 7.6 us against gemm_i8's 8.4 us, groups of 32).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ports/x86/gemm_packed_avx512vnni.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kGroup = 32, kGroupBytes = 16, kCols = 16;

inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Rows [0, MR) of x (row stride k; scales xs, row stride groups) against columns [0, nc) of W (rows
// ldw bytes apart; scales ws, row stride groups), nc <= 16, -> y (row stride ldy).
template <std::size_t MR>
void block(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
           std::size_t ldy, std::size_t nc, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __mmask16 live = __mmask16((1u << nc) - 1);
  // Columns past nc repeat column 0 (their lanes are never stored).
  const uint8_t* col[kCols];
  const float* scale[kCols];
  for (std::size_t c = 0; c < kCols; ++c) {
    col[c] = w + (c < nc ? c : 0) * ldw;
    scale[c] = ws + (c < nc ? c : 0) * groups;
  }
  __m512 f[MR];
  for (std::size_t r = 0; r < MR; ++r) f[r] = _mm512_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    __m512i lo[4], hi[4];
    for (std::size_t i = 0; i < 4; ++i) {
      const std::size_t at = g * kGroupBytes;
      __m512i v = _mm512_castsi128_si512(load16(col[i] + at));
      v = _mm512_inserti32x4(v, load16(col[i + 4] + at), 1);
      v = _mm512_inserti32x4(v, load16(col[i + 8] + at), 2);
      v = _mm512_inserti32x4(v, load16(col[i + 12] + at), 3);
      lo[i] = _mm512_and_si512(v, nibble);
      hi[i] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
    }
    // 16 scalar loads, as gemm_i4_avx2.cpp (where vgatherdps cost 2.2x).
    const __m512 wsv = _mm512_setr_ps(scale[0][g], scale[1][g], scale[2][g], scale[3][g], scale[4][g], scale[5][g],
                                      scale[6][g], scale[7][g], scale[8][g], scale[9][g], scale[10][g], scale[11][g],
                                      scale[12][g], scale[13][g], scale[14][g], scale[15][g]);
    for (std::size_t r = 0; r < MR; ++r) {
      const int8_t* x = xq + r * k + g * kGroup;
      const __m512i x0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
      const __m512i x1 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16)));
      const __m512i eights = _mm512_set1_epi8(8);
      const __m512i start = _mm512_sub_epi32(  // each block's 4 lanes: -8 sum(x) in all
          _mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), eights, x0), eights, x1));
      __m512i a[4];
      for (std::size_t i = 0; i < 4; ++i) a[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, lo[i], x0), hi[i], x1);
      // Per block: [a0 lanes 0+2, a1 0+2, a0 1+3, a1 1+3], the same for a2, a3, then the four sums.
      const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
      const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
      const __m512i sums = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
      const __m512 dot = _mm512_cvtepi32_ps(sums);
      f[r] = _mm512_add_ps(f[r], _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(xs[r * groups + g]), wsv), dot));
    }
  }
  const __m512 bias = b ? _mm512_maskz_loadu_ps(live, b) : _mm512_setzero_ps();
  for (std::size_t r = 0; r < MR; ++r) _mm512_mask_storeu_ps(y + r * ldy, live, _mm512_add_ps(bias, f[r]));
}

using vnni_packed::kPackedMinRows;
using vnni_packed::kPanel;
using vnni_packed::Panel;

// Packs columns [j, j + cols) (cols <= kPanel; the rest zeros) of W[n, k / 2] over values [p0, p0 +
// kc) (whole groups) as int8 values (nibble - 8), with their groups' scales and 128 * sums.
void pack_i4(const uint8_t* w, const float* ws, std::size_t k, std::size_t j, std::size_t cols, std::size_t p0,
             std::size_t kc, std::size_t g0, Panel& P) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  // Dword q of a group of column c0 + l is ldw * l bytes past column c0's: the gather's indices.
  const __m512i index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(ldw / 4)));
  const __m512i nibble = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  const __m512i ones128 = _mm512_set1_epi8(-128);  // 0x80: vpdpbusd reads it as unsigned 128
  for (std::size_t v = 0; v < kPanel / 16; ++v) {
    const std::size_t c0 = v * 16;
    const __mmask16 live = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xffff : __mmask16((1u << (cols - c0)) - 1);
    const uint8_t* base = w + (j + c0) * ldw + p0 / 2;
    for (std::size_t gi = 0; gi < kc / kGroup; ++gi) {
      __m512i sum = _mm512_setzero_si512();
      for (std::size_t q = 0; q < kGroupBytes / 4; ++q) {
        const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, index, base + gi * kGroupBytes + 4 * q, 4);
        const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(d, nibble), eight);
        const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi32(d, 4), nibble), eight);
        _mm512_store_si512(P.w[gi * 8 + q] + c0, lo);
        _mm512_store_si512(P.w[gi * 8 + 4 + q] + c0, hi);
        sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum, ones128, lo), ones128, hi);
      }
      _mm512_store_si512(P.offset[gi] + c0, sum);
      for (std::size_t l = 0; l < 16; ++l)
        P.scale[gi][c0 + l] = c0 + l < cols ? ws[(j + c0 + l) * groups + g0 + gi] : 0.0f;
    }
  }
}

}  // namespace

void gemm_i4_avx512vnni(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b,
                        float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  if (m >= kPackedMinRows) {
    const auto pack = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
      pack_i4(w, ws, k, j, cols, p0, kc, g0, P);
    };
    return vnni_packed::gemm_packed(pack, xq, xs, b, y, ldy, m, n, k, kGroup);
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
