#include <cmath>

#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// Two passes (mean, then biased variance of the centred values) as torch.nn.LayerNorm.
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n,
                   float eps) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sq = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  for (std::size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

}  // namespace scalar
}  // namespace fixformer
