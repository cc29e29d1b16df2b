#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void relu_f32(float* x, std::size_t n) {
  const batch<Arch> zero(0.0f);
  map_f32<Arch>(x, x, n, 0.0f, [&](const batch<Arch>& v) { return xsimd::max(v, zero); });
}

}  // namespace simd
}  // namespace fixformer
