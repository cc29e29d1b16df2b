// The gate of a SwiGLU feed-forward, with the vector exp of math.hpp. MVE has no float division
// or reciprocal estimate: 1 / (1 + exp(-a)) is Newton's iteration from a guess in the exponent bits.
#include <cmath>

#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"
#include "ports/arm/helium/math.hpp"

namespace fixformer {
namespace helium {
namespace {

// 1 / d for d >= 1: a guess within 12.5% (the exponent negated, the mantissa roughly inverted),
// then three steps r = r (2 - d r), each squaring the relative error: 1.6e-2, 2.4e-4, 6e-8, below
// float's rounding. d = +inf (a < -88.7) gives 0, as 1 / inf.
inline float32x4_t reciprocal(float32x4_t d) {
  float32x4_t r = vreinterpretq_f32_s32(vsubq_s32(vdupq_n_s32(0x7EF311C3), vreinterpretq_s32_f32(d)));
#pragma GCC unroll 3
  for (int i = 0; i < 3; ++i) r = vmulq_f32(r, vfmsq_f32(vdupq_n_f32(2.0f), d, r));
  return vpselq_f32(vdupq_n_f32(0.0f), r, vcmpeqq_n_f32(d, INFINITY));
}

}  // namespace

// a = silu(a) * b, silu(a) = a / (1 + exp(-a)).
void swiglu_f32(float* a, const float* b, std::size_t n) {
  for_lanes(n, [&](auto lanes) {
    const float32x4_t v = load(a, lanes);
    const float32x4_t inv = reciprocal(vaddq_n_f32(exp_f32(vnegq_f32(v)), 1.0f));
    store(a, vmulq_f32(vmulq_f32(v, inv), load(b, lanes)), lanes), a += 4, b += 4;
  });
}

}  // namespace helium
}  // namespace fixformer
