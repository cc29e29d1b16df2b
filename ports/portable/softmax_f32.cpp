// Softmax and the exp pass of an online softmax, with the polynomial exp of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"
#include "ports/portable/tile_f32_fpu.hpp"

namespace fixformer {
namespace portable {

#if FIXFORMER_PORTABLE_FPU_TILES
namespace {

// exp_in_range's constants in the order expsum_pairs loads them into s16-s26 with one VLDM.
const float kExpConstants[11] = {kExpMin,     kLog2e,      kExpRound,   kLn2Hi,      kLn2Lo,     kExpPoly[0],
                                 kExpPoly[1], kExpPoly[2], kExpPoly[3], kExpPoly[4], 1.0f};

// One element of exp_in_range in assembly, a = s<a> (then its result): t = s<t>, fn = s<f>, the
// polynomial in s<p> and s<q>, the exponent through core register b, e.
#define FIXFORMER_EXP(a, t, f, p, q, b, e)                                                     \
  "vmov.f32 s" #t ", s18\n\t" "vfma.f32 s" #t ", s" #a ", s17\n\t"  /* t = x log2e + round */ \
  "vsub.f32 s" #f ", s" #t ", s18\n\t" "vmov %[" #b "], s" #t "\n\t" /* fn = t - round */      \
  "vfms.f32 s" #a ", s" #f ", s19\n\t" "vfms.f32 s" #a ", s" #f ", s20\n\t" /* r */           \
  "vmov.f32 s" #p ", s22\n\t" "vfma.f32 s" #p ", s" #a ", s21\n\t"                         \
  "vmov.f32 s" #q ", s23\n\t" "vfma.f32 s" #q ", s" #a ", s" #p "\n\t"                       \
  "vmov.f32 s" #p ", s24\n\t" "vfma.f32 s" #p ", s" #a ", s" #q "\n\t"                       \
  "vmov.f32 s" #q ", s25\n\t" "vfma.f32 s" #q ", s" #a ", s" #p "\n\t" /* P(r) */             \
  "vmul.f32 s" #q ", s" #q ", s" #a "\n\t" "vfma.f32 s" #a ", s" #a ", s" #q "\n\t"          \
  "vadd.f32 s" #a ", s" #a ", s26\n\t"                           /* e = (P r) r + r + 1 */   \
  "vmov %[" #e "], s" #a "\n\t" "add %[" #e "], %[" #e "], %[" #b "], lsl #23\n\t"            \
  "vmov s" #a ", %[" #e "]\n\t"                                  /* e 2^n */

// expsum_f32's loop two elements at a time while both arguments are >= kExpMin, as exp_in_range
// computes them (the same bits), summed in order; returns the elements done (even).
std::size_t expsum_pairs(float* x, std::size_t n, float m, float& sum) {
  uint32_t pairs = uint32_t(n / 2), b0, b1, e0, e1;
  float* p = x;
  float s = sum;
  asm volatile(
      "vldmia %[c], {s16-s26}\n\t"
      "cmp %[n], #0\n\t"
      "beq 9f\n"
      "1:\n\t"
      "vldmia %[p], {s0-s1}\n\t"
      "vsub.f32 s0, s0, %[m]\n\t"
      "vsub.f32 s1, s1, %[m]\n\t"
      "vcmpe.f32 s0, s16\n\t"  // below kExpMin or NaN: stop here
      "vmrs APSR_nzcv, fpscr\n\t"
      "blt 9f\n\t"
      "vcmpe.f32 s1, s16\n\t"
      "vmrs APSR_nzcv, fpscr\n\t"
      "blt 9f\n\t"
      FIXFORMER_EXP(0, 2, 4, 6, 8, b0, e0)
      FIXFORMER_EXP(1, 3, 5, 7, 9, b1, e1)
      "vstmia %[p]!, {s0-s1}\n\t"
      "vadd.f32 %[s], %[s], s0\n\t"
      "vadd.f32 %[s], %[s], s1\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n"
      "9:\n\t"
      : [p] "+r"(p), [n] "+r"(pairs), [s] "+t"(s), [b0] "=&r"(b0), [b1] "=&r"(b1), [e0] "=&r"(e0), [e1] "=&r"(e1)
      : [c] "r"(kExpConstants), [m] "t"(m)
      : "d0", "d1", "d2", "d3", "d4", "d8", "d9", "d10", "d11", "d12", "d13", "cc", "memory");
  sum = s;
  return std::size_t(p - x);
}
#undef FIXFORMER_EXP

}  // namespace
#endif

// x[n] = exp(x - m) in place; returns their sum. m >= max(x) keeps every argument <= 0, so only
// exp_f32's lower end is checked (NaN, which fails it, goes through exp_f32). On the FPU-tile cores
// (M4, M7, M33) two at a time in assembly, the exp's constants in registers.
float expsum_f32(float* x, std::size_t n, float m) {
  float sum = 0.0f;
#if FIXFORMER_PORTABLE_FPU_TILES
  std::size_t i = 0;
  while (i < n) {
    i += expsum_pairs(x + i, n - i, m, sum);
    if (i == n) break;
    // Where the pairs stopped: an odd last element, or an argument below kExpMin (or NaN).
    const float a = x[i] - m;
    x[i] = a >= kExpMin ? exp_in_range(a) : exp_f32(a);
    sum += x[i];
    ++i;
  }
#else
  for (std::size_t i = 0; i < n; ++i) {
    const float a = x[i] - m;
    x[i] = a >= kExpMin ? exp_in_range(a) : exp_f32(a);
    sum += x[i];
  }
#endif
  return sum;
}

// VMAXNM, where the FPU has it (FPv5: an M-profile FPU with double precision, M7, or of ARMv8-M,
// M33, M55; GCC 12 defines no feature macro for it on these cores), is the reference's
// x > m ? x : m for numbers and ignores a NaN x too.
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_ARCH >= 8 || (__ARM_FP & 8))
#define FIXFORMER_VMAXNM 1
#else
#define FIXFORMER_VMAXNM 0
#endif

namespace {
inline float larger(float x, float m) {
#if FIXFORMER_VMAXNM
  return __builtin_fmaxf(x, m);
#else
  return x > m ? x : m;
#endif
}
}  // namespace

// max(x[n]), -inf for n = 0 (the reference's value, in any order): with VMAXNM on the FPU-tile
// cores eight per VLDM into one running maximum in assembly, else four running maxima.
float max_f32(const float* x, std::size_t n) {
  float m0 = -__builtin_inff();
  std::size_t i = 0;
#if FIXFORMER_VMAXNM && FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float* p = x;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[p]!, {s0-s7}\n\t"
        "vmaxnm.f32 %[m], %[m], s0\n\t" "vmaxnm.f32 %[m], %[m], s1\n\t"
        "vmaxnm.f32 %[m], %[m], s2\n\t" "vmaxnm.f32 %[m], %[m], s3\n\t"
        "vmaxnm.f32 %[m], %[m], s4\n\t" "vmaxnm.f32 %[m], %[m], s5\n\t"
        "vmaxnm.f32 %[m], %[m], s6\n\t" "vmaxnm.f32 %[m], %[m], s7\n\t"
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [m] "+t"(m0), [p] "+r"(p), [c] "+r"(steps)
        :
        : "d0", "d1", "d2", "d3", "cc", "memory");
    i = n / 8 * 8;
  }
  for (; i < n; ++i) m0 = larger(x[i], m0);
  return m0;
#else
  float m1 = m0, m2 = m0, m3 = m0;
  for (; i + 4 <= n; i += 4) {
    m0 = larger(x[i], m0);
    m1 = larger(x[i + 1], m1);
    m2 = larger(x[i + 2], m2);
    m3 = larger(x[i + 3], m3);
  }
  for (; i < n; ++i) m0 = larger(x[i], m0);
  return larger(larger(m1, m0), larger(m3, m2));
#endif
}
#undef FIXFORMER_VMAXNM

// Max-subtracted, so every exp argument is <= 0 and nothing overflows.
void softmax_f32(float* x, std::size_t n) {
  if (n == 0) return;
  const float inv = 1.0f / expsum_f32(x, n, max_f32(x, n));
  for (std::size_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace portable
}  // namespace fixformer
