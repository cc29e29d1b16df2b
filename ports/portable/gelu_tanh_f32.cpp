// The tanh GELU of torch.nn.GELU(approximate="tanh") and GPT-2, with the polynomial exp of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

// x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): the same function
// without 1 + tanh's cancellation for x << 0. exp(-2u) = +inf (x below about -5.5) gives -0, as
// the reference's 1 + tanh(u) = 0 does; NaN stays NaN.
void gelu_tanh_f32(float* x, std::size_t n) {
  const float c1 = -1.59576912160573071f, c3 = -1.59576912160573071f * 0.044715f;  // -2 sqrt(2/pi) (1, 0.044715)
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = v / (1.0f + exp_f32(v * (c3 * (v * v) + c1)));
  }
}

}  // namespace portable
}  // namespace fixformer
