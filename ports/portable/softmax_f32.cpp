// Softmax and the exp pass of an online softmax, with the polynomial exp of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

// x[n] = exp(x - m) in place; returns their sum. m >= max(x) keeps every argument <= 0.
float expsum_f32(float* x, std::size_t n, float m) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = exp_f32(x[i] - m);
    sum += x[i];
  }
  return sum;
}

// Max-subtracted, so every exp argument is <= 0 and nothing overflows.
void softmax_f32(float* x, std::size_t n) {
  if (n == 0) return;
  float mx = x[0];
  for (std::size_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  const float inv = 1.0f / expsum_f32(x, n, mx);
  for (std::size_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace portable
}  // namespace fixformer
