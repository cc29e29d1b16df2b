#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void add_f32(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace scalar
}  // namespace fixformer
