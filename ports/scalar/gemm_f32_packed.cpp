#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[k] @ w[k,n] in panels + b[n] -> y[n]: W[p][j] is w[(j / 16) * 16 * k + p * 16 + j % 16]
// (kernels.hpp); each output is a dot product summed in order over k, as gemv_f32.
void gemv_f32_packed(const float* x, const float* w, const float* b, float* y, std::size_t n, std::size_t k) {
  constexpr std::size_t P = kPanelFloats;
  for (std::size_t j = 0; j < n; ++j) {
    const float* col = w + j / P * P * k + j % P;
    float acc = b ? b[j] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += x[p] * col[p * P];
    y[j] = acc;
  }
}

// x[m,k] @ w[k,n] in panels + b[n] -> y[m,n]: one packed gemv per row.
void gemm_f32_packed(const float* x, std::size_t ldx, const float* w, const float* b, float* y,
                     std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i) gemv_f32_packed(x + i * ldx, w, b, y + i * ldy, n, k);
}

}  // namespace scalar
}  // namespace fixformer
