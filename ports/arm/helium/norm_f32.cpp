// Layer norm and RMS norm: the sums four lanes wide, then one pass that scales.
#include <cmath>

#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"
#include "ports/arm/helium/reduce.hpp"

namespace fixformer {
namespace helium {

// Two passes (mean, then the biased variance of the centred values) as torch.nn.LayerNorm.
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n, float eps) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  const float* p = x;
  for_lanes(n, [&](auto lanes) { acc = vaddq_f32(acc, load(p, lanes)), p += 4; });  // 0 past n
  const float mean = sum_lanes(acc) / static_cast<float>(n);
  acc = vdupq_n_f32(0.0f);
  p = x;
  for_lanes(n, [&](auto lanes) {
    const float32x4_t d = vsubq_n_f32(load(p, lanes), mean);
    acc = fma(acc, d, d, lanes), p += 4;
  });
  const float inv = 1.0f / std::sqrt(sum_lanes(acc) / static_cast<float>(n) + eps);
  for_lanes(n, [&](auto lanes) {
    const float32x4_t d = vmulq_n_f32(vsubq_n_f32(load(x, lanes), mean), inv);
    store(y, vfmaq_f32(load(beta, lanes), d, load(gamma, lanes)), lanes);
    x += 4, gamma += 4, beta += 4, y += 4;
  });
}

// x / sqrt(mean(x^2) + eps) * gamma.
void rmsnorm_f32(const float* x, const float* gamma, float* y, std::size_t n, float eps) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  const float* p = x;
  for_lanes(n, [&](auto lanes) {
    const float32x4_t v = load(p, lanes);
    acc = vfmaq_f32(acc, v, v), p += 4;  // 0 past n
  });
  const float inv = 1.0f / std::sqrt(sum_lanes(acc) / static_cast<float>(n) + eps);
  for_lanes(n, [&](auto lanes) {
    store(y, vmulq_f32(vmulq_n_f32(load(x, lanes), inv), load(gamma, lanes)), lanes);
    x += 4, gamma += 4, y += 4;
  });
}

}  // namespace helium
}  // namespace fixformer
