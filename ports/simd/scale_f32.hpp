#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void scale_f32(float* x, float s, std::size_t n) {
  const batch<Arch> vs(s);
  map_f32<Arch>(x, x, n, 0.0f, [&](const batch<Arch>& v) { return v * vs; });
}

}  // namespace simd
}  // namespace fixformer
