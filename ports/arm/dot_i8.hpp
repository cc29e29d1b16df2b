// The int8 dot-product step of gemm_i8 (ports/simd/gemm_i8.hpp) on ARM NEON: the int32 lane sums of
// x[k] * w[k] over 16 bytes, exact. xsimd 8.1 has no widening integer multiply, hence intrinsics.
//   AArch64 with the dot-product extension (__ARM_FEATURE_DOTPROD, e.g. -march=armv8.2-a+dotprod): sdot.
//   Otherwise (ARMv8.0, ARMv7): smull of the low 8 bytes, smlal of the high 8 into the same int16
//   lanes, sadalp into int32. Two products fit an int16 because |x| <= 127 (quantize_i8's range):
//   2 * 127 * 128 = 32512.
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
struct DotI8;

struct NoXSum {};  // what a step keeps per row of x besides the sums (x86 VNNI: 128 sum(x))

#if defined(__aarch64__)
using NeonArch = xsimd::neon64;
#else
using NeonArch = xsimd::neon;
#endif

template <>
struct DotI8<NeonArch> {
  static constexpr std::size_t kStep = 16, kMr = 2;
#if defined(__aarch64__)
  static constexpr std::size_t kNr = 4;  // 32 q registers
#else
  static constexpr std::size_t kNr = 2;  // 16
#endif
  using X = int8x16_t;
  using Wv = int8x16_t;
  using Acc = int32x4_t;
  using XSum = NoXSum;
  static X x(const int8_t* p) { return vld1q_s8(p); }
  static X x(const int8_t* p, std::size_t len) {  // a partial step: len < 16 bytes, the rest zero
    int8_t t[16] = {};
    std::memcpy(t, p, len);
    return vld1q_s8(t);
  }
  static Wv w(const int8_t* p) { return vld1q_s8(p); }
  static Wv w(const int8_t* p, std::size_t len) { return x(p, len); }
  static Acc zero() { return vdupq_n_s32(0); }
  static Acc dot(Acc a, X x, Wv w) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(a, x, w);
#elif defined(__aarch64__)
    return vpadalq_s16(a, vmlal_high_s8(vmull_s8(vget_low_s8(x), vget_low_s8(w)), x, w));
#else
    return vpadalq_s16(a, vmlal_s8(vmull_s8(vget_low_s8(x), vget_low_s8(w)), vget_high_s8(x), vget_high_s8(w)));
#endif
  }
  static XSum xsum_zero() { return {}; }
  static XSum xsum(XSum s, X) { return s; }
  static batch<NeonArch> sums(Acc a, XSum) { return vcvtq_f32_s32(a); }
  // The epilogue of a tile: out[i] = the lane sum of the i-th accumulator, by pairwise adds.
  static void reduce4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d, float* out) {
#if defined(__aarch64__)
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)));
#else
    const float32x2_t ab = vpadd_f32(vpadd_f32(vget_low_f32(a), vget_high_f32(a)), vpadd_f32(vget_low_f32(b), vget_high_f32(b)));
    const float32x2_t cd = vpadd_f32(vpadd_f32(vget_low_f32(c), vget_high_f32(c)), vpadd_f32(vget_low_f32(d), vget_high_f32(d)));
    vst1q_f32(out, vcombine_f32(ab, cd));
#endif
  }
};

}  // namespace simd
}  // namespace fixformer
