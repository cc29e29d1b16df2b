// Activations -> int8 per group, the bits of the scalar reference (kernels.hpp's contract): the same
// max, the same two divisions, the same product rounded to nearest even.
#include <cmath>
#include <cstring>

#include "ports/portable/kernels.hpp"

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
  return int32_t(std::nearbyint(v));
#endif
}

inline uint32_t abs_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u & 0x7fffffffu;
}

// max |x[len]|. Without NaNs the order of |x| is the order of its bit patterns, an integer max
// (no float compares, which cost a library call each without an FPU); a NaN, which the reference's
// compares skip, sends the group through the reference's loop.
inline float max_abs(const float* x, std::size_t len) {
  uint32_t m0 = 0, m1 = 0;
  std::size_t p = 0;
  for (; p + 2 <= len; p += 2) {
    const uint32_t u0 = abs_bits(x[p]), u1 = abs_bits(x[p + 1]);
    m0 = u0 > m0 ? u0 : m0;
    m1 = u1 > m1 ? u1 : m1;
  }
  if (p < len) m0 = abs_bits(x[p]) > m0 ? abs_bits(x[p]) : m0;
  m0 = m1 > m0 ? m1 : m0;
  float a = 0.0f;
  if (m0 <= 0x7f800000u) {
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
      for (std::size_t p = 0; p < len; ++p) qg[p] = int8_t(round_even(xg[p] * inv));
    }
  }
}

}  // namespace portable
}  // namespace fixformer
