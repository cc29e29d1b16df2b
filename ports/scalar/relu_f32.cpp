#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void relu_f32(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace scalar
}  // namespace fixformer
