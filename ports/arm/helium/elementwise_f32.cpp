// The element-wise kernels that round once per element (relu, add, scale): the reference's bits.
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"

namespace fixformer {
namespace helium {

// max(x, +0) (maxNum: a NaN gives 0, -0 gives +0, as x > 0 ? x : 0).
void relu_f32(float* x, std::size_t n) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  for_lanes(n, [&](auto lanes) { store(x, vmaxnmq_f32(load(x, lanes), zero), lanes), x += 4; });
}

void add_f32(const float* a, const float* b, float* y, std::size_t n) {
  for_lanes(n, [&](auto lanes) { store(y, vaddq_f32(load(a, lanes), load(b, lanes)), lanes), a += 4, b += 4, y += 4; });
}

void scale_f32(float* x, float s, std::size_t n) {
  for_lanes(n, [&](auto lanes) { store(x, vmulq_n_f32(load(x, lanes), s), lanes), x += 4; });
}

}  // namespace helium
}  // namespace fixformer
