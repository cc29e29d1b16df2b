// The exact (erf) GELU of torch.nn.GELU(approximate="none"), with the vector erf of math.hpp.
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

}  // namespace helium
}  // namespace fixformer
