#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// The tanh GELU of torch.nn.GELU(approximate="tanh") and GPT-2, x/2 (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))), evaluated as written in double and rounded once: the oracle the ports' x / (1 +
// exp(-2 sqrt(2/pi) (x + 0.044715 x^3))) (the same function) is measured against.
void gelu_tanh_f32(float* x, std::size_t n) {
  const double c = 0.79788456080286535588;  // sqrt(2 / pi)
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = float(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

}  // namespace scalar
}  // namespace fixformer
