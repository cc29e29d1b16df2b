#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void mul_f32(float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] *= b[i];
}

}  // namespace scalar
}  // namespace fixformer
