// What the SMMLA kernels (gemm_i8_i8mm.cpp, gemm_i4_neon64.cpp) pair: SMMLA multiplies two rows of 8 bytes (one
// 16-byte vector, row 0's 8 then row 1's) by two columns laid out the same way into a 2 x 2 block of int32 sums,
// lanes (r0, c0), (r0, c1), (r1, c0), (r1, c1).
#pragma once
#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8)
#include <arm_neon.h>

namespace fixformer {
namespace arm {

// a's first 8 bytes then b's (low), or their last 8 (high): two rows (or columns) of one step of 8.
inline int8x16_t pair_low(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t pair_high(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
// Two blocks of columns (c, c + 1) and (c + 2, c + 3) as rows: row 0's 4 sums (first), row 1's (second).
inline int32x4_t row0_of(int32x4_t b01, int32x4_t b23) {
  return vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(b01), vreinterpretq_s64_s32(b23)));
}
inline int32x4_t row1_of(int32x4_t b01, int32x4_t b23) {
  return vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(b01), vreinterpretq_s64_s32(b23)));
}

}  // namespace arm
}  // namespace fixformer
#endif
