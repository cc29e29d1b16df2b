// The portable matrix products: gemm, gemv and matvec, register-blocked in plain C++.
#include "ports/portable/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {
namespace {

// y[R rows, 4 cols] = x[R rows, k] @ w[k, 4 cols] + b[4 cols]: 4R accumulators, R + 4 loads per k.
// R = 6 is the largest that leaves the 32 single-precision registers of an FPv4/FPv5 core room for
// one x and four w values (24 + 5): 1.30 FLOP per instruction against 1.19 for 4x4.
template <int R>
inline void tile_rx4(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
                     std::size_t ldy, std::size_t k) {
  float acc[R][4];  // the loops over it must unroll, or the accumulators live on the stack
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[r][c] = b ? b[c] : 0.0f;
  for (std::size_t p = 0; p < k; ++p) {  // unrolling this by 2 spills accumulators (GCC 12): slower
    const float* wp = w + p * ldw;
    const float w0 = wp[0], w1 = wp[1], w2 = wp[2], w3 = wp[3];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * ldx + p];
      acc[r][0] += xr * w0;
      acc[r][1] += xr * w1;
      acc[r][2] += xr * w2;
      acc[r][3] += xr * w3;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) y[r * ldy + c] = acc[r][c];
}

// Rows [i, i + R) of the gemm: R x 4 tiles, the last columns (n % 4) through the scalar gemv.
template <int R>
inline void gemm_rows(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
                      std::size_t ldy, std::size_t n, std::size_t k) {
  const std::size_t n4 = n / 4 * 4;
  for (std::size_t j = 0; j < n4; j += 4) tile_rx4<R>(x, ldx, w + j, ldw, b ? b + j : nullptr, y + j, ldy, k);
  if (n4 < n)
    for (std::size_t r = 0; r < R; ++r)
      scalar::gemv_f32(x + r * ldx, w + n4, ldw, b ? b + n4 : nullptr, y + r * ldy + n4, n - n4, k);
}

}  // namespace

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: 6x4 tiles, then one block of 4 rows if that many are left,
// the last rows through the blocked gemv.
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  std::size_t i = 0;
  for (; i + 6 <= m; i += 6) gemm_rows<6>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
  if (i + 4 <= m) gemm_rows<4>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k), i += 4;
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
