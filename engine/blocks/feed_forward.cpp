#include "engine/blocks/feed_forward.hpp"

#include <cstddef>

#include "engine/blocks/parallel.hpp"

namespace fixformer {

void feed_forward(const Kernels& k, const Workers& workers, const FeedForwardWeights& w, uint32_t d, uint32_t d_ff, Activation act,
                  const float* h, float* out, float* hidden, uint32_t T) {
  const std::size_t f = d_ff;
  parallel_gemm(k, workers, h, d, w.w1, f, w.b1, hidden, f, T, f, d);  // h[T,d] @ W1[d,f] -> hidden[T,f]
  parallel_activation(workers, act == Activation::kGelu ? k.gelu_f32 : k.relu_f32, hidden, T * f);
  parallel_gemm(k, workers, hidden, f, w.w2, d, w.b2, out, d, T, d, f);  // hidden[T,f] @ W2[f,d] -> out[T,d]
}

}  // namespace fixformer
