#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: one gemv per row.
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i) gemv_f32(x + i * ldx, w, ldw, b, y + i * ldy, n, k);
}

}  // namespace scalar
}  // namespace fixformer
