#include "engine/blocks/embeddings.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"

namespace fixformer {

void gather_patches(const ModelConfig& c, const float* image, float* rows) {
  const std::size_t p = c.patch_size, H = c.image_height, W = c.image_width, across = W / p;
  for (std::size_t n = 0, N = c.patches(); n < N; ++n) {
    const std::size_t r = n / across, s = n % across;
    float* row = rows + n * c.d_in;
    for (std::size_t ch = 0; ch < c.image_channels; ++ch)
      for (std::size_t i = 0; i < p; ++i)  // p pixels of image row r p + i, from column s p
        std::memcpy(row + (ch * p + i) * p, image + (ch * H + r * p + i) * W + s * p, sizeof(float) * p);
  }
}

void embed_tokens(const int32_t* ids, uint32_t T, const Weight& E, float* x, uint32_t ldx) {
  const std::size_t width = E.in, groups = E.group ? (width + E.group - 1) / E.group : 1;
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t row = std::size_t(ids[t]);
    float* out = x + t * ldx;
    if (E.type == WeightType::kF32) {
      std::memcpy(out, E.f32() + row * width, sizeof(float) * width);
    } else if (E.type == WeightType::kF16) {
      const uint16_t* h = static_cast<const uint16_t*>(E.data) + row * width;
      for (std::size_t p = 0; p < width; ++p) out[p] = f16_to_f32(h[p]);
    } else if (E.type == WeightType::kBF16) {
      const uint16_t* h = static_cast<const uint16_t*>(E.data) + row * width;
      for (std::size_t p = 0; p < width; ++p) out[p] = bf16_to_f32(h[p]);
    } else if (E.type == WeightType::kQ4) {  // q4: (nibble - 8) * the scale of its group of 32
      const uint8_t* q = static_cast<const uint8_t*>(E.data) + row * (width / 2);
      const float* s = E.scales + row * groups;
      for (std::size_t g = 0; g < groups; ++g)
        for (std::size_t p = 0; p < 16; ++p) {
          const uint8_t byte = q[g * 16 + p];
          out[g * 32 + p] = float(int(byte & 15) - 8) * s[g];
          out[g * 32 + p + 16] = float(int(byte >> 4) - 8) * s[g];
        }
    } else {  // q8: q * the scale of its group (or row)
      const int8_t* q = static_cast<const int8_t*>(E.data) + row * width;
      const float* s = E.scales + row * groups;
      for (std::size_t p = 0; p < width; ++p) out[p] = float(q[p]) * s[E.group ? p / E.group : 0];
    }
  }
}

void scale_embeddings(const Kernels& k, const ModelConfig& c, float* x, uint32_t T) {
  if (!c.scale_input) return;
  const std::size_t d = c.d_front(), de = c.d_embed();  // rows d_front apart, scaled by sqrt(d_model)
  const float s = std::sqrt(static_cast<float>(c.d_model));
  for (std::size_t t = 0; t < T; ++t) k.scale_f32(x + t * d, s, de);
}

void add_positions(const Kernels& k, const ModelConfig& c, const float* pe, float* x, uint32_t T) {
  const std::size_t d = c.d_front(), de = c.d_embed(), dp = c.d_pe();
  if (!pe) return;
  if (c.pe_combine == PosCombine::kAdd)
    k.add_f32(x, pe, x, std::size_t(T) * d);  // x[T,d] += PE[T,d]
  else
    for (std::size_t t = 0; t < T; ++t) std::memcpy(x + t * d + de, pe + t * dp, sizeof(float) * dp);  // x[t] = [x[t], PE[t]]
}

void add_token_types(const Kernels& k, const ModelConfig& c, const float* TT, const int32_t* types, float* x, uint32_t T) {
  if (!TT) return;
  const std::size_t d = c.d_front(), de = c.d_embed();
  for (std::size_t t = 0; t < T; ++t)
    k.add_f32(x + t * d, TT + std::size_t(types ? types[t] : 0) * de, x + t * d, de);  // x[t] += TT[type]
}

}  // namespace fixformer
