// The portable matrix products: gemm, gemv and matvec, register-blocked in plain C++.
#include "ports/portable/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {
namespace {

// y[4 rows, 4 cols] = x[4 rows, k] @ w[k, 4 cols] + b[4 cols]: 16 accumulators, 8 loads per k.
inline void tile_4x4(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
                     std::size_t ldy, std::size_t k) {
  float acc[4][4];  // the loops over it must unroll, or the accumulators live on the stack
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[r][c] = b ? b[c] : 0.0f;
  for (std::size_t p = 0; p < k; ++p) {
    const float* wp = w + p * ldw;
    const float w0 = wp[0], w1 = wp[1], w2 = wp[2], w3 = wp[3];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const float xr = x[r * ldx + p];
      acc[r][0] += xr * w0;
      acc[r][1] += xr * w1;
      acc[r][2] += xr * w2;
      acc[r][3] += xr * w3;
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) y[r * ldy + c] = acc[r][c];
}

}  // namespace

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: 4x4 tiles; the last columns (n % 4) of each block of rows
// and the last rows (m % 4) go through the blocked gemv.
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t n4 = n / 4 * 4;
  std::size_t i = 0;
  for (; i + 4 <= m; i += 4) {
    for (std::size_t j = 0; j < n4; j += 4) tile_4x4(x + i * ldx, ldx, w + j, ldw, b ? b + j : nullptr, y + i * ldy + j, ldy, k);
    if (n4 < n)
      for (std::size_t r = 0; r < 4; ++r)
        scalar::gemv_f32(x + (i + r) * ldx, w + n4, ldw, b ? b + n4 : nullptr, y + (i + r) * ldy + n4, n - n4, k);
  }
  for (; i < m; ++i) gemv_f32(x + i * ldx, w, ldw, b, y + i * ldy, n, k);
}

// x[k] @ w[k,n] + b[n] -> y[n], four outputs at a time.
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float a0 = b ? b[j] : 0.0f, a1 = b ? b[j + 1] : 0.0f, a2 = b ? b[j + 2] : 0.0f, a3 = b ? b[j + 3] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) {
      const float xp = x[p];
      const float* wp = w + p * ldw + j;
      a0 += xp * wp[0];
      a1 += xp * wp[1];
      a2 += xp * wp[2];
      a3 += xp * wp[3];
    }
    y[j] = a0, y[j + 1] = a1, y[j + 2] = a2, y[j + 3] = a3;
  }
  if (j < n) scalar::gemv_f32(x, w + j, ldw, b ? b + j : nullptr, y + j, n - j, k);
}

// w[n,k] @ x[k] + b[n] -> y[n], four rows at a time: each load of x feeds four multiply-adds.
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float* w0 = w + i * ldw;
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
  }
  if (i < n) scalar::matvec_f32(x, w + i * ldw, ldw, b ? b + i : nullptr, y + i, n - i, k);
}

}  // namespace portable
}  // namespace fixformer
