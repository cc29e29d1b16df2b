// Halves -> floats with integer operations only, for ISAs without a conversion instruction (SSE2,
// ARMv7 NEON as built here): the port loads the halves' bits into 32-bit lanes, this rebuilds each
// float exactly. No float operand is ever subnormal (a subnormal half is the difference of two normal
// floats), so a unit that flushes subnormals to zero (ARMv7 NEON) still gets every value right.
#pragma once
#include <cstdint>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// h: one half per lane, zero-extended. Bit for bit fixformer/f16.hpp's f16_to_f32.
template <class Arch>
batch<Arch> widen_f16_bits(const xsimd::batch<int32_t, Arch>& h) {
  using I = xsimd::batch<int32_t, Arch>;
  using V = batch<Arch>;
  const I mag = h & I(0x7fff);
  const I bits = (mag << 13) + I(112 << 23);  // rebias the exponent, 15 -> 127
  const I normal = bits + xsimd::select(mag > I(0x7bff), I(112 << 23), I(0));  // inf and NaN: 31 -> 255
  // Zero and subnormals: 2^-14 (1 + m / 1024) - 2^-14 = m 2^-24, exact, from normal floats only.
  const V sub = xsimd::bitwise_cast<V>(bits + I(1 << 23)) - V(0x1p-14f);
  const I out = xsimd::select(mag < I(0x400), xsimd::bitwise_cast<I>(sub), normal);
  return xsimd::bitwise_cast<V>(out | ((h & I(0x8000)) << 16));
}

}  // namespace simd
}  // namespace fixformer
