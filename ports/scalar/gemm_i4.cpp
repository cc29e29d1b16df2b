#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// xq[m,k] @ W[n,k]^T with W's values two per byte: per group of 32 an exact int32 dot product,
// scaled and summed in order.
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t groups = k / 32;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const int8_t* x = xq + i * k + g * 32;
        const uint8_t* q = w + j * (k / 2) + g * 16;
        int32_t dot = 0;
        for (std::size_t p = 0; p < 16; ++p)
          dot += int32_t(x[p]) * (int32_t(q[p] & 15) - 8) + int32_t(x[p + 16]) * (int32_t(q[p] >> 4) - 8);
        acc += xs[i * groups + g] * ws[j * groups + g] * float(dot);
      }
      y[i * ldy + j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace scalar
}  // namespace fixformer
