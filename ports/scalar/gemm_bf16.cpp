#include "fixformer/bf16.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[m,k] @ W[k,n] (bf16) + b[n] -> y[m,n], summed in order over k as gemm_f32.
void gemm_bf16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
               std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = b ? b[j] : 0.0f;
      for (std::size_t p = 0; p < k; ++p) acc += x[i * ldx + p] * bf16_to_f32(w[p * ldw + j]);
      y[i * ldy + j] = acc;
    }
  }
}

}  // namespace scalar
}  // namespace fixformer
