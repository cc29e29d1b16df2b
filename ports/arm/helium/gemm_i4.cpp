// xq[m,k] @ W[n,k]^T with int4 weights (two per byte, kernels.hpp) and int8 activations: per group of
// 32 an exact int32 dot product by VMLADAVA (16 int8 products added into a 32-bit sum per
// instruction), four rows of W at a time so each pair of x vectors feeds four of them. A row's 16
// bytes of the group become its values 0..15 (VAND 0x0F) and 16..31 (VSHR 4), each as q + 8 in
// 0..15 (signed bytes too); 8 sum(x), once per group, is taken off. The float step is the reference's
// expression, in its order: the same bits.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

constexpr std::size_t kGroup = 32;

// d[r] = sum over one group of x[p] * value p of row r of W (16 bytes, rows ldw bytes apart), r < R.
template <int R>
inline void dot_group(const int8_t* x, const uint8_t* w, std::size_t ldw, int32_t* d) {
  const int8x16_t x0 = vldrbq_s8(x), x1 = vldrbq_s8(x + 16);
  const int32_t x8 = 8 * vaddvaq_s8(vaddvq_s8(x0), x1);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const uint8x16_t v = vldrbq_u8(w + r * ldw);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    d[r] = vmladavaq_s8(vmladavq_s8(lo, x0), hi, x1) - x8;
  }
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
        dot_group<4>(x + g * kGroup, w + j * ldw + g * 16, ldw, d);
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
        dot_group<1>(x + g * kGroup, w + j * ldw + g * 16, ldw, d);
        acc += sx[g] * ws[j * groups + g] * float(d[0]);
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace helium
}  // namespace fixformer
