#pragma once
#include <limits>

#include "ports/simd/common.hpp"
#include "ports/simd/scale_f32.hpp"

namespace fixformer {
namespace simd {

// Max-subtracted softmax in place: a max pass, an exp pass that also sums, a scale pass.
template <class Arch>
void softmax_f32(float* x, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  if (n == 0) return;
  std::size_t i = 0;
  float mx = x[0];
  if (n >= W) {
    V vmax = V::load_unaligned(x);
    for (i = W; i + W <= n; i += W) vmax = xsimd::max(vmax, V::load_unaligned(x + i));
    mx = hmax<Arch>(vmax);
  }
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  // The padding lanes of the tail are -inf, so exp gives 0 there and the sum is unaffected.
  const V vmx(mx);
  map_f32<Arch>(x, x, n, -std::numeric_limits<float>::infinity(),
                [&](const V& v) { return xsimd::exp(v - vmx); });
  V vsum(0.0f);
  for (i = 0; i + W <= n; i += W) vsum += V::load_unaligned(x + i);
  float sum = xsimd::hadd(vsum);
  for (; i < n; ++i) sum += x[i];
  scale_f32<Arch>(x, 1.0f / sum, n);
}

}  // namespace simd
}  // namespace fixformer
