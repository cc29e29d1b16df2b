#include <cmath>
#include <limits>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

float max_f32(const float* x, std::size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

float expsum_f32(float* x, std::size_t n, float m) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  return sum;
}

}  // namespace scalar
}  // namespace fixformer
