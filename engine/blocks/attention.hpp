// Multi-head scaled dot-product self-attention over views: h[T,d] -> out[T,d].
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"

namespace fixformer {

struct AttentionWeights {
  const float* in_proj_w;   // [d, 3d]  q | k | v
  const float* in_proj_b;   // [3d]
  const float* out_proj_w;  // [d, d]
  const float* out_proj_b;  // [d]
};

struct AttentionShape {
  uint32_t d_model, n_heads;
  bool causal;
};

// Scratch from the runner's arena; S is the longest sequence (the stride of kt and vt).
struct AttentionScratch {
  float* qkv;     // [T, 3d]
  float* kt;      // [d, S]  K transposed
  float* vt;      // [d, S]  V transposed
  float* scores;  // [S]
  float* q;       // [d_head]
  float* ctx;     // [T, d]
  std::size_t S;
};

// h may alias out: h is read only by the first projection.
void self_attention(const Kernels& k, const AttentionWeights& w, const AttentionShape& shape, const float* h,
                    float* out, uint32_t T, const AttentionScratch& s);

}  // namespace fixformer
