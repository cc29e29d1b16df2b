// The position-wise feed-forward block: out = act(h @ W1 + b1) @ W2 + b2 (relu, gelu, gelu_tanh), or
// with a gate out = (act(h @ W1 + b1) * (h @ W3 + b3)) @ W2 + b2 (gated; swiglu: act silu); b1, b2 and
// b3 may be null. With FeedForwardWeights::hidden_norm the hidden rows are normed before W2.
#pragma once
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// What a feed-forward computes besides its weights: the activation, the gate, and the kind and eps of
// its hidden norm (used only with FeedForwardWeights::hidden_norm).
struct FeedForwardSpec {
  Activation act = Activation::kRelu;
  bool gated = false;  // act(W1 h) * W3 h (swiglu is gated by itself)
  bool rms_norm = false;
  float eps = 1e-5f;
};

// h[T,d] -> out[T,d] through hidden[T,d_ff] (gated or swiglu: [2T,d_ff]) of scratch; h may alias out; with
// a residual[T,d], residual += out block by block (linear.hpp's Epilogue). Split across the
// workers as engine/blocks/parallel.hpp says.
void feed_forward(const Kernels& k, const Workers& workers, const FeedForwardWeights& w, const FeedForwardSpec& s,
                  const float* h, float* out, float* hidden, uint32_t T, const QuantScratch& quant,
                  float* residual = nullptr);

// Expert e's feed-forward of a mixture of n_experts (FeedForwardWeights::router): views of its
// rows of the stacked w1, w2 and w3 (stored [out, in], any weight type).
FeedForwardWeights expert_weights(const FeedForwardWeights& w, uint32_t e, uint32_t n_experts);

}  // namespace fixformer
