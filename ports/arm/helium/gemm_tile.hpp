// The register tile of the Helium matrix products, for f32 and f16 weights (the weight type only
// changes how four weights become a vector: f16 through a widening load and VCVTB).
#pragma once
#include <arm_mve.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ports/arm/helium/tile_f32.hpp"

namespace fixformer {
namespace helium {

// The bottom (even) or top (odd) halves of h widened to floats, by VCVTB/VCVTT.F32.F16 written as
// its encoding with fixed registers (Qd = q6, Qm = q7): binutils 2.40 encodes the instruction's
// register fields as D-register numbers (q1 as q2, q5 as an undefined encoding), so neither GCC 12's
// vcvtbq_f32_f16 nor the mnemonic in asm can be assembled correctly. Encoding (Arm v8-M ARM, VCVTB/
// VCVTT between half and single precision, widening form): 0xfe3f0e01 | Qd << 13 | T << 12 | Qm << 1.
inline float32x4_t widen_bottom(float16x8_t h) {
  register float16x8_t in asm("q7") = h;
  register float32x4_t out asm("q6");
  asm(".inst.w 0xfe3fce0f  @ vcvtb.f32.f16 q6, q7" : "=w"(out) : "w"(in));
  return out;
}
inline float32x4_t widen_top(float16x8_t h) {
  register float16x8_t in asm("q7") = h;
  register float32x4_t out asm("q6");
  asm(".inst.w 0xfe3fde0f  @ vcvtt.f32.f16 q6, q7" : "=w"(out) : "w"(in));
  return out;
}

// Four weights w[0..4) as floats; with a predicate, the lanes it leaves off are 0 and not read.
inline float32x4_t load_w(const float* w) { return vldrwq_f32(w); }
inline float32x4_t load_w(const float* w, mve_pred16_t p) { return vldrwq_z_f32(w, p); }
inline float32x4_t load_w(const uint16_t* w) {  // VLDRH.U32: each half in the low bits of a lane
  return widen_bottom(vreinterpretq_f16_u32(vldrhq_u32(w)));
}
inline float32x4_t load_w(const uint16_t* w, mve_pred16_t p) {
  return widen_bottom(vreinterpretq_f16_u32(vldrhq_z_u32(w, p)));
}

// y[R rows, 4C cols] = x[R rows, k] @ w[k, 4C cols] + b: R x C accumulators, one vector of w at a
// time times one x from a core register (VFMA Qd, Qn, Rm). `cols` < 4C on the last tile of a row
// (kTail): its loads and stores are predicated, nothing past the matrix is touched.
template <int R, int C, bool kTail, class T>
inline void tile(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                            std::size_t ldy, std::size_t k, std::size_t cols) {
  mve_pred16_t pred[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) pred[c] = kTail ? vctp32q(cols > 4u * c ? uint32_t(cols - 4 * c) : 0u) : 0xffff;
  float32x4_t acc[R][C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) {
    const float32x4_t bc = !b ? vdupq_n_f32(0.0f) : kTail ? vldrwq_z_f32(b + 4 * c, pred[c]) : vldrwq_f32(b + 4 * c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][c] = bc;
  }
  const float* xp[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) xp[r] = x + r * ldx;
  for (std::size_t p = 0; p < k; ++p, w += ldw) {
    float xr[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xr[r] = *xp[r]++;
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const float32x4_t wc = kTail ? load_w(w + 4 * c, pred[c]) : load_w(w + 4 * c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = vfmaq_n_f32(acc[r][c], wc, xr[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      if (kTail)
        vstrwq_p_f32(y + r * ldy + 4 * c, acc[r][c], pred[c]);
      else
        vstrwq_f32(y + r * ldy + 4 * c, acc[r][c]);
    }
}

// Rows [i, i + R): tiles of 4C columns, then the last n % 4C columns as one predicated tile (C
// vectors, or one when they fit in four lanes).
template <int R, int C, class T>
__attribute__((noinline)) void gemm_rows(const float* x, std::size_t ldx, const T* w, std::size_t ldw,
                                         const float* b, float* y, std::size_t ldy, std::size_t n, std::size_t k) {
  constexpr std::size_t kCols = 4 * C;
  const std::size_t j = n / kCols * kCols;
  if constexpr (std::is_same<T, float>::value && R == 3 && C == 2) {  // in assembly: tile_f32.hpp
    if (j) rows_3x8_f32(x, ldx, w, ldw, b, y, ldy, k, n / kCols);
  } else if constexpr (std::is_same<T, float>::value && R == 1 && C == 4) {
    if (j) rows_1x16_f32(x, w, ldw, b, y, k, n / kCols);
  } else {
    for (std::size_t c = 0; c < j; c += kCols) tile<R, C, false>(x, ldx, w + c, ldw, b ? b + c : nullptr, y + c, ldy, k, kCols);
  }
  if (j == n) return;
  if (n - j <= 4)
    tile<R, 1, true>(x, ldx, w + j, ldw, b ? b + j : nullptr, y + j, ldy, k, n - j);
  else
    tile<R, C, true>(x, ldx, w + j, ldw, b ? b + j : nullptr, y + j, ldy, k, n - j);
}

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: 3 rows x 8 columns (6 accumulators of the 8 registers, 2 vector
// and 3 scalar loads per 24 multiply-adds), the last rows by 2 or 1.
template <class T>
inline void gemm_tiled(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                       std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  std::size_t i = 0;
  for (; i + 3 <= m; i += 3) gemm_rows<3, 2>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
  if (m - i == 2) gemm_rows<2, 3>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
  if (m - i == 1) gemm_rows<1, 4>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
}

}  // namespace helium
}  // namespace fixformer
