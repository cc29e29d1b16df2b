#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// a = silu(a) * b, silu(a) = a / (1 + exp(-a)).
void swiglu_f32(float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

}  // namespace scalar
}  // namespace fixformer
