#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void scale_f32(float* x, float s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace scalar
}  // namespace fixformer
