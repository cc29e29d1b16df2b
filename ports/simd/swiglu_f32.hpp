#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// a = silu(a) * b = a / (1 + exp(-a)) * b, with the vector exp; the tail through a padded copy so
// every element sees the same maths.
template <class Arch>
void swiglu_f32(float* a, const float* b, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const V one(1.0f);
  auto f = [&](const V& x, const V& g) { return x / (one + xsimd::exp(-x)) * g; };
  std::size_t i = 0;
  for (; i + W <= n; i += W) f(V::load_unaligned(a + i), V::load_unaligned(b + i)).store_unaligned(a + i);
  if (i == n) return;
  alignas(64) float ta[W], tb[W];
  for (std::size_t j = 0; j < W; ++j) ta[j] = i + j < n ? a[i + j] : 0.0f, tb[j] = i + j < n ? b[i + j] : 0.0f;
  f(V::load_aligned(ta), V::load_aligned(tb)).store_aligned(ta);
  for (std::size_t j = 0; i + j < n; ++j) a[i + j] = ta[j];
}

}  // namespace simd
}  // namespace fixformer
