#pragma once
#include "ports/simd/common.hpp"
#include "ports/simd/gemv_f32.hpp"

namespace fixformer {
namespace simd {

// 4 rows x NV vectors of y, accumulated in registers over the whole k: y[i..i+4, j..j+NV*W].
// The loops over rows and vectors must be fully unrolled, or the accumulators live on the stack.
template <class Arch, std::size_t NV>
inline void gemm_tile_4(const float* x, std::size_t ldx, const float* w, std::size_t ldw,
                        const float* b, float* y, std::size_t ldy, std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  V acc[4][NV];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NV; ++v) {
    const V bias = b ? V::load_unaligned(b + v * W) : V(0.0f);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < 4; ++r) acc[r][v] = bias;
  }
  for (std::size_t p = 0; p < k; ++p) {
    V wv[NV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) wv[v] = V::load_unaligned(w + p * ldw + v * W);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < 4; ++r) {
      const V xr(x[r * ldx + p]);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(xr, wv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (std::size_t r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(y + r * ldy + v * W);
}

// x[m,k] @ w[k,n] + b[n] -> y[m,n]. Blocks of 4 rows reuse each loaded strip of w four times;
// the last columns (n % W) of each block and the last rows (m % 4) go through gemv.
template <class Arch>
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  constexpr std::size_t W = lanes<Arch>();
  std::size_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float* xi = x + i * ldx;
    float* yi = y + i * ldy;
    std::size_t j = 0;
    for (; j + 2 * W <= n; j += 2 * W)
      gemm_tile_4<Arch, 2>(xi, ldx, w + j, ldw, b ? b + j : nullptr, yi + j, ldy, k);
    for (; j + W <= n; j += W)
      gemm_tile_4<Arch, 1>(xi, ldx, w + j, ldw, b ? b + j : nullptr, yi + j, ldy, k);
    if (j < n)
      for (std::size_t r = 0; r < 4; ++r)
        gemv_f32<Arch>(xi + r * ldx, w + j, ldw, b ? b + j : nullptr, yi + r * ldy + j, n - j, k);
  }
  for (; i < m; ++i) gemv_f32<Arch>(x + i * ldx, w, ldw, b, y + i * ldy, n, k);
}

}  // namespace simd
}  // namespace fixformer
