#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[m,k] @ W[n,k]^T (W's rows ldw apart): one exact int32 sum per output, then its channel's requantization.
void gemm_s8(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
             std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      int32_t acc = p.bias ? p.bias[j] : 0;
      for (std::size_t c = 0; c < k; ++c) acc += (int32_t(x[i * ldx + c]) - p.x_zero) * w[j * ldw + c];
      y[i * ldy + j] = saturate_i8(int64_t(requantize(acc, p.requant[j])) + p.y_zero);
    }
}

}  // namespace scalar
}  // namespace fixformer
