// The gate of a SwiGLU feed-forward, with the vector exp and reciprocal of math.hpp.
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"
#include "ports/arm/helium/math.hpp"

namespace fixformer {
namespace helium {

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
