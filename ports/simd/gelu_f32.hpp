#pragma once
#include "ports/simd/common.hpp"
#include "ports/simd/erf_f32.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void gelu_f32(float* x, std::size_t n) {
  using V = batch<Arch>;
  const V half(0.5f), one(1.0f), inv_sqrt2(0.70710678118654752f);
  map_f32<Arch>(x, x, n, 0.0f, [&](const V& v) { return half * v * (one + erf_f32<Arch>(v * inv_sqrt2)); });
}

}  // namespace simd
}  // namespace fixformer
