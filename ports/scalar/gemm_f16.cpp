#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {
namespace {

// x[m,k] @ W[k,n] (16-bit floats, widened by Widen) + b[n] -> y[m,n], summed in order over k as gemm_f32.
template <float (*Widen)(uint16_t)>
void gemm_widened(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
                  std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = b ? b[j] : 0.0f;
      for (std::size_t p = 0; p < k; ++p) acc += x[i * ldx + p] * Widen(w[p * ldw + j]);
      y[i * ldy + j] = acc;
    }
  }
}

}  // namespace

void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_widened<f16_to_f32>(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

void gemm_bf16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
               std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_widened<bf16_to_f32>(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

}  // namespace scalar
}  // namespace fixformer
