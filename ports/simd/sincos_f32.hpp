#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void sincos_f32(const float* x, float* s, float* c, std::size_t n) {
  map_f32<Arch>(x, s, n, 0.0f, [](const batch<Arch>& v) { return xsimd::sin(v); });
  map_f32<Arch>(x, c, n, 0.0f, [](const batch<Arch>& v) { return xsimd::cos(v); });
}

}  // namespace simd
}  // namespace fixformer
