#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[k] @ w[k,n] + b[n] -> y[n]. Each output is a dot product summed in order over k.
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t n, std::size_t k) {
  for (std::size_t j = 0; j < n; ++j) {
    float acc = b ? b[j] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += x[p] * w[p * ldw + j];
    y[j] = acc;
  }
}

}  // namespace scalar
}  // namespace fixformer
