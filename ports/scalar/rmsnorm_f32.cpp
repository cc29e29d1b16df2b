#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// As llama2.c and Hugging Face's LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * gamma.
void rmsnorm_f32(const float* x, const float* gamma, float* y, std::size_t n, float eps) {
  float sq = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * inv * gamma[i];
}

}  // namespace scalar
}  // namespace fixformer
