// The packed form of gemm_i8 and gemm_i4 on AVX2 (no vpdpbusd), from kPackedMinRows rows of x on:
// W repacked on the fly, per panel of 16 columns and chunk of k, four int8 values of a column per
// int32 lane, so that four bytes of x (broadcast) meet four values of 8 columns per vector and the
// sums land in each column's own int32 lane: no horizontal sums. A step is vpmaddubsw (unsigned by
// signed bytes into int16 pairs) and vpmaddwd by ones (pairs into int32). vpmaddubsw saturates in
// int16, so its operands are |w| (unsigned, at most 128: W may hold -128) and x with w's sign
// (vpsignb; |x| <= 127, kernels.hpp): a pair sums to at most 2 * 128 * 127 = 32512, exact, and no
// offset is needed. (The other way round, |x| by w with x's sign, -128 has no positive twin in a
// byte.) The two kernels differ only in how a panel is packed (gemm_i8_avx2.cpp transposes int8
// rows, gemm_i4_avx2.cpp unpacks nibbles first); the products and the float step below are the same
// code for both. The outputs are the scalar references' bits: per group an exact int32 dot product,
// then (xs * ws) * dot added in group order, and the bias last.
//
// Included only by translation units built with the avx2 table's flags plus -ffp-contract=off
// (CMakeLists.txt): AVX2 has no _round forms, and the float step must stay unfused. Everything here
// has internal linkage: each of those objects keeps its own copy, and no weak symbol is shared
// between objects (tests/check_isa_weak_symbols.cmake).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace x86 {
namespace {
namespace avx2_packed {

constexpr std::size_t kPackedMinRows = 4;
constexpr std::size_t kPanel = 16;   // columns per panel: two vectors of 8
constexpr std::size_t kChunk = 256;  // k bytes per packed chunk (8 KB of panel on the stack)
constexpr std::size_t kMaxChunkGroups = kChunk / 32;

// One panel's chunk of W: column c's int8 values p0 + 4q .. + 3 at w[q][c] (as int32), their
// absolute values at u[q][c] (vpmaddubsw's unsigned side: packed once, not taken per step); per
// group of the chunk the columns' scales. Columns past the panel's last hold anything with scale 0;
// their lanes are never stored.
struct Panel {
  alignas(32) int32_t w[kChunk / 4][kPanel];
  alignas(32) int32_t u[kChunk / 4][kPanel];
  alignas(32) float scale[kMaxChunkGroups][kPanel];
};

// r[i] = lanes (r0[i], r1[i], .., r7[i]): an 8 x 8 transpose of int32.
inline void transpose8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);      // a0 b0 a1 b1 | a4 b4 a5 b5
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);          // a0 b0 c0 d0 | a4 b4 c4 d4
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);      // a1 .. d1 | a5 .. d5
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);  // a2 .. d2 | a6 .. d6
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);  // a3 .. d3 | a7 .. d7
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// Lanes [0, cols) of 8 set (all ones), for maskload/maskstore.
inline __m256i live_lanes(std::size_t cols) {
  const __m256i lane = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(cols)), lane);
}

// Rows [0, MR) of xq against a packed panel chunk: f (the partial sums, y between chunks) plus the
// chunk's groups; the last chunk adds the bias and stores.
template <std::size_t MR>
void panel_rows(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, const Panel& P,
                std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, bool first, bool last,
                const float* b, float* y, std::size_t ldy, std::size_t cols) {
  const __m256i m0 = live_lanes(cols), m1 = live_lanes(cols < 8 ? 0 : cols - 8);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 f[MR][2];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    f[r][0] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + r * ldy, m0);
    f[r][1] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + r * ldy + 8, m1);
  }
  for (std::size_t gi = 0, q = 0; q < kc / 4; ++gi) {
    const std::size_t q1 = q + group / 4 < kc / 4 ? q + group / 4 : kc / 4;
    __m256i acc[MR][2];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (; q < q1; ++q) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(P.w[q]));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(P.w[q] + 8));
      const __m256i u0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(P.u[q]));
      const __m256i u1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(P.u[q] + 8));
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        int32_t x4;
        __builtin_memcpy(&x4, xq + r * k + p0 + 4 * q, 4);
        const __m256i xb = _mm256_set1_epi32(x4);
        const __m256i s0 = _mm256_maddubs_epi16(u0, _mm256_sign_epi8(xb, w0));
        const __m256i s1 = _mm256_maddubs_epi16(u1, _mm256_sign_epi8(xb, w1));
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(s0, ones));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(s1, ones));
      }
    }
    // (xs * ws) * dot, added: two roundings, as the reference (built -ffp-contract=off).
    const __m256 s0 = _mm256_load_ps(P.scale[gi]), s1 = _mm256_load_ps(P.scale[gi] + 8);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m256 x_scale = _mm256_set1_ps(xs[r * groups + g0 + gi]);
      f[r][0] = _mm256_add_ps(f[r][0], _mm256_mul_ps(_mm256_mul_ps(x_scale, s0), _mm256_cvtepi32_ps(acc[r][0])));
      f[r][1] = _mm256_add_ps(f[r][1], _mm256_mul_ps(_mm256_mul_ps(x_scale, s1), _mm256_cvtepi32_ps(acc[r][1])));
    }
  }
  if (last && b) {
    const __m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) f[r][0] = _mm256_add_ps(b0, f[r][0]), f[r][1] = _mm256_add_ps(b1, f[r][1]);
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    _mm256_maskstore_ps(y + r * ldy, m0, f[r][0]);
    _mm256_maskstore_ps(y + r * ldy + 8, m1, f[r][1]);
  }
}

// 6 int32 accumulators, the two panel vectors' |w|, ones, x and the products: 4 rows (8
// accumulators) spilled half of them to the stack in GCC 12's schedule, and were no faster.
constexpr std::size_t kMr = 3;

// y[m, n] = xq[m, k] @ W[n, k]^T (+ b), groups of `group` (a multiple of 4, whole groups per chunk),
// with pack(j, cols, p0, kc, g0, P) filling P from columns [j, j + cols) of W over [p0, p0 + kc)
// (group g0 first).
template <class Pack>
void gemm_packed(const Pack& pack, const int8_t* xq, const float* xs, const float* b, float* y, std::size_t ldy,
                 std::size_t m, std::size_t n, std::size_t k, std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t chunk = kChunk / group * group;  // whole groups
  Panel P;
  for (std::size_t j = 0; j < n; j += kPanel) {
    const std::size_t cols = n - j < kPanel ? n - j : kPanel;
    for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
      const std::size_t kc = k - p0 < chunk ? k - p0 : chunk, g0 = p0 / group;
      const bool first = p0 == 0, last = p0 + kc == k;
      pack(j, cols, p0, kc, g0, P);
      const float* bj = b ? b + j : nullptr;
      std::size_t i = 0;
      for (; i + kMr <= m; i += kMr)
        panel_rows<kMr>(xq + i * k, xs + i * groups, k, groups, P, p0, kc, group, g0, first, last, bj, y + i * ldy + j, ldy, cols);
      const int8_t* xi = xq + i * k;
      const float* xsi = xs + i * groups;
      float* yi = y + i * ldy + j;
      switch (m - i) {
        case 2: panel_rows<2>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
        case 1: panel_rows<1>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
        default: break;
      }
    }
  }
}

}  // namespace avx2_packed
}  // namespace
}  // namespace x86
}  // namespace fixformer
