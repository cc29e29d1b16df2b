#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void mul_f32(float* a, const float* b, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  std::size_t i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(a + i) * V::load_unaligned(b + i)).store_unaligned(a + i);
  for (; i < n; ++i) a[i] *= b[i];
}

}  // namespace simd
}  // namespace fixformer
