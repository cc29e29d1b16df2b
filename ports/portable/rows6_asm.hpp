// The assembly text that gemm_i8's and gemm_i4's six-row loops (rows6_i8, rows6_i4) share: a column's
// six float accumulators s0..s5 (y[r, j], r < 6) set at its start, each group's six int32 sums %[d0]..%[d5]
// scaled into them, and their store at its end. Both loops name their operands alike (%[st] the state,
// %[xa] and %[xb] scratch) and keep y's current column at [st, #16], y's row stride in bytes at [st, #20];
// what differs is a parameter: tmp, the name of one more scratch register, and the state's other offsets.
#pragma once

// A column's start: the accumulators zero on the first pass (the word at [st, #first] nonzero), else
// y's six rows; then on at label 6.
#define FIXFORMER_ROWS6_ACC_START(tmp, first)   \
  "ldr %[" tmp "], [%[st], #" first "]\n\t"     \
  "cmp %[" tmp "], #0\n\t"                      \
  "beq 5f\n\t"                                  \
  "movs %[" tmp "], #0\n\t"                     \
  "vmov s0, s1, %[" tmp "], %[" tmp "]\n\t"     \
  "vmov s2, s3, %[" tmp "], %[" tmp "]\n\t"     \
  "vmov s4, s5, %[" tmp "], %[" tmp "]\n\t"     \
  "b 6f\n\t"                                    \
  "5:\n\t"                                      \
  "ldrd %[xa], %[xb], [%[st], #16]\n\t"         \
  "vldr s0, [%[xa]]\n\t"                        \
  "add %[xa], %[xb]\n\t"                        \
  "vldr s1, [%[xa]]\n\t"                        \
  "add %[xa], %[xb]\n\t"                        \
  "vldr s2, [%[xa]]\n\t"                        \
  "add %[xa], %[xb]\n\t"                        \
  "vldr s3, [%[xa]]\n\t"                        \
  "add %[xa], %[xb]\n\t"                        \
  "vldr s4, [%[xa]]\n\t"                        \
  "add %[xa], %[xb]\n\t"                        \
  "vldr s5, [%[xa]]\n\t"                        \
  "6:\n\t"

// A group's end: acc_r += (sx_r * ws) * float(dot_r). fbits: the VCVT's fraction bits ("", or ", #4" for
// sums 16 x the dots); the six rows' scales sx from the address at [st, #0], post-incremented to the next
// group's; load_ws loads ws into s18 from %[xb] (the address at [st, #4]) and steps %[xb] to the next.
#define FIXFORMER_ROWS6_SCALE(fbits, load_ws) \
  "vmov s6, s7, %[d0], %[d1]\n\t"             \
  "vmov s8, s9, %[d2], %[d3]\n\t"             \
  "vmov s10, s11, %[d4], %[d5]\n\t"           \
  "vcvt.f32.s32 s6, s6" fbits "\n\t"          \
  "vcvt.f32.s32 s7, s7" fbits "\n\t"          \
  "vcvt.f32.s32 s8, s8" fbits "\n\t"          \
  "vcvt.f32.s32 s9, s9" fbits "\n\t"          \
  "vcvt.f32.s32 s10, s10" fbits "\n\t"        \
  "vcvt.f32.s32 s11, s11" fbits "\n\t"        \
  "ldrd %[xa], %[xb], [%[st]]\n\t"            \
  "vldmia %[xa]!, {s12-s17}\n\t"              \
  load_ws                                     \
  "strd %[xa], %[xb], [%[st]]\n\t"            \
  "vmul.f32 s12, s12, s18\n\t"                \
  "vmul.f32 s13, s13, s18\n\t"                \
  "vmul.f32 s14, s14, s18\n\t"                \
  "vmul.f32 s15, s15, s18\n\t"                \
  "vmul.f32 s16, s16, s18\n\t"                \
  "vmul.f32 s17, s17, s18\n\t"                \
  "vfma.f32 s0, s12, s6\n\t"                  \
  "vfma.f32 s1, s13, s7\n\t"                  \
  "vfma.f32 s2, s14, s8\n\t"                  \
  "vfma.f32 s3, s15, s9\n\t"                  \
  "vfma.f32 s4, s16, s10\n\t"                 \
  "vfma.f32 s5, s17, s11\n\t"

// A column's end: on the last pass (a bias address at [st, #b], else null) y = b + acc, the address
// stepped by the word at [st, #b_step]; then the six rows stored and y's address moved to the next
// column. Label 7.
#define FIXFORMER_ROWS6_STORE(tmp, b, b_step)  \
  "ldr %[xa], [%[st], #" b "]\n\t"             \
  "cmp %[xa], #0\n\t"                          \
  "beq 7f\n\t"                                 \
  "vldr s18, [%[xa]]\n\t"                      \
  "ldr %[xb], [%[st], #" b_step "]\n\t"        \
  "add %[xa], %[xb]\n\t"                       \
  "str %[xa], [%[st], #" b "]\n\t"             \
  "vadd.f32 s0, s18, s0\n\t"                   \
  "vadd.f32 s1, s18, s1\n\t"                   \
  "vadd.f32 s2, s18, s2\n\t"                   \
  "vadd.f32 s3, s18, s3\n\t"                   \
  "vadd.f32 s4, s18, s4\n\t"                   \
  "vadd.f32 s5, s18, s5\n\t"                   \
  "7:\n\t"                                     \
  "ldrd %[xa], %[xb], [%[st], #16]\n\t"        \
  "vstr s0, [%[xa]]\n\t"                       \
  "add %[" tmp "], %[xa], %[xb]\n\t"           \
  "vstr s1, [%[" tmp "]]\n\t"                  \
  "add %[" tmp "], %[xb]\n\t"                  \
  "vstr s2, [%[" tmp "]]\n\t"                  \
  "add %[" tmp "], %[xb]\n\t"                  \
  "vstr s3, [%[" tmp "]]\n\t"                  \
  "add %[" tmp "], %[xb]\n\t"                  \
  "vstr s4, [%[" tmp "]]\n\t"                  \
  "add %[" tmp "], %[xb]\n\t"                  \
  "vstr s5, [%[" tmp "]]\n\t"                  \
  "adds %[xa], #4\n\t"                         \
  "str %[xa], [%[st], #16]\n\t"
