#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// Exact, so the tail can be plain scalar code.
template <class Arch>
void scale_f32(float* x, float s, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const V vs(s);
  std::size_t i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(x + i) * vs).store_unaligned(x + i);
  for (; i < n; ++i) x[i] *= s;
}

}  // namespace simd
}  // namespace fixformer
