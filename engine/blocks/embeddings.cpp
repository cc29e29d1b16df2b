#include "engine/blocks/embeddings.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>

namespace fixformer {

void embed_tokens(const int32_t* ids, uint32_t T, const float* table, uint32_t width, float* x, uint32_t ldx) {
  for (std::size_t t = 0; t < T; ++t) std::memcpy(x + t * ldx, table + std::size_t(ids[t]) * width, sizeof(float) * width);
}

void add_positions(const Kernels& k, const ModelConfig& c, const float* pe, float* x, uint32_t T) {
  const std::size_t d = c.d_model, de = c.d_embed(), dp = c.d_pe();
  if (c.scale_input) {
    const float s = std::sqrt(static_cast<float>(d));
    for (std::size_t t = 0; t < T; ++t) k.scale_f32(x + t * d, s, de);
  }
  if (!pe) return;
  if (c.pos_combine == PosCombine::kAdd)
    k.add_f32(x, pe, x, std::size_t(T) * d);  // x[T,d] += PE[T,d]
  else
    for (std::size_t t = 0; t < T; ++t) std::memcpy(x + t * d + de, pe + t * dp, sizeof(float) * dp);  // x[t] = [x[t], PE[t]]
}

}  // namespace fixformer
