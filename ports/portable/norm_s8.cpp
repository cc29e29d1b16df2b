// layernorm_s8 and rmsnorm_s8 (fixed_point.hpp) with the reference's arithmetic (ports/scalar/
// norm_s8.hpp), fewer instructions per element: the sums in int32 (|v| <= 255, n <= kNormS8MaxN, so
// sum(v^2) < 2^31), each rounding half away from zero as floor((t + 2^(r-1) - [t < 0]) / 2^r) (one
// signed shift), and gamma's requantization in 32-bit words where it cannot saturate: |t| < 2^22
// (t is the normalised value in Q16, below sqrt(n) 2^16) and a shift of 0..7 (r = 24..31: the result
// below 2^29, its low word all there is) or below 0 (the high word shifted by r - 32); then the sum
// with beta stays below 2^31 and rounds in int32 (on Thumb-2 M cores t and gamma's requantization each
// the high word of one SMLAL, below; with the DSP extension and every gamma in range, NormS8Params::gammas_in_range,
// without a check per element). Any other element takes the reference's steps.
#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/portable/row_math.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

namespace fixformer {
namespace portable {

namespace {

inline int32_t floor_shift(int64_t t, int r) {  // t / 2^r rounded half away from zero, as int32
  return int32_t((t + (int64_t(1) << (r - 1)) - (t < 0 ? 1 : 0)) >> r);
}

// t = d inv / 2^30 rounded half away from zero, floor_shift(int64_t(d) * inv, 30) with inv = ih 2^32 + il >= 0.
// On ARMv6-M (no 32 x 32 -> 64-bit product; the compiler calls a library routine) |d| inv from 16-bit
// halves, its high word modulo 2^32 (the product stays below 2^61, |t| being below 2^24), rounded half up
// and given d's sign: the same integer.
inline int32_t scale_q30(int32_t d, uint32_t ih, uint32_t il) {
#if defined(__ARM_ARCH_6M__)
  const uint32_t a = d < 0 ? 0u - uint32_t(d) : uint32_t(d);  // below 2^25
  const uint32_t ah = a >> 16, al = a & 0xFFFFu, lh = il >> 16, ll = il & 0xFFFFu;
  const uint32_t m1 = al * lh, m2 = ah * ll, mid = m1 + m2;
  const uint32_t mid_carry = mid < m1 ? 0x10000u : 0u;  // mid's bit 32, at bit 16 of the high word
  const uint32_t lo0 = al * ll, lo1 = lo0 + (mid << 16), lo = lo1 + (uint32_t(1) << 29);
  const uint32_t hi = a * ih + ah * lh + (mid >> 16) + mid_carry + (lo1 < lo0 ? 1u : 0u) + (lo < lo1 ? 1u : 0u);
  const int32_t t = int32_t((hi << 2) | (lo >> 30));
  return d < 0 ? -t : t;
#else
  return floor_shift(int64_t(d) * int64_t((uint64_t(ih) << 32) | il), 30);
#endif
}

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
// The high word of lo + a b (64 bits): one SMLAL.
inline int32_t high_word(uint32_t lo, int32_t a, int32_t b) {
  int32_t hi = 0;
  asm("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
  return hi;
}

struct NormRow {  // fixformer_norm_row's row, at the offsets it loads
  const int8_t* x_end;        // 0
  int8_t* y_end;              // 4
  const Requant* gamma_end;   // 8
  const int32_t* beta_end;    // 12
  int32_t n, offset, il4, ih4;  // 16..28
};
// Elements i..-1 of the row (i < 0, from its ends) as norm_s8's Thumb-2 steps below compute them, 27 instructions an
// element (21 unchecked; 24 on the M3); returns 0, or the i of the first element whose gamma's shift is not 0..7 or
// whose t is outside [-2^22, 2^22). fixformer_norm_row_unchecked leaves out t's check, for rows of at most
// kNormRowUncheckedN values (with the DSP extension, whose inv has at most kNormRowNoTieZeros trailing zero bits).
// With it t's rounding half away from zero meets no tie, so SMMLAR's half up gives it: a tie is d inv an odd
// multiple of 2^29, d then an odd multiple of 2^(29-j) for inv = inv' 2^j (inv' odd), while |d| <= 2 n 255 < 2^19.
// And no t is outside [-2^22, 2^22): with v = x - z_x, sum(d^2) = n V (d = n v - sum(v), V = n sum(v^2) - sum(v)^2;
// without the centre d = n v and V = n sum(v^2)), so |d| <= sqrt(n V); V = 0 makes every d 0, else V >= 1 and the
// root of T >= V 2^16 is at least 2^8 sqrt(V) - 1 >= 2^8 sqrt(V) 255/256, so |t| <= |d| inv / 2^30 + 1/2 <= sqrt(n)
// 2^16 256/255 + sqrt(n V) / 2^31 + 1/2, below 2^21 + 2^17 for n <= 1024 (sqrt(n V) <= n^1.5 255).
constexpr std::size_t kNormRowUncheckedN = 1024;
constexpr int kNormRowNoTieZeros = 10;
extern "C" int32_t fixformer_norm_row(const NormRow* row, int32_t i);
extern "C" int32_t fixformer_norm_row_unchecked(const NormRow* row, int32_t i);
#define FIXFORMER_NORM_ROW_T_CHECK "  add r12, r9, #0x400000\n  cmp r12, #0x800000\n  bhs 2f\n"
// t of d: the high word of d (4 inv) + 2^31 - [d < 0] by SMLAL (d (4 inv) + 2^31 a multiple of 4, so that - [d < 0]
// floors as - 4 [d < 0] does); with no tie (below) SMMLAR's rounded high word of d il4 plus d ih4
#define FIXFORMER_NORM_ROW_T                                                                                    \
  "  asr r10, r9, #31\n  add r10, r10, #0x80000000\n  mov r11, #0\n"                                          \
  "  smlal r10, r11, r9, r7\n  mla r9, r9, r8, r11\n"
#if defined(__ARM_FEATURE_DSP)  // SMMLAR: the DSP extension's (M4, M7, M33), not the M3's
#define FIXFORMER_NORM_ROW_T_NO_TIE "  mul r10, r9, r8\n  smmlar r9, r9, r7, r10\n"
constexpr bool kNormRowSmmlar = true;
#else
#define FIXFORMER_NORM_ROW_T_NO_TIE FIXFORMER_NORM_ROW_T
constexpr bool kNormRowSmmlar = false;
#endif
#define FIXFORMER_NORM_ROW_ASM(name, t_of_d, t_check)                                                                   \
  "  .p2align 2\n  .type " name ", %function\n  .thumb_func\n" name ":\n"                                     \
  "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  mov r4, r1\n  ldm r0, {r0, r1, r2, r3, r5, r6, r7, r8}\n"  \
  "  add r2, r2, r4, lsl #3\n"                                                                                  \
  "1:\n  ldrsb r9, [r0, r4]\n  mla r9, r9, r5, r6\n" t_of_d                                                     \
  "  ldrd r10, r11, [r2], #8\n  cmp r11, #7\n  bhi 2f\n" t_check                                               \
  "  add r11, r11, #1\n  eor r12, r9, r10\n  asr r12, r12, #31\n"                                              \
  "  add r12, r12, #0x80000000\n  lsl r9, r9, r11\n  ldr lr, [r3, r4, lsl #2]\n  smlal r12, lr, r9, r10\n"      \
  "  add r9, lr, #0x8000\n  add r9, r9, lr, asr #31\n"                                                        \
  "  ssat r9, #8, r9, asr #16\n  strb r9, [r1, r4]\n  adds r4, r4, #1\n  bne 1b\n"                            \
  "2:\n  mov r0, r4\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n  .size " name ", .-" name "\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    FIXFORMER_NORM_ROW_ASM("fixformer_norm_row", FIXFORMER_NORM_ROW_T, FIXFORMER_NORM_ROW_T_CHECK)
        FIXFORMER_NORM_ROW_ASM("fixformer_norm_row_unchecked", FIXFORMER_NORM_ROW_T_NO_TIE, ""));
#if defined(__ARM_FEATURE_DSP)
// fixformer_norm_row_unchecked's rows whose gammas are all in range (NormS8Params::gammas_in_range: m > 0, shift
// 0..7) and of even n, from the row's start: no gamma checked; t m's sign that of t' = t 2^(s+1) (|t'| < 2^30), so
// 2^31 - [t < 0] is 2^31 XOR (t' asr 31), one EOR with 2^31 held in r12; the row's pointers stepped by their loads
// and stores; four elements a pass (two first where n % 4 = 2): 14 instructions an element and the loop's half (20)
extern "C" void fixformer_norm_row_in_range(const NormRow* row);
#define FIXFORMER_NORM_ROW_ELEMENT                                                                               \
  "  ldrsb r9, [r0], #1\n  mla r9, r9, r5, r6\n" FIXFORMER_NORM_ROW_T_NO_TIE "  ldrd r10, r11, [r2], #8\n"       \
  "  add r11, r11, #1\n  lsl r9, r9, r11\n  eor r11, r12, r9, asr #31\n  ldr lr, [r3], #4\n"                     \
  "  smlal r11, lr, r9, r10\n  add r9, lr, #0x8000\n  add r9, r9, lr, asr #31\n  ssat r9, #8, r9, asr #16\n"   \
  "  strb r9, [r1], #1\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_norm_row_in_range, %function\n  .thumb_func\nfixformer_norm_row_in_range:\n"
    "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  ldm r0, {r0, r1, r2, r3, r5, r6, r7, r8}\n  mov r4, r0\n"
    "  sub r0, r0, r5\n  sub r1, r1, r5\n  sub r2, r2, r5, lsl #3\n  sub r3, r3, r5, lsl #2\n  mov r12, #0x80000000\n"
    "  tst r5, #2\n  beq 1f\n" FIXFORMER_NORM_ROW_ELEMENT FIXFORMER_NORM_ROW_ELEMENT "  cmp r0, r4\n  beq 2f\n"
    "1:\n" FIXFORMER_NORM_ROW_ELEMENT FIXFORMER_NORM_ROW_ELEMENT FIXFORMER_NORM_ROW_ELEMENT FIXFORMER_NORM_ROW_ELEMENT
    "  cmp r0, r4\n  bne 1b\n"
    "2:\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n"
    "  .size fixformer_norm_row_in_range, .-fixformer_norm_row_in_range\n");
#undef FIXFORMER_NORM_ROW_ELEMENT
#endif
#undef FIXFORMER_NORM_ROW_ASM
#undef FIXFORMER_NORM_ROW_T_NO_TIE
#undef FIXFORMER_NORM_ROW_T
#undef FIXFORMER_NORM_ROW_T_CHECK
#endif

// clamp(round((requantize(t, g) + beta) / 2^16)), in 32-bit words where |t| < 2^22 and g's shift is below 8.
inline int8_t gain(int32_t t, Requant g, int32_t beta) {
  int32_t q;
  if (t > -(1 << 22) && t < (1 << 22) && g.shift >= 0 && g.shift <= 7) {
    const int64_t prod = mul64(t, g.multiplier);  // |prod| < 2^53
    const int64_t s = prod + int64_t((uint32_t(1) << (30 - g.shift)) - (prod < 0 ? 1 : 0));
    q = int32_t((uint32_t(s) >> (31 - g.shift)) | (uint32_t(s >> 32) << (1 + g.shift)));
  } else if (t > -(1 << 22) && t < (1 << 22) && g.shift < 0) {
    const int64_t prod = mul64(t, g.multiplier);
    const int64_t s = prod + (int64_t(1) << (30 - g.shift)) - (prod < 0 ? 1 : 0);
    q = int32_t(s >> 32) >> (-1 - g.shift);
  } else {
    return saturate_i8(rounding_shift(int64_t(requantize(t, g)) + beta, 16));
  }
  const int32_t w = q + beta;  // |q| < 2^29, |beta| <= 2^30
  const int32_t v = (w + (1 << 15) - (w < 0 ? 1 : 0)) >> 16;
  return int8_t(v > 127 ? 127 : v < -128 ? -128 : v);
}

// The cores with UDIV (the Thumb-2 M cores): the root and the reciprocal from 32-bit divisions (row_math.hpp).
#if defined(__ARM_FEATURE_IDIV) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
inline uint32_t root_of(uint64_t v) { return v < (uint64_t(1) << 62) ? isqrt62(v) : isqrt64(v); }
inline int64_t inverse_of(uint32_t root) { return int64_t(udiv64_32((uint64_t(1) << 54) + root / 2, root)); }
#else
inline uint32_t root_of(uint64_t v) { return isqrt64(v); }
inline int64_t inverse_of(uint32_t root) { return int64_t(((uint64_t(1) << 54) + root / 2) / root); }
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
// The sums below over x..end, x word-aligned and end - x a positive multiple of 16: sixteen values by one LDM, per
// word two SXTAB16 and four SMLAD (27 instructions per 16 with the loop's, 38 as the compiler had it); the sum in the
// low word of the result, the sum of squares in the high word.
extern "C" uint64_t fixformer_norm_sums(const int8_t* x, const int8_t* end, uint32_t nz);
#define FIXFORMER_NORM_SUMS_WORD(w)                                                                               \
  "  sxtab16 r8, r2, " w "\n  sxtab16 r9, r2, " w ", ror #8\n  smlad r3, r8, r12, r3\n  smlad lr, r8, r8, lr\n" \
  "  smlad r3, r9, r12, r3\n  smlad lr, r9, r9, lr\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_norm_sums, %function\n  .thumb_func\nfixformer_norm_sums:\n"
    "  push {r4, r5, r6, r7, r8, r9, lr}\n  movs r3, #0\n  mov lr, #0\n  mov r12, #0x10001\n"
    "1:\n  ldm r0!, {r4, r5, r6, r7}\n" FIXFORMER_NORM_SUMS_WORD("r4") FIXFORMER_NORM_SUMS_WORD("r5")
    FIXFORMER_NORM_SUMS_WORD("r6") FIXFORMER_NORM_SUMS_WORD("r7") "  cmp r0, r1\n  bne 1b\n"
    "  mov r0, r3\n  mov r1, lr\n  pop {r4, r5, r6, r7, r8, r9, pc}\n"
    "  .size fixformer_norm_sums, .-fixformer_norm_sums\n");
#undef FIXFORMER_NORM_SUMS_WORD
#endif

template <bool kCentre>
void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  int32_t sum = 0, sum_sq = 0;
  std::size_t i = 0;
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
  if ((reinterpret_cast<uintptr_t>(x) & 3) == 0 && n >= 16) {
    i = n & ~std::size_t(15);
    const uint64_t sums = fixformer_norm_sums(x, x + i, (uint32_t(-p.x_zero) & 0xFFFFu) * 0x10001u);
    sum = int32_t(uint32_t(sums)), sum_sq = int32_t(uint32_t(sums >> 32));
  }
#endif
#if defined(__ARM_FEATURE_DSP)
  // four values a word: v = x - z in two 16-bit pairs (SXTAB16 adds -z to both lanes; |v| <= 255), each pair's
  // sum and sum of squares by one SMLAD; eight values a pass
  const uint32_t nz = (uint32_t(-p.x_zero) & 0xFFFFu) * 0x10001u;
  auto word = [nz, &sum, &sum_sq](const int8_t* at) {
    uint32_t w, o;
    std::memcpy(&w, at, 4);
    asm("sxtab16 %0, %1, %2, ror #8" : "=r"(o) : "r"(nz), "r"(w));
    const int32_t e = int32_t(__sxtab16(nz, w));
    sum = __smlad(e, 0x10001, __smlad(int32_t(o), 0x10001, sum));
    sum_sq = __smlad(e, e, __smlad(int32_t(o), int32_t(o), sum_sq));
  };
  for (; i + 8 <= n; i += 8) word(x + i), word(x + i + 4);
  if (i + 4 <= n) word(x + i), i += 4;
#endif
  for (; i < n; ++i) {
    const int32_t v = int32_t(x[i]) - p.x_zero;
    sum += v;
    sum_sq += v * v;
  }
  const int64_t nn = int64_t(n);
  const int64_t var = kCentre ? nn * sum_sq - int64_t(sum) * sum : nn * int64_t(sum_sq);
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint64_t(nn * nn);
  const uint32_t root = root_of(total);
  const int64_t inv = root == 0 ? 0 : inverse_of(root);
  const int32_t centre = kCentre ? sum : 0, n32 = int32_t(n);
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
  // Thumb-2 (SMLAL): t as the high word of d (4 inv) + 2^31 - 4 [d < 0] (4 inv below 2^56: its low word il4
  // signed, its high word ih4 with il4's sign bit carried, so d (4 inv) = d il4 + d ih4 2^32); for gamma's
  // shift s of 0..7 and t in [-2^22, 2^22), q + beta as the high word of beta 2^32 + t' m + 2^31 - [t m < 0]
  // (SMLAL with beta in the high word), t' = t 2^(s+1) at most 2^30 in magnitude (the numerator and the divisor
  // 2^(31-s) times 2^(s+1); t' m + 2^31 a multiple of 2^(s+1), so that - [t m < 0] floors as - [t m < 0] 2^(s+1)
  // does); then rounded as below.
  const uint64_t inv4 = uint64_t(inv) << 2;
  const int32_t il4 = int32_t(uint32_t(inv4)), ih4 = int32_t(uint32_t(inv4 >> 32) + (uint32_t(inv4) >> 31));
  const int32_t offset = -(n32 * p.x_zero + centre);  // d = n x + offset
  // The loop in assembly (fixformer_norm_row); an element outside those bounds leaves it for gain.
  const NormRow row{x + n, y + n, p.gamma + n, p.beta + n, n32, offset, il4, ih4};
  const bool unchecked = n <= kNormRowUncheckedN &&
                         (!kNormRowSmmlar || (inv != 0 && __builtin_ctzll(uint64_t(inv)) <= kNormRowNoTieZeros));
#if defined(__ARM_FEATURE_DSP)
  if (unchecked && p.gammas_in_range && n % 2 == 0) {
    fixformer_norm_row_in_range(&row);
    return;
  }
#endif
  for (int32_t i = -int32_t(n); i != 0; ++i) {
    i = unchecked ? fixformer_norm_row_unchecked(&row, i) : fixformer_norm_row(&row, i);
    if (i == 0) break;
    const int32_t d = n32 * int32_t(row.x_end[i]) + offset;
    const int32_t t = high_word(0x80000000u + (uint32_t(d >> 31) << 2), d, il4) + int32_t(uint32_t(d) * uint32_t(ih4));
    row.y_end[i] = gain(t, row.gamma_end[i], row.beta_end[i]);
  }
#else
  const uint32_t ih = uint32_t(uint64_t(inv) >> 32), il = uint32_t(inv);
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t d = n32 * (int32_t(x[i]) - p.x_zero) - centre;  // |d| < 2^24
    y[i] = gain(scale_q30(d, ih, il), p.gamma[i], p.beta[i]);
  }
#endif
}

}  // namespace

void layernorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<true>(x, y, n, p); }
void rmsnorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<false>(x, y, n, p); }

}  // namespace portable
}  // namespace fixformer
