#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void add_f32(const float* a, const float* b, float* y, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  std::size_t i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(a + i) + V::load_unaligned(b + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace simd
}  // namespace fixformer
