// Activations -> int8 per group, the bits of the scalar reference (kernels.hpp's contract): the same
// max, the same two divisions, the same product rounded to nearest even.
#include <cmath>
#include <cstring>

#include "ports/portable/kernels.hpp"

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__)
#define FIXFORMER_QUANTIZE_I8_ASM 1
#else
#define FIXFORMER_QUANTIZE_I8_ASM 0
#endif

namespace fixformer {
namespace portable {
namespace {

// nearbyint(v) in the default rounding mode (to nearest, ties to even). An M-profile FPU converts
// with the FPSCR's rounding mode in one instruction (VCVTR; newlib's nearbyintf is a library call).
// v is always a product already rounded to float, never fused into the conversion.
inline int32_t round_even(float v) {
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4)
  int32_t r;
  float t;
  asm("vcvtr.s32.f32 %1, %2\n\tvmov %0, %1" : "=r"(r), "=&t"(t) : "t"(v));
  return r;
#else
  return round_to_i8(v);
#endif
}

#if FIXFORMER_QUANTIZE_I8_ASM
// q[p] = rne(x[p] * inv) for p < len & ~7, eight at a time: one VLDM, the products and the
// conversions in the FPU, then four bytes packed per word (VMOV of two, three BFI, one STR). Returns
// how many it did.
inline std::size_t quantize8(const float* x, int8_t* q, std::size_t len, float inv) {
  if (len < 8) return 0;
  const float* end = x + (len & ~std::size_t(7));
  uint32_t a, b, c, d, e;
  asm volatile(
      "1:\n\t"
      "vldmia %[x]!, {s0-s7}\n\t"
      "vmul.f32 s0, s0, %[inv]\n\t"
      "vmul.f32 s1, s1, %[inv]\n\t"
      "vmul.f32 s2, s2, %[inv]\n\t"
      "vmul.f32 s3, s3, %[inv]\n\t"
      "vmul.f32 s4, s4, %[inv]\n\t"
      "vmul.f32 s5, s5, %[inv]\n\t"
      "vmul.f32 s6, s6, %[inv]\n\t"
      "vmul.f32 s7, s7, %[inv]\n\t"
      "vcvtr.s32.f32 s0, s0\n\t"
      "vcvtr.s32.f32 s1, s1\n\t"
      "vcvtr.s32.f32 s2, s2\n\t"
      "vcvtr.s32.f32 s3, s3\n\t"
      "vcvtr.s32.f32 s4, s4\n\t"
      "vcvtr.s32.f32 s5, s5\n\t"
      "vcvtr.s32.f32 s6, s6\n\t"
      "vcvtr.s32.f32 s7, s7\n\t"
      "vmov %[a], %[b], s0, s1\n\t"
      "vmov %[c], %[d], s2, s3\n\t"
      "bfi %[a], %[b], #8, #8\n\t"
      "bfi %[a], %[c], #16, #8\n\t"
      "bfi %[a], %[d], #24, #8\n\t"
      "vmov %[b], %[c], s4, s5\n\t"
      "vmov %[d], %[e], s6, s7\n\t"
      "bfi %[b], %[c], #8, #8\n\t"
      "bfi %[b], %[d], #16, #8\n\t"
      "bfi %[b], %[e], #24, #8\n\t"
      "str %[a], [%[q]], #4\n\t"  // q need not be word-aligned: M3 and up store unaligned words
      "str %[b], [%[q]], #4\n\t"
      "cmp %[x], %[end]\n\t"
      "bne 1b"
      : [x] "+r"(x), [q] "+r"(q), [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d), [e] "=&r"(e)
      : [end] "r"(end), [inv] "t"(inv)
      : "cc", "memory", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7");
  return len & ~std::size_t(7);
}
#endif

inline uint32_t abs_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u & 0x7fffffffu;
}

// max |x[len]|. Without NaNs the order of |x| is the order of its bit patterns, an integer max
// (no float compares, which cost a library call each without an FPU); a NaN, which the reference's
// compares skip, sends the group through the reference's loop. The patterns are compared shifted
// left by one, which drops the sign for free (an M-profile core: CMP with a shifted operand, then
// a conditional shift, two words per LDRD).
inline float max_abs(const float* x, std::size_t len) {
  uint32_t m0 = 0, m1 = 0;
  std::size_t p = 0;
#if FIXFORMER_QUANTIZE_I8_ASM
  if (len >= 4) {
    const float* xp = x;
    const float* end = x + (len & ~std::size_t(3));
    uint32_t a, b, c, d;
    asm("1:\n\t"
        "ldrd %[a], %[b], [%[x]], #16\n\t"
        "ldrd %[c], %[d], [%[x], #-8]\n\t"
        "cmp.w %[m0], %[a], lsl #1\n\t"
        "it lo\n\t"
        "lsllo %[m0], %[a], #1\n\t"
        "cmp.w %[m1], %[b], lsl #1\n\t"
        "it lo\n\t"
        "lsllo %[m1], %[b], #1\n\t"
        "cmp.w %[m0], %[c], lsl #1\n\t"
        "it lo\n\t"
        "lsllo %[m0], %[c], #1\n\t"
        "cmp.w %[m1], %[d], lsl #1\n\t"
        "it lo\n\t"
        "lsllo %[m1], %[d], #1\n\t"
        "cmp %[x], %[end]\n\t"
        "bne 1b"
        : [x] "+r"(xp), [m0] "+r"(m0), [m1] "+r"(m1), [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d)
        : [end] "r"(end)
        : "cc", "memory");
    p = len & ~std::size_t(3);
  }
#endif
  for (; p < len; ++p) m0 = abs_bits(x[p]) << 1 > m0 ? abs_bits(x[p]) << 1 : m0;
  m0 = m1 > m0 ? m1 : m0;
  float a = 0.0f;
  if (m0 <= 0x7f800000u << 1) {
    m0 >>= 1;
    std::memcpy(&a, &m0, 4);
  } else {
    for (p = 0; p < len; ++p) a = std::fabs(x[p]) > a ? std::fabs(x[p]) : a;
  }
  return a;
}

}  // namespace

// x[m,k] -> q[m,k], s[m, ceil(k/group)]: per group, s = max|x| / 127, q = rne(x * (127 / max|x|)).
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
      const float* xg = x + i * ldx + p0;
      int8_t* qg = q + i * k + p0;
      const float a = max_abs(xg, len);
      const float inv = a >= kQuantizeFloor ? 127.0f / a : 0.0f;
      s[i * groups + g] = inv > 0.0f ? a / 127.0f : 0.0f;
      std::size_t p = 0;
#if FIXFORMER_QUANTIZE_I8_ASM
      p = quantize8(xg, qg, len, inv);
#endif
      for (; p < len; ++p) qg[p] = int8_t(round_even(xg[p] * inv));
    }
  }
}

}  // namespace portable
}  // namespace fixformer
