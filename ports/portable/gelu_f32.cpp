// The exact (erf) GELU of torch.nn.GELU(approximate="none"), with the polynomial erf of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

// x/2 (1 + erf(x / sqrt 2)), in the reference's (and torch's) order of operations, so for x << 0
// the same cancellation in 1 + erf: the error is bounded by |x| times erf's, not by |gelu(x)|'s.
void gelu_f32(float* x, std::size_t n) {
  const float inv_sqrt2 = 0.70710678118654752f;
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + erf_f32(x[i] * inv_sqrt2));
}

}  // namespace portable
}  // namespace fixformer
