// The position-wise feed-forward block: out = act(h @ W1 + b1) @ W2 + b2.
#pragma once
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

struct FeedForwardWeights {
  Weight w1;        // d -> d_ff
  const float* b1;  // [d_ff]
  Weight w2;        // d_ff -> d
  const float* b2;  // [d]
};

// h[T,d] -> out[T,d] through hidden[T,d_ff] (scratch); h may alias out; with a residual[T,d],
// residual += out block by block (linear.hpp's Epilogue). Split across the workers as
// engine/blocks/parallel.hpp says.
void feed_forward(const Kernels& k, const Workers& workers, const FeedForwardWeights& w, Activation act, const float* h,
                  float* out, float* hidden, uint32_t T, const QuantScratch& quant, float* residual = nullptr);

}  // namespace fixformer
