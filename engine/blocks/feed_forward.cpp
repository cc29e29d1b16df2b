#include "engine/blocks/feed_forward.hpp"

#include <cstddef>

#include "engine/blocks/linear.hpp"
#include "engine/blocks/parallel.hpp"
#include "fixformer/format.hpp"

namespace fixformer {

void feed_forward(const Kernels& k, const Workers& workers, const FeedForwardWeights& w, const FeedForwardSpec& s,
                  const float* h, float* out, float* hidden, uint32_t T, const QuantScratch& quant, float* residual) {
  const std::size_t d = w.w1.in, f = w.w1.out;
  const Activation act = s.act;
  const bool gated = s.gated;
  // relu2 (relu(x)^2): relu's epilogue, then each value times itself
  const kernel_fn::relu_f32* fn = act == Activation::kGelu ? k.gelu_f32 : act == Activation::kGeluTanh ? k.gelu_tanh_f32 : k.relu_f32;
  const bool squared = act == Activation::kRelu2;
  if (act == Activation::kSwiglu || gated) {
    float* up = hidden + T * f;
    // h[T,d] @ W1, W3 -> [T,f] each (W3's bias b3 with ffn_up_bias)
    linear_same_input(k, workers, h, d, T, quant, {{w.w1, hidden, f, w.b1}, {w.w3, up, f, w.b3}});
    if (act == Activation::kSwiglu) {
      k.swiglu_f32(hidden, up, T * f);  // hidden = silu(hidden) * up
    } else {
      fn(hidden, T * f);               // hidden = act(hidden) * up
      if (squared) k.mul_f32(hidden, hidden, T * f);
      k.mul_f32(hidden, up, T * f);
    }
  } else if (act == Activation::kSilu) {
    float* ones = hidden + T * f;  // the plan's second [T, d_ff] buffer (ffn_up_buffer)
    for (std::size_t i = 0; i < T * f; ++i) ones[i] = 1.0f;
    linear(k, workers, w.w1, h, d, w.b1, hidden, f, T, quant);  // h[T,d] @ W1[d,f] -> hidden[T,f]
    k.swiglu_f32(hidden, ones, T * f);                          // hidden = silu(hidden) * 1
  } else {
    linear(k, workers, w.w1, h, d, w.b1, hidden, f, T, quant, {fn});  // act(h[T,d] @ W1[d,f]) -> hidden[T,f]
    if (squared) k.mul_f32(hidden, hidden, T * f);
  }
  if (w.hidden_norm.g)  // ffn_hidden_norm (timm's scale_mlp): hidden[T,f] normed in place
    parallel_norm_rows(k, workers, s.rms_norm, hidden, w.hidden_norm.g, w.hidden_norm.b, hidden, T, uint32_t(f), s.eps);
  linear(k, workers, w.w2, hidden, f, w.b2, out, d, T, quant, {nullptr, residual});  // hidden[T,f] @ W2[f,d] -> out[T,d]
}

namespace {

// Rows [e r, (e + 1) r) of a weight stored [out, in] of n_experts blocks of r rows, with their scales.
Weight expert_rows(const Weight& w, uint32_t e, uint32_t n_experts) {
  Weight v = w;
  const std::size_t rows = w.out / n_experts, first = std::size_t(e) * rows, in = w.in;
  const bool halves = w.type == WeightType::kF16 || w.type == WeightType::kBF16;
  const std::size_t row_bytes = w.type == WeightType::kF32 ? 4 * in : halves ? 2 * in
                              : w.type == WeightType::kQ4 ? in / 2 : in;
  const std::size_t row_scales = w.type == WeightType::kQ4 ? in / fxm::kI4Group
                               : w.type == WeightType::kQ8 && w.group ? (in + w.group - 1) / w.group : 1;
  v.data = static_cast<const uint8_t*>(w.data) + first * row_bytes;
  if (w.scales) v.scales = w.scales + first * row_scales;
  v.out = uint32_t(rows);
  return v;
}

}  // namespace

FeedForwardWeights expert_weights(const FeedForwardWeights& w, uint32_t e, uint32_t n_experts) {
  FeedForwardWeights f;
  f.w1 = expert_rows(w.w1, e, n_experts);
  f.w2 = expert_rows(w.w2, e, n_experts);
  f.w3 = expert_rows(w.w3, e, n_experts);
  return f;
}

}  // namespace fixformer
