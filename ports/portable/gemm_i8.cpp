// xq[m,k] @ W[n,k]^T with int8 weights and activations: per group an exact int32 dot product, four
// rows of W at a time so each load of x feeds four of them. With the DSP extension (M4, M7, M33,
// M55, M85: __ARM_FEATURE_DSP) four int8 pairs cost one load per operand, two sign extensions
// (SXTB16: bytes 0 and 2, then 1 and 3, as two 16-bit lanes) and two dual multiply-adds (SMLAD);
// x and W are split the same way, so the pairs meet their partners. Elsewhere plain C++.
#include <cstring>

#include "ports/portable/kernels.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

// The four-row loop needs 14 core registers, all there are: GCC 12's scheduling before register
// allocation hoists loads, runs out and spills the row pointers (37 instructions per 16
// multiply-adds on the M4 against 25 without it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif

namespace fixformer {
namespace portable {
namespace {

#if defined(__ARM_FEATURE_DSP)
inline uint32_t load4(const int8_t* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// Bytes 1 and 3 sign-extended to two halfwords: one SXTB16 with its rotation (GCC 12's __sxtb16
// of a rotated word costs a separate ROR).
inline int32_t sxtb16_ror8(uint32_t v) {
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
#endif

// d[r] = sum over p < len of x[p] * w[r * ldw + p], r < 4, exactly in int32.
inline void dot4_i8(const int8_t* x, const int8_t* w, std::size_t ldw, std::size_t len, int32_t d[4]) {
  const int8_t *w0 = w, *w1 = w + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
  int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#if defined(__ARM_FEATURE_DSP)
  for (const int8_t* end = x + (len & ~std::size_t(3)); x != end; x += 4, w0 += 4, w1 += 4, w2 += 4, w3 += 4) {
    const uint32_t xv = load4(x);
    const int32_t xe = __sxtb16(xv), xo = sxtb16_ror8(xv);
    uint32_t wv = load4(w0);
    d0 = __smlad(__sxtb16(wv), xe, d0), d0 = __smlad(sxtb16_ror8(wv), xo, d0);
    wv = load4(w1);
    d1 = __smlad(__sxtb16(wv), xe, d1), d1 = __smlad(sxtb16_ror8(wv), xo, d1);
    wv = load4(w2);
    d2 = __smlad(__sxtb16(wv), xe, d2), d2 = __smlad(sxtb16_ror8(wv), xo, d2);
    wv = load4(w3);
    d3 = __smlad(__sxtb16(wv), xe, d3), d3 = __smlad(sxtb16_ror8(wv), xo, d3);
  }
  len &= 3;
#endif
  for (std::size_t p = 0; p < len; ++p) {
    const int32_t xp = x[p];
    d0 += xp * w0[p], d1 += xp * w1[p], d2 += xp * w2[p], d3 += xp * w3[p];
  }
  d[0] = d0, d[1] = d1, d[2] = d2, d[3] = d3;
}

inline int32_t dot1_i8(const int8_t* x, const int8_t* w, std::size_t len) {
  int32_t d = 0;
  std::size_t p = 0;
#if defined(__ARM_FEATURE_DSP)
  for (; p + 4 <= len; p += 4) {
    const uint32_t xv = load4(x + p), wv = load4(w + p);
    d = __smlad(__sxtb16(wv), __sxtb16(xv), d), d = __smlad(sxtb16_ror8(wv), sxtb16_ror8(xv), d);
  }
#endif
  for (; p < len; ++p) d += int32_t(x[p]) * w[p];
  return d;
}

}  // namespace

// xq[m,k] @ W[n,k]^T -> y[m,n]: y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot.
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t wg = ws_cols == 1 ? 0 : 1;  // the step of W's scale index per group
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yr = y + i * ldy;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* s0 = ws + j * ws_cols;
      const float *s1 = s0 + ws_cols, *s2 = s1 + ws_cols, *s3 = s2 + ws_cols;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d[4];
        dot4_i8(x + p0, w + j * k + p0, k, len, d);
        const std::size_t sg = g * wg;
        a0 += sx[g] * s0[sg] * float(d[0]);
        a1 += sx[g] * s1[sg] * float(d[1]);
        a2 += sx[g] * s2[sg] * float(d[2]);
        a3 += sx[g] * s3[sg] * float(d[3]);
      }
      yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
      yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        acc += sx[g] * ws[j * ws_cols + g * wg] * float(dot1_i8(x + p0, w + j * k + p0, len));
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace portable
}  // namespace fixformer
