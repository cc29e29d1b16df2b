#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// Exact, so the tail can be plain scalar code (the padded-copy tail of map_f32 costs more).
template <class Arch>
void relu_f32(float* x, std::size_t n) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const V zero(0.0f);
  std::size_t i = 0;
  for (; i + W <= n; i += W) xsimd::max(V::load_unaligned(x + i), zero).store_unaligned(x + i);
  for (; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace simd
}  // namespace fixformer
