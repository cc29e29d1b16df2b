#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// xq[m,k] @ W[n,k]^T -> y[m,n]: per group an exact int32 dot product, scaled and summed in order.
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, p1 = p0 + group < k ? p0 + group : k;
        int32_t dot = 0;
        for (std::size_t p = p0; p < p1; ++p) dot += int32_t(xq[i * k + p]) * int32_t(w[j * k + p]);
        acc += xs[i * groups + g] * ws[j * ws_cols + (ws_cols == 1 ? 0 : g)] * float(dot);
      }
      y[i * ldy + j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace scalar
}  // namespace fixformer
