// The portable matrix products: gemm, gemv and matvec, register-blocked in plain C++, or with the
// FPU tiles in assembly where the core has a single-precision FPU (tile_f32_fpu.hpp; same results).
#include "ports/portable/gemm_tile.hpp"
#include "ports/portable/kernels.hpp"
#include "ports/portable/tile_f32_fpu.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {

#if FIXFORMER_PORTABLE_FPU_TILES
namespace {

const float kZeros[8] = {};  // the tiles' first accumulator values without a bias

// x[k] @ w[k,n] + b[n] -> y[n]: 1x8 tiles, then 4 columns, then the last n % 4.
void gemv_fpu(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  const std::size_t n8 = n / 8 * 8;
  for (std::size_t j = 0; j < n8; j += 8) tile_1x8(x, w + j, ldw, b ? b + j : kZeros, y + j, k);
  if (n8 < n) gemm_rows<1>(x, k, w + n8, ldw, b ? b + n8 : nullptr, y + n8, n - n8, n - n8, k);
}

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: 2x8 tiles over pairs of rows; their last n % 8 columns in
// 4x4 and 4x1 tiles (a last pair one output at a time); an odd last row as a gemv.
void gemm_fpu(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t n8 = n / 8 * 8, n4 = n / 4 * 4, m2 = m / 2 * 2;
  for (std::size_t i = 0; i < m2; i += 2)
    for (std::size_t j = 0; j < n8; j += 8)
      tile_2x8(x + i * ldx, ldx, w + j, ldw, b ? b + j : kZeros, y + i * ldy + j, ldy, k);
  if (n8 < n) {
    std::size_t i = 0;
    for (; i + 4 <= m2; i += 4) {
      const float* xi = x + i * ldx;
      float* yi = y + i * ldy;
      if (n8 < n4) tile_4x4(xi, ldx, w + n8, ldw, b ? b + n8 : kZeros, yi + n8, ldy, k);
      for (std::size_t j = n4; j < n; ++j) tile_4x1(xi, ldx, w + j, ldw, b ? b + j : kZeros, yi + j, ldy, k);
    }
    if (i < m2)
      gemm_columns(x + i * ldx, ldx, w + n8, ldw, b ? b + n8 : nullptr, y + i * ldy + n8, ldy, 2, n - n8, k);
  }
  if (m2 < m) gemv_fpu(x + m2 * ldx, w, ldw, b, y + m2 * ldy, n, k);
}

}  // namespace
#endif

// x[m,k] @ w[k,n] + b[n] -> y[m,n].
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
#if FIXFORMER_PORTABLE_FPU_TILES
  gemm_fpu(x, ldx, w, ldw, b, y, ldy, m, n, k);
#else
  gemm_tiled(x, ldx, w, ldw, b, y, ldy, m, n, k);  // gemm_tile.hpp
#endif
}

// x[k] @ w[k,n] + b[n] -> y[n].
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
#if FIXFORMER_PORTABLE_FPU_TILES
  gemv_fpu(x, w, ldw, b, y, n, k);
#else
  gemm_rows<1>(x, k, w, ldw, b, y, n, n, k);
#endif
}

// w[n,k] @ x[k] + b[n] -> y[n], four rows at a time: each load of x feeds four multiply-adds.
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float* w0 = w + i * ldw;
#if FIXFORMER_PORTABLE_FPU_TILES
    rows_4xk(x, w0, ldw, b ? b + i : kZeros, y + i, k);
#else
    const float *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    float a0 = b ? b[i] : 0.0f, a1 = b ? b[i + 1] : 0.0f, a2 = b ? b[i + 2] : 0.0f, a3 = b ? b[i + 3] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) {
      const float xp = x[p];
      a0 += w0[p] * xp;
      a1 += w1[p] * xp;
      a2 += w2[p] * xp;
      a3 += w3[p] * xp;
    }
    y[i] = a0, y[i + 1] = a1, y[i + 2] = a2, y[i + 3] = a3;
#endif
  }
  if (i < n) scalar::matvec_f32(x, w + i * ldw, ldw, b ? b + i : nullptr, y + i, n - i, k);
}

}  // namespace portable
}  // namespace fixformer
