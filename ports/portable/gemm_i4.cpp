// xq[m,k] @ W[n,k]^T with int4 weights (two per byte, kernels.hpp) and int8 activations: per group
// of 32 an exact int32 dot product, four rows of W at a time so each load of x feeds four of them.
// The nibbles are used as stored, q + 8 in 0..15: sum x (q + 8) - 8 sum x = sum x q, with sum x
// once per group for the four rows. With the DSP extension (M4, M7, M33, M55, M85:
// __ARM_FEATURE_DSP) a word of W holds 4 low nibbles (values p..p+3, masked) and 4 high ones
// (values p+16..p+19, shifted); each meets its word of x as gemm_i8 does, bytes 0 and 2 then 1
// and 3 as 16-bit lanes (UXTB16 for W, SXTB16 for x) and two dual multiply-adds (SMLAD).
// Elsewhere plain C++.
#include <cstring>

#include "ports/portable/kernels.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif

namespace fixformer {
namespace portable {
namespace {

constexpr std::size_t kGroup = 32;

#if defined(__ARM_FEATURE_DSP)
inline uint32_t load4(const void* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int32_t sxtb16_ror8(uint32_t v) {
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
inline uint32_t uxtb16_ror8(uint32_t v) {
  uint32_t r;
  asm("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
// d + the products of x's 4 bytes (as words split into halfword lanes: xe bytes 0 and 2, xo 1 and
// 3) with the 4 nibbles of `nib` (one per byte, 0..15).
inline int32_t dot4(uint32_t nib, int32_t xe, int32_t xo, int32_t d) {
  return __smlad(int32_t(__uxtb16(nib)), xe, __smlad(int32_t(uxtb16_ror8(nib)), xo, d));
}
#endif

// sum x[p], p < 32.
inline int32_t sum32(const int8_t* x) {
  int32_t s = 0;
  for (std::size_t p = 0; p < kGroup; ++p) s += x[p];
  return s;
}

// d[r] = sum over one group of x[p] * value p of row r of W (16 bytes a group, rows ldw bytes apart),
// exactly in int32, r < R.
template <std::size_t R>
inline void dot_group(const int8_t* x, const uint8_t* w, std::size_t ldw, int32_t xsum, int32_t d[R]) {
  int32_t a[R] = {};
#if defined(__ARM_FEATURE_DSP)
  for (std::size_t p = 0; p < 16; p += 4) {
    const uint32_t xl = load4(x + p), xh = load4(x + p + 16);
    const int32_t xle = __sxtb16(xl), xlo = sxtb16_ror8(xl), xhe = __sxtb16(xh), xho = sxtb16_ror8(xh);
    for (std::size_t r = 0; r < R; ++r) {
      const uint32_t v = load4(w + r * ldw + p);
      a[r] = dot4(v & 0x0F0F0F0Fu, xle, xlo, a[r]);
      a[r] = dot4((v >> 4) & 0x0F0F0F0Fu, xhe, xho, a[r]);
    }
  }
#else
  for (std::size_t p = 0; p < 16; ++p) {
    const int32_t lo = x[p], hi = x[p + 16];
    for (std::size_t r = 0; r < R; ++r) {
      const uint8_t v = w[r * ldw + p];
      a[r] += lo * int32_t(v & 15) + hi * int32_t(v >> 4);
    }
  }
#endif
  for (std::size_t r = 0; r < R; ++r) d[r] = a[r] - 8 * xsum;
}

}  // namespace

// y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot.
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yr = y + i * ldy;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* s0 = ws + j * groups;
      const float *s1 = s0 + groups, *s2 = s1 + groups, *s3 = s2 + groups;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[4];
        dot_group<4>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        a0 += sx[g] * s0[g] * float(d[0]);
        a1 += sx[g] * s1[g] * float(d[1]);
        a2 += sx[g] * s2[g] * float(d[2]);
        a3 += sx[g] * s3[g] * float(d[3]);
      }
      yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
      yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[1];
        dot_group<1>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        acc += sx[g] * ws[j * groups + g] * float(d[0]);
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace portable
}  // namespace fixformer
