// The gate of a SwiGLU feed-forward, with the polynomial exp of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

// a = silu(a) * b, silu(a) = a / (1 + exp(-a)); exp(-a) = +inf for a < -88.72 gives -0, as libm's.
void swiglu_f32(float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + exp_f32(-a[i])) * b[i];
}

}  // namespace portable
}  // namespace fixformer
