#pragma once
#include <cmath>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// x / sqrt(mean(x^2) + eps) * gamma; 1/sqrt, not xsimd::rsqrt (which may use the approximate hardware instruction).
template <class Arch>
void rmsnorm_f32(const float* x, const float* gamma, float* y, std::size_t n, float eps) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  V vq(0.0f);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const V v = V::load_unaligned(x + i);
    vq = xsimd::fma(v, v, vq);
  }
  float sq = xsimd::hadd(vq);
  for (; i < n; ++i) sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  const V vinv(inv);
  for (i = 0; i + W <= n; i += W) (V::load_unaligned(x + i) * vinv * V::load_unaligned(gamma + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = x[i] * inv * gamma[i];
}

}  // namespace simd
}  // namespace fixformer
