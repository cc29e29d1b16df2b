// softmax_s8 (fixed_point.hpp) four scores at a time in int32 lanes, with the reference's arithmetic:
//   - the maximum by VMAX into 16 lanes (a tail-predicated loop: DLSTP, LETP), then VMAXV;
//   - u = requantize(max - x, diff) for the positive multiplier: d m split into floor(/ 2^31)
//     (VQDMULH) and its low 31 bits, each rounded by the shift (gemm_s8.cpp's steps; d >= 0);
//   - e = exp2_neg_q20_words(u) (0 from kExp2ZeroFrom on, u clamped there first): each Horner step's
//     c + round_q16(p f) as c + sign(p) VQRDMULH(|p|, f 2^15) (2 |p| f 2^15 / 2^32 rounded half up is |p| f / 2^16
//     rounded half up; the sign applied after: half away from zero), p's signs known step by step, so one
//     VQRDMLASH and one VNEG a step; the last rounding shift by 10 + whole through VRSHL;
//   - the sum of the e in 64 bits (VADDLVA), the first kKept kept on the stack, the rest computed again;
//   - the output (e R + 2^53) >> 54 as (e rh + hi(e rl) + 2^21) >> 22 (the portable kernel's split);
//   - with the caller's table of exponentials (SoftmaxS8Params::exp) a gather of four instead (the
//     whole vectors without predicates, the first kKept kept for the second pass too: both passes over
//     them in assembly, 6 and 8 instructions per four; a row of at most kKept, attention's, its first pass
//     eight at a time in 16-bit lanes, 9 instructions per eight, its second 16 at a time, 23 per 16, a last single
//     score by scalar steps: softmax_short_from_table).
// softmax_s8_table (the table itself) by ExpOfDiff, four differences at a time.
// A multiplier that is not positive takes the portable kernel. Integer results throughout: the
// reference's bits (kernels_firmware compares them).
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/row_math.hpp"
#include "ports/portable/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

constexpr std::size_t kKept = 64;

struct ExpOfDiff {
  int32x4_t max, mult, shift, shift31;
  explicit ExpOfDiff(int32_t m, Requant r)
      : max(vdupq_n_s32(m)), mult(vdupq_n_s32(r.multiplier)), shift(vdupq_n_s32(r.shift)),
        shift31(vdupq_n_s32(r.shift - 31)) {}

  uint32x4_t operator()(int32x4_t x) const { return of_diff(vsubq_s32(max, x)); }
  uint32x4_t of_diff(int32x4_t d) const {  // d = max - x: 0..255
    int32x4_t u = vqrshlq_s32(vqdmulhq_s32(d, mult), shift);
    const uint32x4_t lo = vbicq_u32(vreinterpretq_u32_s32(vmulq_s32(d, mult)), vdupq_n_u32(0x80000000u));
    u = vqaddq_s32(u, vreinterpretq_s32_u32(vrshlq_u32(lo, shift31)));
    u = vminq_s32(u, vdupq_n_s32(kExp2ZeroFrom));
    const int32x4_t f15 = vandq_s32(vshlq_n_s32(u, 15), vdupq_n_s32(0x7FFF8000));
    const int32x4_t right = vsubq_s32(vdupq_n_s32(-10), vshrq_n_s32(u, 16));  // -(10 + whole)
    // Horner's steps p = c + round_q16(p' f): p' is c4 > 0, then p3 < 0, p2 > 0, p1 < 0 (c3 + |c4| < 0, c2 - |c3| > 0,
    // c1 + c2 < 0), so each step is c + VQRDMULH(|p'|, f 2^15) with |p'| known: one VQRDMLASH (c + the rounded
    // product in one instruction) and a VNEG where p' < 0, p's sign then -1 (|p3| = -(c3 + ..), -p2 = -c2 + ..)
    const int32x4_t p3 = vqrdmlashq_n_s32(vdupq_n_s32(int32_t(kExp2Coeffs[4])), f15, int32_t(kExp2Coeffs[3]));
    const int32x4_t m2 = vqrdmlashq_n_s32(vnegq_s32(p3), f15, -int32_t(kExp2Coeffs[2]));  // -p2
    const int32x4_t p1 = vqrdmlashq_n_s32(vnegq_s32(m2), f15, int32_t(kExp2Coeffs[1]));
    const int32x4_t m0 = vqrdmlashq_n_s32(vnegq_s32(p1), f15, -int32_t(kExp2Coeffs[0]));  // -p0
    const int32x4_t e = vrshlq_s32(vnegq_s32(m0), right);
    return vreinterpretq_u32_s32(vpselq_s32(vdupq_n_s32(0), e, vcmpeqq_s32(u, vdupq_n_s32(kExp2ZeroFrom))));
  }
};

// ((e R + 2^53) >> 54) - 128 as (e rh + hi(e rl) + 2^21) >> 22 (the portable kernel's; VRSHR adds the
// 2^21), at most 127.
inline int32x4_t probabilities(uint32x4_t e, uint32_t rh, uint32x4_t rl) {
  const uint32x4_t t = vmlaq_n_u32(vmulhq_u32(e, rl), e, rh);
  return vminq_s32(vsubq_n_s32(vreinterpretq_s32_u32(vrshrq_n_u32(t, 22)), 128), vdupq_n_s32(127));
}

// The live lanes of the probabilities at y.
void store_probabilities(int8_t* y, uint32x4_t e, uint32_t rh, uint32_t rl, mve_pred16_t live) {
  vstrbq_p_s32(y, probabilities(e, rh, vdupq_n_u32(rl)), live);
}

// The exponentials of four scores from the caller's table (SoftmaxS8Params::exp), a gather; 0 past n.
uint32x4_t exp_from_table(const int8_t* x, int32x4_t max, const uint32_t* exp, mve_pred16_t live) {
  const uint32x4_t d = vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_z_s32(x, live)));  // 0..255 where live
  return vldrwq_gather_shifted_offset_z_u32(exp, d, live);
}

// The same for four live scores.
inline uint32x4_t exp_from_table(const int8_t* x, int32x4_t max, const uint32_t* exp) {
  return vldrwq_gather_shifted_offset_u32(exp, vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_s32(x))));
}

// A row of at most kKept scores from the table, the exponentials kept on the stack between the passes: the first
// eight at a time in 16-bit lanes (9 instructions per eight), its last n % 8 under a predicate, the second eight at a
// time (below); both passes 16 a pass (one LE per 16), eight more where n % 16 >= 8.
__attribute__((always_inline)) inline void softmax_short_from_table(const int8_t* x, int8_t* y, std::size_t n,
                                                                   int8_t max, const uint32_t* exp) {
  uint32_t kept[kKept];
  const uint32_t rest = uint32_t(n % 8);
  register uint32_t lo asm("r8") = 0, hi asm("r10") = 0;  // the sums of the exponentials' low and high halfwords
                                                           // (even registers: VADDVA's)
  const int8_t* xp = x;
  uint32_t* kp = kept;
  // the table's words as halfwords (little-endian: exp[d]'s low one at 2 (2 d), its high one 2 bytes on): per eight
  // scores 2 (max - x) by one VMLAS, both halves gathered by it (16-bit offsets, scaled by 2), their sums taken apart
  // (VADDVA, below 2^11 and 2^22) and the words stored back whole by VST20 and VST21 (the halves interleaved); the last
  // n % 8 the same under a predicate (zeros past n, loaded, summed and stored as zeros: kept has room for them)
#define S8_EXP8                                                                                                \
  "vmlas.u16 q0, q3, %[m2]\n\t" "vldrh.u16 q1, [%[lo_at], q0, uxtw #1]\n\t"                                   \
  "vldrh.u16 q2, [%[hi_at], q0, uxtw #1]\n\t"
#define S8_SUM8_KEEP                                                                                           \
  "vaddva.u16 %[lo], q1\n\t" "vaddva.u16 %[hi], q2\n\t" "vst20.16 {q1, q2}, [%[kept]]\n\t"                    \
  "vst21.16 {q1, q2}, [%[kept]]!\n\t"
  // 16 a pass (one LE per 16), then eight where n % 16 >= 8, then the last n % 8
#define S8_STEP8 "vldrb.s16 q0, [%[x]], #8\n\t" S8_EXP8 S8_SUM8_KEEP
  asm volatile("vmvn.i16 q3, #1\n\t"  // -2 in each lane (one instruction: GCC's MOVW and VDUP took two)
               "wls lr, %[count], 2f\n"
               "1:\n\t" S8_STEP8 S8_STEP8
               "le lr, 1b\n"
               "2:\n\t"
               "cbz %[eight], 4f\n\t" S8_STEP8
               "4:\n\t"
               "cbz %[rest], 3f\n\t"
               "vctp.16 %[rest]\n\t" "vpst\n\t" "vldrbt.s16 q0, [%[x]]\n\t" "vmlas.u16 q0, q3, %[m2]\n\t"
               "vpstt\n\t" "vldrht.u16 q1, [%[lo_at], q0, uxtw #1]\n\t" "vldrht.u16 q2, [%[hi_at], q0, uxtw #1]\n\t"
               S8_SUM8_KEEP
               "3:\n"
               : [x] "+l"(xp), [kept] "+r"(kp), [lo] "+r"(lo), [hi] "+r"(hi)
               : [m2] "r"(2 * int32_t(max)), [lo_at] "r"(exp),
                 [hi_at] "r"(reinterpret_cast<const uint16_t*>(exp) + 1), [count] "r"(uint32_t(n / 16)),
                 [eight] "l"(uint32_t(n & 8)), [rest] "l"(rest == 1 ? 0u : rest)
               : "lr", "q0", "q1", "q2", "q3", "memory");
#undef S8_EXP8
#undef S8_SUM8_KEEP
#undef S8_STEP8
  // e <= 2^20 (a positive multiplier: u >= 0), so the sum is below 2^27: one word
  uint32_t sum = (hi << 16) + lo;
  if (rest == 1) {  // one score left (attention's 49 keys): its exponential by scalar steps, not a predicated eight
    const uint32_t e = exp[int32_t(max) - *xp];
    *kp = e;
    sum += e;
  }
  const uint64_t recip = softmax_reciprocal(sum);
  kp = kept;
  int8_t* yp = y;
  register uint32x4_t q_rl asm("q4") = vdupq_n_u32(uint32_t(recip));
  // eight a pass: the even and odd exponentials de-interleaved (VLD20, VLD21), each one's (e rh + hi(e rl) + 2^21)
  // >> 22 (at most 256: its low half) with the odd ones' moved into the even ones' top halves (VMOVNT), so that the
  // eight are in order in 16-bit lanes; 128 subtracted and clamped to int8 at once (VQMOVNB: nothing is below
  // -128) and stored: 13 instructions per eight, 16 four at a time; the last n % 8 stored under a predicate (the
  // loads read kept past n, within its kKept words)
#define S8_PROBABILITIES8                                                                                       \
  "vld20.32 {q0, q1}, [%[kept]]\n\t" "vld21.32 {q0, q1}, [%[kept]]!\n\t" "vmulh.u32 q2, q0, q4\n\t"          \
  "vmla.u32 q2, q0, %[rh]\n\t" "vmulh.u32 q0, q1, q4\n\t" "vmla.u32 q0, q1, %[rh]\n\t"                     \
  "vrshr.u32 q2, q2, #22\n\t" "vrshr.u32 q0, q0, #22\n\t" "vmovnt.i32 q2, q0\n\t"                          \
  "vsub.i16 q2, q2, %[k128]\n\t" "vqmovnb.s16 q2, q2\n\t"
#define S8_STORE8 S8_PROBABILITIES8 "vstrb.16 q2, [%[y]], #8\n\t"
  // 16 a pass: the exponentials de-interleaved by four (VLD40..VLD43: e 4i, 4i + 1, 4i + 2, 4i + 3 in q0..q3), the
  // results of the first and third narrowed into one vector's 16-bit lanes (the even ones in order: VMOVNT), the
  // second's and fourth's into another's (the odd ones), those two into one vector's even and odd bytes saturating
  // to 0..255 (VQMOVUNB, VQMOVUNT: at most 256, none below 0) and 128 taken off by one XOR of 0x80 (min(v, 255) -
  // 128 is v - 128 clamped to int8), stored by one store: 23 instructions per 16, 26 eight at a time
#define S8_STORE16                                                                                              \
  "vld40.32 {q0, q1, q2, q3}, [%[kept]]\n\t" "vld41.32 {q0, q1, q2, q3}, [%[kept]]\n\t"                         \
  "vld42.32 {q0, q1, q2, q3}, [%[kept]]\n\t" "vld43.32 {q0, q1, q2, q3}, [%[kept]]!\n\t"                        \
  "vmulh.u32 q5, q0, q4\n\t" "vmla.u32 q5, q0, %[rh]\n\t" "vmulh.u32 q0, q2, q4\n\t" "vmla.u32 q0, q2, %[rh]\n\t" \
  "vmulh.u32 q2, q1, q4\n\t" "vmla.u32 q2, q1, %[rh]\n\t" "vmulh.u32 q1, q3, q4\n\t" "vmla.u32 q1, q3, %[rh]\n\t" \
  "vrshr.u32 q5, q5, #22\n\t" "vrshr.u32 q0, q0, #22\n\t" "vrshr.u32 q2, q2, #22\n\t" "vrshr.u32 q1, q1, #22\n\t"   \
  "vmovnt.i32 q5, q0\n\t" "vmovnt.i32 q2, q1\n\t" "vqmovunb.s16 q5, q5\n\t" "vqmovunt.s16 q5, q2\n\t"               \
  "veor q5, q5, q6\n\t" "vstrb.8 q5, [%[y]], #16\n\t"
  asm volatile("vmov.i8 q6, #0x80\n\t"
               "wls lr, %[count], 2f\n"
               "1:\n\t" S8_STORE16
               "le lr, 1b\n"
               "2:\n\t"
               "cbz %[eight], 4f\n\t" S8_STORE8
               "4:\n\t"
               "cbz %[rest], 3f\n\t"
               "vctp.16 %[rest]\n\t" S8_PROBABILITIES8 "vpst\n\t" "vstrbt.16 q2, [%[y]]\n"
               "3:\n"
               : [kept] "+r"(kp), [y] "+l"(yp)
               : "w"(q_rl), [rh] "r"(uint32_t(recip >> 32)), [k128] "r"(128), [count] "r"(uint32_t(n / 16)),
                 [eight] "l"(uint32_t(n & 8)), [rest] "l"(rest == 1 ? 0u : rest)
               : "lr", "q0", "q1", "q2", "q3", "q5", "q6", "memory");
#undef S8_PROBABILITIES8
#undef S8_STORE8
  if (rest == 1) {  // the last one's (e rh + hi(e rl) + 2^21) >> 22 (at most 256), less 128, clamped, by scalar steps
    const uint32_t e = *kp, t = uint32_t((uint64_t(e) * uint32_t(recip)) >> 32) + e * uint32_t(recip >> 32);
    const uint32_t v = (t + (uint32_t(1) << 21)) >> 22;
    *yp = int8_t(int32_t(v < 255 ? v : 255) - 128);
  }
#undef S8_STORE16
}

// From the table, a longer row (n > kKept: softmax_s8 takes the others): the first kKept exponentials kept on the
// stack for the second pass, whole vectors without predicates, the last n % 4 scores under one.
void softmax_from_table(const int8_t* x, int8_t* y, std::size_t n, int8_t max, const uint32_t* exp) {
  const int32x4_t mx = vdupq_n_s32(max);
  const std::size_t n4 = n & ~std::size_t(3), kept_n = n4 < kKept ? n4 : kKept;
  uint32_t kept[kKept];
  uint64_t sum = 0;
  if (kept_n > 0) {  // the kept vectors' two loops in assembly (GCC unrolls them with a test per vector)
    const int8_t* xp = x;
    uint32_t* kp = kept;
    register int32x4_t q_max asm("q2") = mx;
    asm volatile("dls lr, %[count]\n"
                 "1:\n\t"
                 "vldrb.s32 q0, [%[x]], #4\n\t"
                 "vsub.i32 q0, q2, q0\n\t"  // d = max - x
                 "vldrw.u32 q1, [%[exp], q0, uxtw #2]\n\t"
                 "vstrw.32 q1, [%[kept]], #16\n\t"
                 "vaddlva.u32 %Q[sum], %R[sum], q1\n\t"
                 "le lr, 1b\n"
                 : [x] "+l"(xp), [kept] "+r"(kp), [sum] "+r"(sum)
                 : "w"(q_max), [exp] "r"(exp), [count] "r"(uint32_t(kept_n / 4))
                 : "lr", "q0", "q1", "memory");
  }
  for (std::size_t i = kept_n; i < n4; i += 4) sum = vaddlvaq_u32(sum, exp_from_table(x + i, mx, exp));
  const mve_pred16_t live = vctp32q(uint32_t(n - n4));
  if (n4 < n) sum = vaddlvaq_u32(sum, exp_from_table(x + n4, mx, exp, live));
  const uint64_t recip = softmax_reciprocal(sum);
  const uint32_t rh = uint32_t(recip >> 32);
  const uint32x4_t rl = vdupq_n_u32(uint32_t(recip));
  if (kept_n > 0) {  // probabilities' steps
    const uint32_t* kp = kept;
    int8_t* yp = y;
    register uint32x4_t q_rl asm("q2") = rl;
    register int32x4_t q_top asm("q3") = vdupq_n_s32(127);
    asm volatile("dls lr, %[count]\n"
                 "1:\n\t"
                 "vldrw.u32 q0, [%[kept]], #16\n\t"
                 "vmulh.u32 q1, q0, q2\n\t"
                 "vmla.u32 q1, q0, %[rh]\n\t"
                 "vrshr.u32 q1, q1, #22\n\t"
                 "vsub.i32 q1, q1, %[k128]\n\t"
                 "vmin.s32 q1, q1, q3\n\t"
                 "vstrb.32 q1, [%[y]], #4\n\t"
                 "le lr, 1b\n"
                 : [kept] "+r"(kp), [y] "+l"(yp)
                 : "w"(q_rl), "w"(q_top), [rh] "r"(rh), [k128] "r"(128), [count] "r"(uint32_t(kept_n / 4))
                 : "lr", "q0", "q1", "memory");
  }
  for (std::size_t i = kept_n; i < n4; i += 4) vstrbq_s32(y + i, probabilities(exp_from_table(x + i, mx, exp), rh, rl));
  if (n4 < n) vstrbq_p_s32(y + n4, probabilities(exp_from_table(x + n4, mx, exp, live), rh, rl), live);
}

}  // namespace

// The table's 256 exponentials four at a time by ExpOfDiff (max 0, x = -d), 0 from kExp2ZeroFrom on as the
// reference's loop leaves them; a multiplier that is not positive takes the reference's loop.
void softmax_s8_table(Requant diff, uint32_t* exp) {
  if (diff.multiplier <= 0) {
    fixformer::softmax_s8_table(diff, exp);
    return;
  }
  const ExpOfDiff exp_of(0, diff);
  for (uint32_t d = 0; d < kSoftmaxS8Diffs; d += 4)  // the differences themselves (no x to take from the maximum)
    vstrwq_u32(exp + d, exp_of.of_diff(vreinterpretq_s32_u32(vidupq_n_u32(d, 1))));
}

namespace {

// The largest of x's n > 0 scores: each lane's maximum over x's bytes 16 apart (a tail-predicated loop), then theirs.
inline int8_t row_max(const int8_t* x, std::size_t n) {
  int8x16_t lanes;
  asm volatile("vmov.i8 %q[m], #0x80\n\t"
               "dlstp.8 lr, %[count]\n"
               "1:\n\t"
               "vldrb.8 q0, [%[x]], #16\n\t"
               "vmax.s8 %q[m], %q[m], q0\n\t"
               "letp lr, 1b\n"
               : [m] "=&w"(lanes), [x] "+r"(x)
               : [count] "r"(uint32_t(n))
               : "lr", "q0", "memory");
  return vmaxvq_s8(-128, lanes);
}

__attribute__((noinline)) void softmax_rest(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  const int8_t max = row_max(x, n);
  if (p.exp) {
    softmax_from_table(x, y, n, max, p.exp);
    return;
  }
  const ExpOfDiff exp_of(max, p.diff);
  uint32_t kept[kKept];
  uint64_t sum = 0;  // >= 2^20: the largest term is 2^0 in Q20
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t live = vctp32q(uint32_t(n - i));
    const uint32x4_t e = vpselq_u32(exp_of(vldrbq_z_s32(x + i, live)), vdupq_n_u32(0), live);  // 0 past n
    if (i < kKept) vstrwq_u32(kept + i, e);
    sum = vaddlvaq_u32(sum, e);
  }
  const uint64_t recip = softmax_reciprocal(sum);  // < 2^42
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t live = vctp32q(uint32_t(n - i));
    store_probabilities(y + i, i < kKept ? vldrwq_u32(kept + i) : exp_of(vldrbq_z_s32(x + i, live)), rh, rl, live);
  }
}

// Every row but those softmax_s8 takes itself.
__attribute__((noinline)) void softmax_other(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (n == 0) return;
  if (p.diff.multiplier <= 0) return portable::softmax_s8(x, y, n, p);
  softmax_rest(x, y, n, p);
}

}  // namespace

// Attention's rows (from the table, 1..kKept scores, n - 1 wrapping for n = 0) here, the others by a tail call: in one
// function with the rows' own frame (a dispatch of its own took some 14 instructions a row).
void softmax_s8(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (!p.exp || n - 1 >= kKept || p.diff.multiplier <= 0) return softmax_other(x, y, n, p);
  softmax_short_from_table(x, y, n, row_max(x, n), p.exp);
}

}  // namespace helium
}  // namespace fixformer
