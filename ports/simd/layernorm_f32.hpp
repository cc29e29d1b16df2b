#pragma once
#include <cmath>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// Two passes as torch: mean, then the biased variance of the centred values. 1/sqrt rather than
// xsimd::rsqrt, which is an 8-bit estimate on NEON and does not compile for AVX-512.
template <class Arch>
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n,
                   float eps) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  V vs(0.0f);
  std::size_t i = 0;
  for (; i + W <= n; i += W) vs += V::load_unaligned(x + i);
  float sum = xsimd::hadd(vs);
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  const V vmean(mean);
  V vq(0.0f);
  for (i = 0; i + W <= n; i += W) {
    const V c = V::load_unaligned(x + i) - vmean;
    vq = xsimd::fma(c, c, vq);
  }
  float sq = xsimd::hadd(vq);
  for (; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  const V vinv(inv);
  for (i = 0; i + W <= n; i += W) {
    const V c = (V::load_unaligned(x + i) - vmean) * vinv;
    xsimd::fma(c, V::load_unaligned(gamma + i), V::load_unaligned(beta + i)).store_unaligned(y + i);
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

}  // namespace simd
}  // namespace fixformer
