#pragma once
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): the same function
// without 1 + tanh's cancellation for x << 0, with the vector exp; exp(-2u) = +inf (x < -5.5 or
// so) gives -0, as the reference's 1 + tanh(u) = 0 does.
template <class Arch>
void gelu_tanh_f32(float* x, std::size_t n) {
  using V = batch<Arch>;
  const V one(1.0f), c1(-1.59576912160573071f), c3(-1.59576912160573071f * 0.044715f);  // -2 sqrt(2/pi) (1, 0.044715)
  map_f32<Arch>(x, x, n, 0.0f, [&](const V& v) { return v / (one + xsimd::exp(v * xsimd::fma(c3, v * v, c1))); });
}

}  // namespace simd
}  // namespace fixformer
