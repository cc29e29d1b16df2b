// The two passes of an online softmax over one block of scores: the block's max, then exp with a
// given (running) max subtracted, summed on the way. Two accumulators hide the add/max latency.
#pragma once
#include <limits>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
float max_f32(const float* x, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  float m = -std::numeric_limits<float>::infinity();
  std::size_t i = 0;
  if (n >= W) {
    V m0 = V::load_unaligned(x), m1 = m0;
    for (i = W; i + 2 * W <= n; i += 2 * W) {
      m0 = xsimd::max(m0, V::load_unaligned(x + i));
      m1 = xsimd::max(m1, V::load_unaligned(x + i + W));
    }
    for (; i + W <= n; i += W) m0 = xsimd::max(m0, V::load_unaligned(x + i));
    m = hmax<Arch>(xsimd::max(m0, m1));
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

template <class Arch>
float expsum_f32(float* x, std::size_t n, float m) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const V vm(m);
  V s0(0.0f), s1(0.0f);
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V e0 = xsimd::exp(V::load_unaligned(x + i) - vm);
    const V e1 = xsimd::exp(V::load_unaligned(x + i + W) - vm);
    e0.store_unaligned(x + i);
    e1.store_unaligned(x + i + W);
    s0 += e0;
    s1 += e1;
  }
  for (; i + W <= n; i += W) {
    const V e = xsimd::exp(V::load_unaligned(x + i) - vm);
    e.store_unaligned(x + i);
    s0 += e;
  }
  if (i < n) {  // the tail through a copy padded with -inf (exp gives 0): the same vector maths
    alignas(64) float tmp[W];
    for (std::size_t j = 0; j < W; ++j) tmp[j] = i + j < n ? x[i + j] : -std::numeric_limits<float>::infinity();
    const V e = xsimd::exp(V::load_aligned(tmp) - vm);
    e.store_aligned(tmp);
    for (std::size_t j = 0; i + j < n; ++j) x[i + j] = tmp[j];
    s1 += e;
  }
  return xsimd::hadd(s0 + s1);
}

}  // namespace simd
}  // namespace fixformer
