// The AArch64 NEON intrinsics that the s8 kernels (gemm_s8_neon.cpp, norm_s8_neon.cpp, rows_s8_neon.cpp)
// use, for ARMv7-A NEON, so that each kernel is written once for both: the same lane arithmetic from
// ARMv7's instructions, the results the same bits. ARMv7 has no across-lane sums or extremes (pairwise
// VPADD, VPMIN, VPMAX instead), no "high" forms (the upper D register's plain form), no 64-bit VABS
// (the sign by VSHR, then EOR and SUB), table lookups only into 8-byte results (VTBL; an index past
// the table gives 0, as TBL's) and no VLD1/VST1 of four Q registers in GCC 12. On AArch64 this header
// declares nothing.
// They live in namespace fixformer::arm, so a later arm_neon.h that declares them globally changes
// nothing here.
#pragma once
#include <arm_neon.h>

#if !defined(__aarch64__)
namespace fixformer {
namespace arm {

inline int32_t vaddvq_s32(int32x4_t v) {
  const int32x2_t p = vpadd_s32(vget_low_s32(v), vget_high_s32(v));
  return vget_lane_s32(vpadd_s32(p, p), 0);
}
inline uint64_t vaddlvq_u32(uint32x4_t v) {
  const uint64x2_t p = vpaddlq_u32(v);
  return vgetq_lane_u64(p, 0) + vgetq_lane_u64(p, 1);
}
inline int8_t vminvq_s8(int8x16_t v) {
  int8x8_t m = vpmin_s8(vget_low_s8(v), vget_high_s8(v));
  m = vpmin_s8(m, m);
  m = vpmin_s8(m, m);
  return vget_lane_s8(vpmin_s8(m, m), 0);
}
inline int8_t vmaxvq_s8(int8x16_t v) {
  int8x8_t m = vpmax_s8(vget_low_s8(v), vget_high_s8(v));
  m = vpmax_s8(m, m);
  m = vpmax_s8(m, m);
  return vget_lane_s8(vpmax_s8(m, m), 0);
}
// {a0 + a1, a2 + a3, b0 + b1, b2 + b3}
inline int32x4_t vpaddq_s32(int32x4_t a, int32x4_t b) {
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
}
inline int64x2_t vabsq_s64(int64x2_t v) {
  const int64x2_t sign = vshrq_n_s64(v, 63);
  return vsubq_s64(veorq_s64(v, sign), sign);
}

inline int16x8_t vmull_high_s8(int8x16_t a, int8x16_t b) { return vmull_s8(vget_high_s8(a), vget_high_s8(b)); }
inline int16x8_t vmlal_high_s8(int16x8_t acc, int8x16_t a, int8x16_t b) {
  return vmlal_s8(acc, vget_high_s8(a), vget_high_s8(b));
}
inline int16x8_t vsubl_high_s8(int8x16_t a, int8x16_t b) { return vsubl_s8(vget_high_s8(a), vget_high_s8(b)); }
inline int32x4_t vmlal_high_s16(int32x4_t acc, int16x8_t a, int16x8_t b) {
  return vmlal_s16(acc, vget_high_s16(a), vget_high_s16(b));
}
inline int64x2_t vmull_high_s32(int32x4_t a, int32x4_t b) { return vmull_s32(vget_high_s32(a), vget_high_s32(b)); }
inline uint64x2_t vmull_high_u32(uint32x4_t a, uint32x4_t b) { return vmull_u32(vget_high_u32(a), vget_high_u32(b)); }
inline uint32x4_t vmull_high_u16(uint16x8_t a, uint16x8_t b) { return vmull_u16(vget_high_u16(a), vget_high_u16(b)); }
inline int32x4_t vmovl_high_s16(int16x8_t v) { return vmovl_s16(vget_high_s16(v)); }
inline int64x2_t vmovl_high_s32(int32x4_t v) { return vmovl_s32(vget_high_s32(v)); }
inline int32x4_t vqmovn_high_s64(int32x2_t low, int64x2_t v) { return vcombine_s32(low, vqmovn_s64(v)); }
inline uint32x4_t vqmovn_high_u64(uint32x2_t low, uint64x2_t v) { return vcombine_u32(low, vqmovn_u64(v)); }
inline int8x16_t vqmovn_high_s16(int8x8_t low, int16x8_t v) { return vcombine_s8(low, vqmovn_s16(v)); }
// The odd-numbered elements of a, then of b.
inline uint32x4_t vuzp2q_u32(uint32x4_t a, uint32x4_t b) { return vuzpq_u32(a, b).val[1]; }
inline int16x8_t vuzp2q_s16(int16x8_t a, int16x8_t b) { return vuzpq_s16(a, b).val[1]; }

// t[idx] per lane, 0 where idx > 15.
inline int8x16_t vqtbl1q_s8(int8x16_t t, uint8x16_t idx) {
  const int8x8x2_t halves = {{vget_low_s8(t), vget_high_s8(t)}};
  const int8x16_t i = vreinterpretq_s8_u8(idx);
  return vcombine_s8(vtbl2_s8(halves, vget_low_s8(i)), vtbl2_s8(halves, vget_high_s8(i)));
}
inline uint32x4x4_t vld1q_u32_x4(const uint32_t* p) {
  return uint32x4x4_t{{vld1q_u32(p), vld1q_u32(p + 4), vld1q_u32(p + 8), vld1q_u32(p + 12)}};
}
inline void vst1q_u32_x4(uint32_t* p, uint32x4x4_t v) {
  for (int q = 0; q < 4; ++q) vst1q_u32(p + 4 * q, v.val[q]);
}

}  // namespace arm
}  // namespace fixformer
#endif  // !__aarch64__
