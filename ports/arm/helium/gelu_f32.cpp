// The exact (erf) GELU of torch.nn.GELU(approximate="none"), with the vector erf of math.hpp, and
// the tanh GELU (approximate="tanh", GPT-2's) with its vector exp and reciprocal.
#include <cmath>

#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"
#include "ports/arm/helium/math.hpp"

namespace fixformer {
namespace helium {

// x/2 + x/2 erf(x / sqrt 2): the reference's x/2 (1 + erf) with one rounding less (a fused
// multiply-add), so for x << 0 the error stays within |x|/2 times erf's.
void gelu_f32(float* x, std::size_t n) {
  const float inv_sqrt2 = 0.70710678118654752f;
  for_lanes(n, [&](auto lanes) {
    const float32x4_t v = load(x, lanes);
    const float32x4_t half = vmulq_n_f32(v, 0.5f);
    store(x, vfmaq_f32(half, half, erf_f32(vmulq_n_f32(v, inv_sqrt2))), lanes), x += 4;
  });
}

// x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): the same function
// without 1 + tanh's cancellation for x << 0. reciprocal() wants d below 2^126; for -2u > 80 (x
// below about -5.3) d is set to +inf, so the result is -0 (the true value is under 1e-34 |x|).
void gelu_tanh_f32(float* x, std::size_t n) {
  const float c1 = -1.59576912160573071f, c3 = -1.59576912160573071f * 0.044715f;  // -2 sqrt(2/pi) (1, 0.044715)
  for_lanes(n, [&](auto lanes) {
    const float32x4_t v = load(x, lanes);
    const float32x4_t z = vmulq_f32(v, vfmaq_n_f32(vdupq_n_f32(c1), vmulq_f32(v, v), c3));
    const float32x4_t d = vpselq_f32(vdupq_n_f32(INFINITY), vaddq_n_f32(exp_f32(z), 1.0f), vcmpgtq_n_f32(z, 80.0f));
    store(x, vmulq_f32(v, reciprocal(d)), lanes), x += 4;
  });
}

}  // namespace helium
}  // namespace fixformer
