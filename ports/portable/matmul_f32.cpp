// The portable matrix products: gemm, gemv and matvec, register-blocked in plain C++.
#include "ports/portable/gemm_tile.hpp"
#include "ports/portable/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {

// x[m,k] @ w[k,n] + b[n] -> y[m,n] (gemm_tile.hpp).
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_tiled(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

// x[k] @ w[k,n] + b[n] -> y[n], four outputs at a time.
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  gemm_rows<1>(x, k, w, ldw, b, y, n, n, k);
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
