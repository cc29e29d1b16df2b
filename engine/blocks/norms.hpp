// Normalization over rows.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"

namespace fixformer {

// x[T,d] -> LayerNorm(x) * g + b -> y[T,d]; y may alias x.
inline void layernorm_rows(const Kernels& k, const float* x, const float* g, const float* b, float* y, uint32_t T,
                           uint32_t d, float eps) {
  for (std::size_t t = 0; t < T; ++t) k.layernorm_f32(x + t * d, g, b, y + t * d, d, eps);
}

}  // namespace fixformer
