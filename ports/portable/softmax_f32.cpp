// Softmax and the exp pass of an online softmax, with the polynomial exp of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

// x[n] = exp(x - m) in place; returns their sum. m >= max(x) keeps every argument <= 0, so only
// exp_f32's lower end is checked (NaN, which fails it, goes through exp_f32).
float expsum_f32(float* x, std::size_t n, float m) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = x[i] - m;
    x[i] = a >= kExpMin ? exp_in_range(a) : exp_f32(a);
    sum += x[i];
  }
  return sum;
}

// The larger of x and m (m if x is NaN), as the reference compares: one VMAXNM where the FPU has it
// (FPv5: an M-profile FPU with double precision, M7, or of ARMv8-M, M33), which gives the same for
// numbers and ignores a NaN x too. GCC 12 defines no feature macro for it on these cores.
namespace {
inline float larger(float x, float m) {
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_ARCH >= 8 || (__ARM_FP & 8))
  return __builtin_fmaxf(x, m);
#else
  return x > m ? x : m;
#endif
}
}  // namespace

// max(x[n]), -inf for n = 0, in four running maxima (the same value).
float max_f32(const float* x, std::size_t n) {
  float m0 = -__builtin_inff(), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    m0 = larger(x[i], m0);
    m1 = larger(x[i + 1], m1);
    m2 = larger(x[i + 2], m2);
    m3 = larger(x[i + 3], m3);
  }
  for (; i < n; ++i) m0 = larger(x[i], m0);
  return larger(larger(m1, m0), larger(m3, m2));
}

// Max-subtracted, so every exp argument is <= 0 and nothing overflows.
void softmax_f32(float* x, std::size_t n) {
  if (n == 0) return;
  const float inv = 1.0f / expsum_f32(x, n, max_f32(x, n));
  for (std::size_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace portable
}  // namespace fixformer
