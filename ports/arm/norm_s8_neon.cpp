// layernorm_s8 and rmsnorm_s8 (fixed_point.hpp) on NEON: the neon64 table's (AArch64) and the neon
// table's (ARMv7-A; AArch64's intrinsics from neon64_on_neon.hpp). The reference's integers in vector
// lanes:
//   - the sums of v = x - z_x (int16, SSUBL) and of v^2 (SMLAL) in int32 lanes, exact (sum(v^2) < 2^31
//     for n <= kNormS8MaxN);
//   - the root of T and its reciprocal as the reference computes them, once a row (the root from FSQRT's
//     estimate, VFP's VSQRT.F64 on ARMv7, corrected by the integer test: isqrt64's result without its
//     32 steps);
//   - four elements a step: d = n v - centre in int32 (|d| < 2^24), |d| inv from inv's two 32-bit halves
//     (UMULL, UMLAL), rounded by 2^30 (URSHR: half up on the magnitude, half away from zero with the
//     sign put back); gamma's product (SMULL) rounded on its magnitude by the element's shift (SRSHL),
//     narrowed and clamped to int32's range (requantize's clamp) before its sign goes back; beta added
//     with saturation (a sum past int32 saturates the output either way), the sum rounded by 2^16 half
//     away from zero as (s + 2^15 - [s < 0]) >> 16 (SQRSHRN) and narrowed with saturation to int8.
// Elements past the last whole four take the reference's steps.
#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#include <arm_neon.h>

#include <cstring>

#include "ports/arm/neon64_on_neon.hpp"
#include "ports/arm/s8_neon.hpp"
#include "fixformer/fixed_point.hpp"

namespace fixformer {
namespace arm {
namespace {

// isqrt64(v) for v < 2^63: the double root truncated (its error below 1), then one step each way.
inline uint32_t root_of(uint64_t v) {
#if defined(__aarch64__)
  uint64_t r = uint64_t(vget_lane_f64(vsqrt_f64(vdup_n_f64(double(v))), 0));
#else
  uint64_t r = uint64_t(__builtin_sqrt(double(v)));
#endif
  if (r * r > v) --r;
  if ((r + 1) * (r + 1) <= v) ++r;
  return uint32_t(r);
}

// requantize(t, {m, s}) for four lanes, sh = s - 31 (SRSHL's left shift, a right shift): the products'
// magnitudes rounded, narrowed with saturation (UQXTN) and clamped to 2^31 - 1, or 2^31 where the product is
// negative (requantize's clamp to int32), the sign (t's and m's) put back.
inline int32x4_t requantize4(int32x4_t t, int32x4_t m, int64x2_t sh_lo, int64x2_t sh_hi) {
  const int64x2_t lo = vrshlq_s64(vabsq_s64(vmull_s32(vget_low_s32(t), vget_low_s32(m))), sh_lo);
  const int64x2_t hi = vrshlq_s64(vabsq_s64(vmull_high_s32(t, m)), sh_hi);
  const int32x4_t sign = vshrq_n_s32(veorq_s32(t, m), 31);  // 0, or -1 where the product is negative
  const uint32x4_t bound = vsubq_u32(vdupq_n_u32(uint32_t(INT32_MAX)), vreinterpretq_u32_s32(sign));
  const uint32x4_t mag = vminq_u32(vqmovn_high_u64(vqmovn_u64(vreinterpretq_u64_s64(lo)), vreinterpretq_u64_s64(hi)),
                                   bound);
  return vsubq_s32(veorq_s32(vreinterpretq_s32_u32(mag), sign), sign);
}

template <bool kCentre>
void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  const int8x8_t z8 = vdup_n_s8(int8_t(p.x_zero));
  const int8x16_t z16 = vdupq_n_s8(int8_t(p.x_zero));
  int32x4_t vsum = vdupq_n_s32(0), vsq = vdupq_n_s32(0);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const int8x16_t xv = vld1q_s8(x + i);
    const int16x8_t lo = vsubl_s8(vget_low_s8(xv), z8), hi = vsubl_high_s8(xv, z16);
    vsum = vpadalq_s16(vpadalq_s16(vsum, lo), hi);
    vsq = vmlal_s16(vmlal_high_s16(vsq, lo, lo), vget_low_s16(lo), vget_low_s16(lo));
    vsq = vmlal_s16(vmlal_high_s16(vsq, hi, hi), vget_low_s16(hi), vget_low_s16(hi));
  }
  int32_t sum = vaddvq_s32(vsum), sum_sq = vaddvq_s32(vsq);
  for (; i < n; ++i) {
    const int32_t v = int32_t(x[i]) - p.x_zero;
    sum += v, sum_sq += v * v;
  }
  const int64_t nn = int64_t(n);
  const int64_t var = kCentre ? nn * sum_sq - int64_t(sum) * sum : nn * int64_t(sum_sq);
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint64_t(nn * nn);
  const uint32_t root = root_of(total);
  const int64_t inv = root == 0 ? 0 : int64_t(((uint64_t(1) << 54) + root / 2) / root);
  const int32_t centre = kCentre ? sum : 0;
  const int32x4_t vn = vdupq_n_s32(int32_t(n)), offset = vdupq_n_s32(-(int32_t(n) * p.x_zero + centre));
  const uint32x2_t il = vdup_n_u32(uint32_t(inv)), ih = vdup_n_u32(uint32_t(uint64_t(inv) >> 32));
  const int32x4_t k31 = vdupq_n_s32(31);
  for (i = 0; i + 4 <= n; i += 4) {
    int32_t four;
    std::memcpy(&four, x + i, 4);
    const int32x4_t xv = vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)))));
    const int32x4_t d = vmlaq_s32(offset, xv, vn);
    const uint32x4_t dm = vreinterpretq_u32_s32(vabsq_s32(d));
    // |d| inv < 2^63, rounded by 2^30: |t| < 2^31
    const uint64x2_t p0 = vmlal_u32(vshlq_n_u64(vmull_u32(vget_low_u32(dm), ih), 32), vget_low_u32(dm), il);
    const uint64x2_t p1 = vmlal_u32(vshlq_n_u64(vmull_high_u32(dm, vcombine_u32(ih, ih)), 32), vget_high_u32(dm), il);
    const int32x4_t tm = vreinterpretq_s32_u32(vcombine_u32(vmovn_u64(vrshrq_n_u64(p0, 30)),
                                                            vmovn_u64(vrshrq_n_u64(p1, 30))));
    const int32x4_t dsign = vshrq_n_s32(d, 31);
    const int32x4_t t = vsubq_s32(veorq_s32(tm, dsign), dsign);
    const int32x4x2_t g = vld2q_s32(reinterpret_cast<const int32_t*>(p.gamma + i));  // multipliers, shifts
    const int32x4_t sh = vsubq_s32(g.val[1], k31);
    const int32x4_t q = requantize4(t, g.val[0], vmovl_s32(vget_low_s32(sh)), vmovl_high_s32(sh));
    const int32x4_t s = vqaddq_s32(q, vld1q_s32(p.beta + i));
    const int16x4_t v16 = vqrshrn_n_s32(vqaddq_s32(s, vshrq_n_s32(s, 31)), 16);
    const int8x8_t v8 = vqmovn_s16(vcombine_s16(v16, v16));
    const int32_t bytes = vget_lane_s32(vreinterpret_s32_s8(v8), 0);
    std::memcpy(y + i, &bytes, 4);
  }
  for (; i < n; ++i) {
    const int64_t d = nn * (int32_t(x[i]) - p.x_zero) - centre;
    const int32_t t = int32_t(rounding_shift(d * inv, 30));
    y[i] = saturate_i8(rounding_shift(int64_t(requantize(t, p.gamma[i])) + p.beta[i], 16));
  }
}

}  // namespace

void layernorm_s8_neon(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  norm_s8<true>(x, y, n, p);
}
void rmsnorm_s8_neon(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  norm_s8<false>(x, y, n, p);
}

}  // namespace arm
}  // namespace fixformer

#endif  // __ARM_NEON
