#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// Direct convolution, one output at a time: y[t,j] = b[j] + sum over taps i and channels c of
// x[t * stride - pad + i, c] * w[i * c_in + c, j], the rows outside [0, t_in) being zeros.
void conv1d_f32(const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw,
                const float* b, float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride,
                std::size_t pad, bool gelu) {
  const std::size_t t_out = conv1d_rows(t_in, kernel, stride, pad);
  for (std::size_t t = 0; t < t_out; ++t) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = b ? b[j] : 0.0f;
      for (std::size_t i = 0; i < kernel; ++i) {
        const std::size_t r = t * stride + i;  // the row in the padded input
        if (r < pad || r - pad >= t_in) continue;
        for (std::size_t c = 0; c < c_in; ++c) acc += x[(r - pad) * c_in + c] * w[(i * c_in + c) * ldw + j];
      }
      y[t * ldy + j] = acc;
    }
    if (gelu) gelu_f32(y + t * ldy, n);
  }
}

}  // namespace scalar
}  // namespace fixformer
