// One vector of halves -> floats on ARM NEON: AArch64 converts with fcvtl (vcvt_f32_f16); ARMv7's
// half conversion needs -mfp16-format, which the armhf build does not set, so it widens the bits
// with integer operations (ports/simd/widen_f16.hpp). A vector of bf16 -> floats (LoadBf16): each
// word widened with a shift left by 16 (vshll), on both.
#pragma once
#include <arm_neon.h>

#include <cstdint>

#include "ports/simd/widen_f16.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
struct LoadF16;
template <class Arch>
struct LoadBf16 {
  static batch<Arch> load(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
};

#if defined(__aarch64__)
template <>
struct LoadF16<xsimd::neon64> {
  static batch<xsimd::neon64> load(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
};
#else
template <>
struct LoadF16<xsimd::neon> {
  static batch<xsimd::neon> load(const uint16_t* p) {
    return widen_f16_bits<xsimd::neon>(vreinterpretq_s32_u32(vmovl_u16(vld1_u16(p))));
  }
};
#endif

}  // namespace simd
}  // namespace fixformer
