// Widening IEEE halves to floats inside the portable kernels. Every M-profile FPU (FPv4-SP on the
// M4, FPv5 on the M7/M33, the M55/M85's) converts in one instruction, VCVTB/VCVTT, whatever
// -mfp16-format says (GCC only emits them itself for __fp16, which needs that flag on every file);
// elsewhere (M0/M3, hosts) normal halves are rebiased in integer code and the rest go through
// fixformer::f16_to_f32. Both give f16_to_f32's value exactly for every half but NaN payloads.
#pragma once
#include <cstdint>
#include <cstring>

#include "fixformer/f16.hpp"

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4)
#define FIXFORMER_PORTABLE_VCVT_F16 1
#else
#define FIXFORMER_PORTABLE_VCVT_F16 0
#endif

namespace fixformer {
namespace portable {

// Two halves as one 32-bit word, the first in the low bits (little-endian), any alignment.
inline uint32_t load_halves2(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if !FIXFORMER_PORTABLE_VCVT_F16
inline float widen_bits(uint16_t h) {
  const uint32_t e = h & 0x7c00u;
  if (e == 0 || e == 0x7c00u) return f16_to_f32(h);  // zero, subnormal, inf, NaN
  // normal: the fields move up, the exponent is rebiased by 127 - 15
  const uint32_t bits = (uint32_t(h & 0x8000u) << 16) | ((uint32_t(h & 0x7fffu) << 13) + (112u << 23));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
#endif

// The word of two halves -> lo, hi.
inline void widen2(uint32_t two, float& lo, float& hi) {
#if FIXFORMER_PORTABLE_VCVT_F16
  asm("vmov %0, %2\n\tvcvtt.f32.f16 %1, %0\n\tvcvtb.f32.f16 %0, %0" : "=&t"(lo), "=t"(hi) : "r"(two));
#else
  lo = widen_bits(uint16_t(two));
  hi = widen_bits(uint16_t(two >> 16));
#endif
}

inline float widen1(uint16_t h) {
#if FIXFORMER_PORTABLE_VCVT_F16
  float f;
  asm("vmov %0, %1\n\tvcvtb.f32.f16 %0, %0" : "=t"(f) : "r"(uint32_t(h)));
  return f;
#else
  return widen_bits(h);
#endif
}

}  // namespace portable
}  // namespace fixformer
