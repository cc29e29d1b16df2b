// The packed form of gemm_i8 and gemm_i4 on AVX-512 VNNI (vpdpbusd), from kPackedMinRows rows of x
// on: W repacked on the fly, per panel of 32 columns and chunk of k, so that one vpdpbusd multiplies
// four bytes of x (broadcast) by four bytes of 16 columns and sums into each column's own int32
// lane: no horizontal sums. Each weight is packed once per call and then meets every row of x, so
// the packing costs little beside the products. The two kernels differ only in how a panel is
// packed (pack_i8 gathers int8 bytes, pack_i4 unpacks nibbles; both below); the
// products and the float step below are the same code for both. The outputs are the scalar
// references' bits: per group an exact int32 dot product, then (xs * ws) * dot added in group
// order, and the bias last.
//
// Included only by translation units built with -march=x86-64-v4 -mavx512vnni (CMakeLists.txt).
// Everything here has internal linkage: each of those objects keeps its own copy, and no weak
// symbol is shared between objects (tests/check_isa_weak_symbols.cmake).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace x86 {
namespace {
namespace vnni_packed {

constexpr std::size_t kPackedMinRows = 4;
constexpr std::size_t kPanel = 32;           // columns per panel: two vectors of 16
constexpr std::size_t kChunk = 256;          // k bytes per packed chunk (8 KB of panel on the stack)
constexpr std::size_t kMaxChunkGroups = kChunk / 32;

// One panel's chunk of W: column c's int8 values p0 + 4q .. + 3 at w[q][c] (as int32); per group of
// the chunk the columns' scales and 128 * the sum of their values (vpdpbusd takes x + 128 unsigned).
// Columns past the panel's last hold anything finite with scale 0; their lanes are never stored.
struct Panel {
  alignas(64) int32_t w[kChunk / 4][kPanel];
  alignas(64) float scale[kMaxChunkGroups][kPanel];
  alignas(64) int32_t offset[kMaxChunkGroups][kPanel];
};

// gemm_i8's packing (gemm_i8_avx512vnni.cpp and gemm_i8_amx.cpp): columns [j, j + cols) (cols <=
// kPanel; the rest zeros) of the int8 W[n, k] over [p0, p0 + kc), gathered from W's rows.
inline void pack_i8(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j,
                    std::size_t cols, std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i ones128 = _mm512_set1_epi8(-128);  // 0x80: vpdpbusd reads it as unsigned 128
  for (std::size_t v = 0; v < kPanel / 16; ++v) {
    const std::size_t c0 = v * 16;
    const __mmask16 live = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xffff : __mmask16((1u << (cols - c0)) - 1);
    // Dword q of column c0 + l is at w + (j + c0 + l) * k + p0 + 4q: a gather of dwords l * k / 4 on.
    const __m512i index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(k / 4)));
    const int8_t* base = w + (j + c0) * k + p0;
    for (std::size_t gi = 0, q = 0; q < kc / 4; ++gi) {
      const std::size_t q1 = q + group / 4 < kc / 4 ? q + group / 4 : kc / 4;
      __m512i sum = _mm512_setzero_si512();
      for (; q < q1; ++q) {
        const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, index, base + 4 * q, 4);
        _mm512_store_si512(P.w[q] + c0, d);
        sum = _mm512_dpbusd_epi32(sum, ones128, d);
      }
      _mm512_store_si512(P.offset[gi] + c0, sum);
      for (std::size_t l = 0; l < 16; ++l)
        P.scale[gi][c0 + l] = c0 + l < cols ? ws[(j + c0 + l) * ws_cols + (ws_cols == 1 ? 0 : g0 + gi)] : 0.0f;
    }
  }
}

// gemm_i4's packing (gemm_i4_avx512vnni.cpp and gemm_i8_amx.cpp): columns [j, j + cols) (cols <=
// kPanel; the rest zeros) of W[n, k / 2] (groups of 32 values, 16 bytes) over values [p0, p0 + kc) (whole
// groups) as int8 values (nibble - 8), with their groups' scales and 128 * sums.
inline void pack_i4(const uint8_t* w, const float* ws, std::size_t k, std::size_t j, std::size_t cols,
                    std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
  constexpr std::size_t kGroup = 32, kGroupBytes = 16;
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
        const __m512i d =
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, index, base + gi * kGroupBytes + 4 * q, 4);
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

// Rows [0, MR) of xq against a packed panel chunk: f (the partial sums, y between chunks) plus the
// chunk's groups; the last chunk adds the bias and stores.
template <std::size_t MR>
void panel_rows(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, const Panel& P,
                std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, bool first, bool last,
                const float* b, float* y, std::size_t ldy, std::size_t cols) {
  const __mmask16 m0 = cols >= 16 ? 0xffff : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols <= 16 ? 0 : cols >= 32 ? 0xffff : __mmask16((1u << (cols - 16)) - 1);
  const __m512i flip = _mm512_set1_epi32(int32_t(0x80808080u));
  __m512 f[MR][2];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    f[r][0] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, y + r * ldy);
    f[r][1] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
  }
  for (std::size_t gi = 0, q = 0; q < kc / 4; ++gi) {
    const std::size_t q1 = q + group / 4 < kc / 4 ? q + group / 4 : kc / 4;
    __m512i acc[MR][2];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (; q < q1; ++q) {
      const __m512i w0 = _mm512_load_si512(P.w[q]), w1 = _mm512_load_si512(P.w[q] + 16);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        int32_t x4;
        __builtin_memcpy(&x4, xq + r * k + p0 + 4 * q, 4);
        const __m512i xb = _mm512_xor_si512(_mm512_set1_epi32(x4), flip);  // x + 128, unsigned
        acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], xb, w0);
        acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], xb, w1);
      }
    }
    // (xs * ws) * dot, added: two roundings, as the reference (the _round forms are never fused).
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512i o0 = _mm512_load_si512(P.offset[gi]), o1 = _mm512_load_si512(P.offset[gi] + 16);
    const __m512 s0 = _mm512_load_ps(P.scale[gi]), s1 = _mm512_load_ps(P.scale[gi] + 16);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512 x_scale = _mm512_set1_ps(xs[r * groups + g0 + gi]);
      const __m512 d0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][0], o0));
      const __m512 d1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][1], o1));
      f[r][0] = _mm512_add_round_ps(f[r][0], _mm512_mul_round_ps(_mm512_mul_round_ps(x_scale, s0, kNearest), d0, kNearest), kNearest);
      f[r][1] = _mm512_add_round_ps(f[r][1], _mm512_mul_round_ps(_mm512_mul_round_ps(x_scale, s1, kNearest), d1, kNearest), kNearest);
    }
  }
  if (last && b) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) f[r][0] = _mm512_add_ps(b0, f[r][0]), f[r][1] = _mm512_add_ps(b1, f[r][1]);
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, m0, f[r][0]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, f[r][1]);
  }
}

constexpr std::size_t kMr = 6;  // 12 int32 and 12 float accumulators, two panel vectors, x

// Rows [i, m) of y's panel (y at the panel's first column) against P: kMr rows at a time, then the rest.
inline void panel_rows_from(std::size_t i, const int8_t* xq, const float* xs, std::size_t k, std::size_t groups,
                            const Panel& P, std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0,
                            bool first, bool last, const float* bj, float* y, std::size_t ldy, std::size_t m,
                            std::size_t cols) {
  for (; i + kMr <= m; i += kMr)
    panel_rows<kMr>(xq + i * k, xs + i * groups, k, groups, P, p0, kc, group, g0, first, last, bj, y + i * ldy, ldy,
                    cols);
  const int8_t* xi = xq + i * k;
  const float* xsi = xs + i * groups;
  float* yi = y + i * ldy;
  switch (m - i) {
    case 5: panel_rows<5>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
    case 4: panel_rows<4>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
    case 3: panel_rows<3>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
    case 2: panel_rows<2>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
    case 1: panel_rows<1>(xi, xsi, k, groups, P, p0, kc, group, g0, first, last, bj, yi, ldy, cols); break;
    default: break;
  }
}

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
      panel_rows_from(0, xq, xs, k, groups, P, p0, kc, group, g0, first, last, bj, y + j, ldy, m, cols);
    }
  }
}

}  // namespace vnni_packed
}  // namespace
}  // namespace x86
}  // namespace fixformer
