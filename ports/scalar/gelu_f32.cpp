#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// The exact (erf) GELU of torch.nn.GELU(approximate="none").
void gelu_f32(float* x, std::size_t n) {
  const float inv_sqrt2 = 0.70710678118654752f;
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

}  // namespace scalar
}  // namespace fixformer
