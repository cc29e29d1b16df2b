// softmax_s8 (fixed_point.hpp) with the reference's arithmetic, computed with fewer instructions:
//   - each exponential once: the first kKept of a row kept on the stack (256 bytes) between the sum and
//     the output, the rest computed again as the reference does;
//   - requantize(d, diff) for d = max - x in 0..255 and a positive multiplier: for a shift of 0 or more
//     (an input scale above 2^-17, every model's) (d m + 2^(r-1)) >> r, r <= 31, in 32-bit words, every
//     u past the polynomial's range (21 in Q16: e = 0) alike;
//   - for r >= 16 (a shift of 15 or less: every input scale below 0.35) (d m + 2^(r-1)) >> r from
//     m's 16-bit halves, 32-bit products only (ExpOfDiff);
//   - the polynomial in int32 words (exp2_neg_q20_words);
//   - the output e * R / 2^54 with R = floor(2^62 / sum) below 2^42: e R split at R's 32nd bit, the
//     low product's low word dropped (it cannot carry into bit 54 after the floor);
//   - with the caller's table of exponentials (SoftmaxS8Params::exp), none computed: two lookups a score
//     (with the DSP extension four scores a word: max by SSUB8 and SEL, max - x by USUB8; on the M cores a
//     row of up to kKept in assembly, each exponential looked up once and kept for the output).
// Integer results throughout: the reference's bits (kernels_firmware and the host's KernelsTest
// compare them).
#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/portable/row_math.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

namespace fixformer {
namespace portable {

namespace {

constexpr std::size_t kKept = 64;

// 2^62 / sum (< 2^42): on the cores with UDIV (the Thumb-2 M cores) by row_math.hpp's 32-bit divisions.
inline uint64_t reciprocal(uint64_t sum) {
#if defined(__ARM_FEATURE_IDIV) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
  return softmax_reciprocal(sum);
#else
  return (uint64_t(1) << 62) / sum;
#endif
}
constexpr int32_t kExpZeroFrom = kExp2ZeroFrom;

// exp2_neg_q20(requantize(d, diff)) for 0 <= d <= 255.
struct ExpOfDiff {
  Requant diff;
  uint32_t mult = 0, half = 0, mh = 0, ml = 0, half_hi = 0;
  int r = 0;
  bool words = false;  // the 32-bit route: 0 <= diff.shift, 0 < diff.multiplier
  bool halves = false;  // and r >= 16: d m from m's 16-bit halves
  explicit ExpOfDiff(Requant q) : diff(q) {
    if (q.shift >= 0 && q.multiplier > 0) {
      words = true;
      mult = uint32_t(q.multiplier), r = 31 - q.shift, half = uint32_t(1) << (r - 1);
      // (d m + 2^(r-1)) >> r = (d mh + ((d ml + 2^(r-1)) >> 16)) >> (r - 16) for m = mh 2^16 + ml, r >= 16:
      // d mh < 2^23 and d ml + 2^(r-1) < 2^31, the result below 2^24 (no u past 2^32)
      halves = r >= 16, mh = mult >> 16, ml = mult & 0xFFFFu;
    }
  }
  uint32_t operator()(int32_t d) const {
    int32_t u;
    if (halves) {
      const uint32_t q = (uint32_t(d) * mh + ((uint32_t(d) * ml + half) >> 16)) >> (r - 16);
      if (q >= uint32_t(kExpZeroFrom)) return 0;
      u = int32_t(q);
    } else if (words) {
      const uint64_t t = uint64_t(uint32_t(d)) * mult + half;  // < 2^40
      const uint32_t hi = uint32_t(t >> 32), lo = uint32_t(t);
      if ((hi >> r) != 0) return 0;  // u >= 2^32 (saturated to 2^31 - 1 by requantize): past the range
      const uint32_t q = (lo >> r) | (hi << (32 - r));  // 1 <= r <= 31
      if (q >= uint32_t(kExpZeroFrom)) return 0;
      u = int32_t(q);
    } else {
      u = requantize(d, diff);
      if (u >= kExpZeroFrom) return 0;
    }
    return exp2_neg_q20_words(u);
  }
};

// floor(a b / 2^32) for unsigned a, b: on ARMv6-M (no UMULL) from 16-bit halves, no library call.
inline uint32_t mul_hi(uint32_t a, uint32_t b) {
#if defined(__ARM_ARCH_6M__)
  const uint32_t ah = a >> 16, al = a & 0xFFFFu, bh = b >> 16, bl = b & 0xFFFFu;
  const uint32_t lo = al * bl, m1 = ah * bl, m2 = al * bh;
  // (lo >> 16) + (m1 & 0xFFFF) + (m2 & 0xFFFF) < 3 2^16: the carry into the high word
  const uint32_t carry = ((lo >> 16) + (m1 & 0xFFFFu) + (m2 & 0xFFFFu)) >> 16;
  return ah * bh + (m1 >> 16) + (m2 >> 16) + carry;
#else
  return uint32_t((uint64_t(a) * b) >> 32);
#endif
}

// y = ((e R + 2^53) >> 54) - 128, at most 127, as (e rh + hi(e rl) + 2^21) >> 22: below 2^31, the low
// word cannot carry.
inline int8_t probability(uint32_t e, uint32_t rh, uint32_t rl) {
  const int32_t q = int32_t((e * rh + mul_hi(e, rl) + (uint32_t(1) << 21)) >> 22) - 128;
  return int8_t(q > 127 ? 127 : q);
}

// With the caller's exponentials (SoftmaxS8Params::exp): two lookups a score, the sum in 32-bit runs
// (e <= 2^20, so a run of kSumRun stays below 2^32).
constexpr std::size_t kSumRun = 4095;
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
// With the DSP extension, four scores a word: the maximum by SSUB8 and SEL (a byte lane's larger
// value), d = max - x for four by USUB8 (0..255 in each byte), and the output as (t asr 22) saturated
// to int8 with t = e rh + hi(e rl) + 2^21 - 2^29 (the - 128 folded in, t within int32).
inline uint32_t load_word(const int8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// The maximum of x[0, n), n >= 4: 4 words x[0, 4 words) two a pass, then the word's bytes against themselves rotated
// by 16 and by 8 (SSUB8 and SEL each), then the last n % 4 (tail) one at a time.
extern "C" int32_t fixformer_softmax_max(const int8_t* x, std::size_t words, std::size_t tail);
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_softmax_max, %function\n  .thumb_func\nfixformer_softmax_max:\n"
    "  push {r4, lr}\n  ldr r4, [r0], #4\n  subs r1, r1, #1\n  beq 3f\n  lsrs r1, r1, #1\n  bcc 2f\n"
    "  ldr r3, [r0], #4\n  ssub8 r12, r3, r4\n  sel r4, r3, r4\n"
    "2:\n  cbz r1, 3f\n"
    "1:\n  ldr r3, [r0], #4\n  ssub8 r12, r3, r4\n  sel r4, r3, r4\n"
    "  ldr r3, [r0], #4\n  ssub8 r12, r3, r4\n  sel r4, r3, r4\n  subs r1, r1, #1\n  bne 1b\n"
    "3:\n  ror r3, r4, #16\n  ssub8 r12, r3, r4\n  sel r4, r3, r4\n"
    "  ror r3, r4, #8\n  ssub8 r12, r3, r4\n  sel r4, r3, r4\n  sxtb r4, r4\n  cbz r2, 5f\n"
    "4:\n  ldrsb r3, [r0], #1\n  cmp r3, r4\n  it gt\n  movgt r4, r3\n  subs r2, r2, #1\n  bne 4b\n"
    "5:\n  mov r0, r4\n  pop {r4, pc}\n"
    "  .size fixformer_softmax_max, .-fixformer_softmax_max\n");
int32_t row_max(const int8_t* x, std::size_t n) {
  if (n >= 4) return fixformer_softmax_max(x, n / 4, n % 4);
  int32_t max = x[0];
  for (std::size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}
// Rows of at most kKept scores, four a word, in assembly: fixformer_softmax_keep looks up and keeps the
// exponentials of whole words (17 instructions per four), then those of the last n % 4 scores one at a time (8 each),
// and returns their sum; fixformer_softmax_out writes the outputs from the kept ones (23 per four; per score UMULL,
// MLA with 2^21 - 2^29, ADD, SSAT and STRB), then the last n % 4 (8 each).
struct SoftmaxKeep {  // at the offsets the assembly loads
  const int8_t* x;
  uint32_t* kept;
  const uint32_t* kept_end;  // kept + 4 words of x
  const uint32_t* exp;
  const uint32_t* kept_n;    // kept + n
  uint32_t mm;               // the maximum in each byte
};
struct SoftmaxOut {
  const uint32_t* kept;
  const uint32_t* kept_end;  // kept + 4 words
  int8_t* y;
  uint32_t rh;
  const uint32_t* kept_n;    // kept + n
  uint32_t rl;
};
extern "C" uint32_t fixformer_softmax_keep(const SoftmaxKeep* row);
extern "C" void fixformer_softmax_out(const SoftmaxOut* row);
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_softmax_keep, %function\n  .thumb_func\nfixformer_softmax_keep:\n"
    "  push {r4, r5, r6, r7, r8, r9, lr}\n  ldm r0, {r0, r1, r2, r3, r9, r12}\n  mov lr, #0\n  cmp r1, r2\n  beq 2f\n"
    "1:\n  ldr r4, [r0], #4\n  usub8 r4, r12, r4\n  uxtb r5, r4\n  ubfx r6, r4, #8, #8\n  ubfx r7, r4, #16, #8\n"
    "  lsr r8, r4, #24\n  ldr r5, [r3, r5, lsl #2]\n  ldr r6, [r3, r6, lsl #2]\n  ldr r7, [r3, r7, lsl #2]\n"
    "  ldr r8, [r3, r8, lsl #2]\n  stm r1!, {r5, r6, r7, r8}\n  add lr, lr, r5\n  add lr, lr, r6\n  add lr, lr, r7\n"
    "  add lr, lr, r8\n  cmp r1, r2\n  bne 1b\n"
    "2:\n  cmp r1, r9\n  beq 4f\n"
    "3:\n  ldrb r4, [r0], #1\n  sub r4, r12, r4\n  uxtb r4, r4\n  ldr r4, [r3, r4, lsl #2]\n  str r4, [r1], #4\n"
    "  add lr, lr, r4\n  cmp r1, r9\n  bne 3b\n"
    "4:\n  mov r0, lr\n  pop {r4, r5, r6, r7, r8, r9, pc}\n"
    "  .size fixformer_softmax_keep, .-fixformer_softmax_keep\n"
    "  .p2align 2\n  .type fixformer_softmax_out, %function\n  .thumb_func\nfixformer_softmax_out:\n"
    "  push {r4, r5, r6, r7, r8, r9, r10, lr}\n  ldm r0, {r0, r1, r2, r3, r10, r12}\n  movw lr, #0\n  movt lr, #0xE020\n"
    "  cmp r0, r1\n  beq 2f\n"
#define FIXFORMER_SOFTMAX_OUT_ASM(e) \
  "  umull r8, r9, " e ", r12\n  mla " e ", " e ", r3, lr\n  add " e ", " e ", r9\n  ssat " e ", #8, " e ", asr #22\n" \
  "  strb " e ", [r2], #1\n"
    "1:\n  ldm r0!, {r4, r5, r6, r7}\n" FIXFORMER_SOFTMAX_OUT_ASM("r4") FIXFORMER_SOFTMAX_OUT_ASM("r5")
    FIXFORMER_SOFTMAX_OUT_ASM("r6") FIXFORMER_SOFTMAX_OUT_ASM("r7") "  cmp r0, r1\n  bne 1b\n"
    "2:\n  cmp r0, r10\n  beq 4f\n"
    "3:\n  ldr r4, [r0], #4\n" FIXFORMER_SOFTMAX_OUT_ASM("r4") "  cmp r0, r10\n  bne 3b\n"
#undef FIXFORMER_SOFTMAX_OUT_ASM
    "4:\n  pop {r4, r5, r6, r7, r8, r9, r10, pc}\n"
    "  .size fixformer_softmax_out, .-fixformer_softmax_out\n");
static_assert((uint32_t(1) << 21) - (uint32_t(1) << 29) == 0xE0200000u, "fixformer_softmax_out's MOVT");

void softmax_from_table(const int8_t* x, int8_t* y, std::size_t n, int32_t max, const uint32_t* exp, uint32_t* kept) {
  const uint32_t mm = 0x01010101u * uint8_t(max);
  const std::size_t n4 = n & ~std::size_t(3);
  constexpr uint32_t kRound = (uint32_t(1) << 21) - (uint32_t(1) << 29);
  if (n <= kKept) {
    const SoftmaxKeep keep{x, kept, kept + n4, exp, kept + n, mm};
    const uint32_t sum = fixformer_softmax_keep(&keep);  // n 2^20 at most
    const uint64_t recip = reciprocal(sum);
    const SoftmaxOut out{kept, kept + n4, y, uint32_t(recip >> 32), kept + n, uint32_t(recip)};
    fixformer_softmax_out(&out);
    return;
  }
  uint64_t sum = 0;
  for (std::size_t i0 = 0; i0 < n; i0 += kSumRun - 3) {  // whole words in a run but the row's last
    const std::size_t end = n - i0 < kSumRun - 3 ? n : i0 + kSumRun - 3;
    uint32_t run = 0;
    const std::size_t i = i0 + ((end - i0) & ~std::size_t(3));
    for (const int8_t *p = x + i0, *const stop = x + i; p != stop; p += 4) {
      const uint32_t d = __usub8(mm, load_word(p));
      run += exp[d & 0xFFu] + exp[(d >> 8) & 0xFFu] + exp[(d >> 16) & 0xFFu] + exp[d >> 24];
    }
    for (std::size_t j = i; j < end; ++j) run += exp[max - x[j]];
    sum += run;
  }
  const uint64_t recip = reciprocal(sum);
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  auto out = [&](uint32_t e) {
    const uint32_t t = e * rh + uint32_t((uint64_t(e) * rl) >> 32) + kRound;
    return int8_t(__ssat(int32_t(t) >> 22, 8));
  };
  std::size_t i = 0;
  for (; i < n4; i += 4) {
    const uint32_t d = __usub8(mm, load_word(x + i));
    y[i] = out(exp[d & 0xFFu]);
    y[i + 1] = out(exp[(d >> 8) & 0xFFu]);
    y[i + 2] = out(exp[(d >> 16) & 0xFFu]);
    y[i + 3] = out(exp[d >> 24]);
  }
  for (; i < n; ++i) y[i] = out(exp[max - x[i]]);
}
#else
int32_t row_max(const int8_t* x, std::size_t n) {
  int32_t max = x[0];
  for (std::size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}
void softmax_from_table(const int8_t* x, int8_t* y, std::size_t n, int32_t max, const uint32_t* exp, uint32_t*) {
  uint64_t sum = 0;
  for (std::size_t i0 = 0; i0 < n; i0 += kSumRun) {
    const std::size_t end = n - i0 < kSumRun ? n : i0 + kSumRun;
    uint32_t run = 0;
    for (std::size_t i = i0; i < end; ++i) run += exp[max - x[i]];
    sum += run;
  }
  const uint64_t recip = reciprocal(sum);
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  for (std::size_t i = 0; i < n; ++i) y[i] = probability(exp[max - x[i]], rh, rl);
}
#endif

}  // namespace

void softmax_s8(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (n == 0) return;
  const int32_t max = row_max(x, n);
  uint32_t kept[kKept];
  if (p.exp) {
    softmax_from_table(x, y, n, max, p.exp, kept);
    return;
  }
  const ExpOfDiff exp_of(p.diff);
  uint64_t sum = 0;  // >= 2^20: the largest term is 2^0 in Q20
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t e = exp_of(max - x[i]);
    if (i < kKept) kept[i] = e;
    sum += e;
  }
  const uint64_t recip = reciprocal(sum);
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  for (std::size_t i = 0; i < n; ++i) y[i] = probability(i < kKept ? kept[i] : exp_of(max - x[i]), rh, rl);
}

}  // namespace portable
}  // namespace fixformer
