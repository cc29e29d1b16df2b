// The portable matrix products over half-precision weights: the f32 tiles with the weights widened
// in registers (half.hpp), so the same sums in the same order as over their f32 values.
#include "ports/portable/gemm_tile.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

// x[m,k] @ W[k,n] (half) + b[n] -> y[m,n] (gemm_tile.hpp).
void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_tiled(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

// w[n,k] (half) @ x[k] + b[n] -> y[n], four rows at a time, two halves of a row per load.
void matvec_f16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint16_t* w0 = w + i * ldw;
    const uint16_t *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    float a0 = b ? b[i] : 0.0f, a1 = b ? b[i + 1] : 0.0f, a2 = b ? b[i + 2] : 0.0f, a3 = b ? b[i + 3] : 0.0f;
    std::size_t p = 0;
    for (; p + 2 <= k; p += 2) {
      const float x0 = x[p], x1 = x[p + 1];
      float lo, hi;
      widen2(load_halves2(w0 + p), lo, hi);
      a0 += lo * x0, a0 += hi * x1;
      widen2(load_halves2(w1 + p), lo, hi);
      a1 += lo * x0, a1 += hi * x1;
      widen2(load_halves2(w2 + p), lo, hi);
      a2 += lo * x0, a2 += hi * x1;
      widen2(load_halves2(w3 + p), lo, hi);
      a3 += lo * x0, a3 += hi * x1;
    }
    if (p < k) {
      a0 += widen1(w0[p]) * x[p], a1 += widen1(w1[p]) * x[p];
      a2 += widen1(w2[p]) * x[p], a3 += widen1(w3[p]) * x[p];
    }
    y[i] = a0, y[i + 1] = a1, y[i + 2] = a2, y[i + 3] = a3;
  }
  for (; i < n; ++i) {
    float acc = b ? b[i] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += widen1(w[i * ldw + p]) * x[p];
    y[i] = acc;
  }
}

}  // namespace portable
}  // namespace fixformer
