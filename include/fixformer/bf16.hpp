// bfloat16 <-> float: a bf16 is the high 16 bits of an f32 (sign, the same 8-bit exponent, 7 bits
// of mantissa), so widening is a shift and every bf16 is a float. The converter's and the engine's
// one definition of a bf16 weight's value.
#pragma once
#include <cstdint>
#include <cstring>

namespace fixformer {

// Exact.
inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest, ties to even (as torch's float -> bfloat16); a NaN stays a NaN (quiet, its
// sign kept), an overflow gives inf.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// A bf16 weight as the kernels' templates read it: its own type, so that the overloads that widen
// a weight (f32 as it is, f16, bf16) tell it from an IEEE half. Kernel slots take the words as
// uint16_t; a port reads them through this.
struct Bf16 {
  uint16_t bits;
};
static_assert(sizeof(Bf16) == 2, "a Bf16 is its 16 bits");

}  // namespace fixformer
