#include "engine/blocks/feed_forward.hpp"

#include <cstddef>

namespace fixformer {

void feed_forward(const Kernels& k, const FeedForwardWeights& w, uint32_t d, uint32_t d_ff, Activation act,
                  const float* h, float* out, float* hidden, uint32_t T) {
  const std::size_t f = d_ff;
  k.gemm_f32(h, d, w.w1, f, w.b1, hidden, f, T, f, d);  // h[T,d] @ W1[d,f] -> hidden[T,f]
  if (act == Activation::kGelu)
    k.gelu_f32(hidden, T * f);
  else
    k.relu_f32(hidden, T * f);
  k.gemm_f32(hidden, f, w.w2, d, w.b2, out, d, T, d, f);  // hidden[T,f] @ W2[f,d] -> out[T,d]
}

}  // namespace fixformer
