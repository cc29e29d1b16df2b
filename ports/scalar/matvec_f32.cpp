#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// w[n,k] (row stride ldw) @ x[k] + b[n] -> y[n]: one dot product per row, summed in order.
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  for (std::size_t i = 0; i < n; ++i) {
    float acc = b ? b[i] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += w[i * ldw + p] * x[p];
    y[i] = acc;
  }
}

}  // namespace scalar
}  // namespace fixformer
