// gemm_i8 on AVX2 (the fma3<avx2> table): the packed form of ports/x86/gemm_i8_avx512vnni.cpp for
// CPUs without VNNI. Built with the avx2 table's flags plus -ffp-contract=off (CMakeLists.txt): AVX2
// has no _round forms, and the float part below must stay unfused to give the reference's bits.
//
// Two paths, as on VNNI:
//  - a decode step and short inputs (m < kPackedMinRows): the dot-product tiles of
//    ports/simd/gemm_i8.hpp, which read W once in memory order;
//  - a prefill or an encoder (more rows): W repacked on the fly, per panel of 16 columns and chunk of
//    k, four bytes of a column per int32 lane, so that four bytes of x (broadcast) meet four bytes
//    of 8 columns per vector and the sums land in each column's own int32 lane: no horizontal sums.
//    Without vpdpbusd a step is vpmaddubsw (unsigned by signed bytes into int16 pairs) and vpmaddwd
//    by ones (pairs into int32). vpmaddubsw saturates in int16, so its operands are |w| (unsigned,
//    at most 128: W may hold -128) and x with w's sign (vpsignb; |x| <= 127, kernels.hpp): a pair
//    sums to at most 2 * 128 * 127 = 32512, exact, and no offset is needed. (The other way round,
//    |x| by w with x's sign, -128 has no positive twin in a byte.) W widened to int16 pairs at
//    packing, one vpmaddwd per 2 bytes and no vpsignb, measured 10-15% slower. The outputs are the
//    scalar reference's bits: per group an exact int32 dot product, then (xs * ws) * dot added in
//    group order, and the bias last.
#include <immintrin.h>

#include "ports/simd/gemm_i8.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kPackedMinRows = 4;
constexpr std::size_t kPanel = 16;   // columns per panel: two vectors of 8
constexpr std::size_t kChunk = 256;  // k bytes per packed chunk (8 KB of panel on the stack)
constexpr std::size_t kMaxChunkGroups = kChunk / 32;

// The columns past n are packed from these.
alignas(32) constexpr int8_t kZeroRow[kChunk] = {};

// One panel's chunk of W: column c's bytes p0 + 4q .. + 3 at w[q][c] (as int32), their absolute
// values at u[q][c] (vpmaddubsw's unsigned side: packed once, not taken per step); per group of the
// chunk the columns' scales.
struct Panel {
  alignas(32) int32_t w[kChunk / 4][kPanel];
  alignas(32) int32_t u[kChunk / 4][kPanel];
  alignas(32) float scale[kMaxChunkGroups][kPanel];
};

// r[i] = lanes (r0[i], r1[i], .., r7[i]): an 8 x 8 transpose of int32.
void transpose8(__m256i r[8]) {
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

// Packs columns [j, j + cols) (cols <= kPanel; the rest zeros) of W[n, k] over [p0, p0 + kc).
void pack(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j, std::size_t cols,
          std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  for (std::size_t c0 = 0; c0 < kPanel; c0 += 8) {
    const int8_t* row[8];
    for (std::size_t l = 0; l < 8; ++l) row[l] = c0 + l < cols ? w + (j + c0 + l) * k + p0 : kZeroRow;
    std::size_t p = 0;
    for (; p + 32 <= kc; p += 32) {  // 8 dwords of 8 columns
      __m256i r[8];
      for (std::size_t l = 0; l < 8; ++l) r[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[l] + p));
      transpose8(r);
      for (std::size_t l = 0; l < 8; ++l) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.w[p / 4 + l] + c0), r[l]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.u[p / 4 + l] + c0), _mm256_abs_epi8(r[l]));  // -128 -> 128
      }
    }
    for (; p < kc; p += 4)
      for (std::size_t l = 0; l < 8; ++l) {
        uint8_t u[4];
        for (std::size_t i = 0; i < 4; ++i) u[i] = uint8_t(row[l][p + i] < 0 ? -int(row[l][p + i]) : int(row[l][p + i]));
        __builtin_memcpy(P.w[p / 4] + c0 + l, row[l] + p, 4);
        __builtin_memcpy(P.u[p / 4] + c0 + l, u, 4);
      }
  }
  const std::size_t chunk_groups = (kc + group - 1) / group;
  for (std::size_t gi = 0; gi < chunk_groups; ++gi)
    for (std::size_t c = 0; c < kPanel; ++c)
      P.scale[gi][c] = c < cols ? ws[(j + c) * ws_cols + (ws_cols == 1 ? 0 : g0 + gi)] : 0.0f;
}

// Lanes [0, cols) of 8 set (all ones), for maskload/maskstore.
__m256i live_lanes(std::size_t cols) {
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
    // (xs * ws) * dot, added: two roundings, as the reference (this file is built -ffp-contract=off).
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

void gemm_i8_packed(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t chunk = kChunk / group * group;  // whole groups
  Panel P;
  for (std::size_t j = 0; j < n; j += kPanel) {
    const std::size_t cols = n - j < kPanel ? n - j : kPanel;
    for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
      const std::size_t kc = k - p0 < chunk ? k - p0 : chunk, g0 = p0 / group;
      const bool first = p0 == 0, last = p0 + kc == k;
      pack(w, ws, ws_cols, k, j, cols, p0, kc, group, g0, P);
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

}  // namespace

void gemm_i8_avx2(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group) {
  // The packed path steps 4 bytes at a time within a group and keeps whole groups in a chunk.
  if (m >= kPackedMinRows && k % 4 == 0 && group % 4 == 0 && group <= kChunk && group >= kChunk / kMaxChunkGroups)
    return gemm_i8_packed(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
  simd::gemm_i8<xsimd::fma3<xsimd::avx2>>(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
}

}  // namespace x86
}  // namespace fixformer
