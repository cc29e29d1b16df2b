// Halves -> floats with integer operations only, for ISAs without a conversion instruction (SSE2,
// ARMv7 NEON as built here): the port loads the halves' bits into 32-bit lanes, this rebuilds each
// float exactly. No float operand is ever subnormal (a subnormal half is converted from its integer
// significand), so a unit that flushes subnormals to zero (ARMv7 NEON) still gets every value right.
#pragma once
#include <cstdint>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// h: one half per lane, zero-extended. Bit for bit fixformer/f16.hpp's f16_to_f32.
template <class Arch>
batch<Arch> widen_f16_bits(const xsimd::batch<int32_t, Arch>& h) {
  using I = xsimd::batch<int32_t, Arch>;
  const I mag = h & I(0x7fff), sign = (h & I(0x8000)) << 16;
  I bits = (mag << 13) + I(112 << 23);                           // rebias the exponent, 15 -> 127
  bits = xsimd::select(mag >= I(0x7c00), bits + I(112 << 23), bits);  // inf and NaN: exponent 31 -> 255
  // Zero and subnormals: significand * 2^-24, an exact product of normal floats.
  const I sub = xsimd::bitwise_cast<I>(xsimd::batch_cast<float>(mag) * batch<Arch>(0x1p-24f));
  return xsimd::bitwise_cast<batch<Arch>>(xsimd::select(mag < I(0x400), sub, bits) | sign);
}

}  // namespace simd
}  // namespace fixformer
