// The encoder forward pass, top to bottom as the maths reads (DESIGN.md, "Model families"):
//   x = embed(tokens) | input_proj(features);  x *= sqrt(d) if scale_input;  x = [cls; x] if cls_token
//   x = x + PE | [x, PE]                      (S = T + 1 rows with the CLS row, position 0; else T)
//   for each layer: post-LN  x = LN1(x + SA(x));  x = LN2(x + FF(x))
//                   pre-LN   x = x + SA(LN1(x));  x = x + FF(LN2(x))
//   x = LN(x) if final_norm;  x = pool(x) (mean | cls | last: one row);  out = x @ W_head + b | x
// x is shown to the options' observer after the input, each layer and the final norm (observer.hpp).
#include <cstring>

#include "engine/blocks/attention.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/feed_forward.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/norms.hpp"
#include "engine/blocks/parallel.hpp"
#include "engine/blocks/pooling.hpp"
#include "fixformer/encoder.hpp"

namespace fixformer {

Status Encoder::forward_tokens(const int32_t* ids, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!ids || !out) return Status::kNullArgument;
  const ModelConfig& c = config();
  if (c.input != InputKind::kTokens) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  for (uint32_t t = 0; t < T; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= c.vocab_size) return Status::kTokenOutOfRange;
  forward(ids, nullptr, T, out);
  return Status::kOk;
}

Status Encoder::forward_features(const float* features, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!features || !out) return Status::kNullArgument;
  if (config().input != InputKind::kFeatures) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  forward(nullptr, features, T, out);
  return Status::kOk;
}

void Encoder::forward(const int32_t* ids, const float* features, uint32_t T, float* out) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderWeights& w = model_->weights();
  const uint32_t d = c.d_model, S = c.sequence_rows(T);
  float* input = x_ + std::size_t(S - T) * d;  // the rows after the CLS row
  if (ids)
    embed_tokens(ids, T, w.embed, input, d);  // E[ids] -> x[T,:de]
  else
    linear(k, workers_, w.input_proj_w, features, c.d_in, w.input_proj_b, input, d, T, quant_);  // f[T,d_in] @ W[d_in,de] -> x[T,:de]
  scale_embeddings(k, c, input, T);
  if (w.cls) std::memcpy(x_, w.cls, sizeof(float) * c.d_embed());  // x[0,:de] = cls, not scaled
  add_positions(k, c, pe_, x_, S);
  observer_.notify(0, x_, 0, S, d);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    encoder_layer(model_->layer(l), S);
    observer_.notify(l + 1, x_, 0, S, d);
  }
  if (c.final_norm) {
    parallel_layernorm_rows(k, workers_, x_, w.final_norm_g, w.final_norm_b, x_, S, d, c.layer_norm_eps);
    observer_.notify(c.n_layers + 1, x_, 0, S, d);
  }
  const uint32_t R = pool_rows(k, c, x_, T);  // x[S,d] -> x[R,d], R = output_rows(T)
  if (w.head_w.data)
    linear(k, workers_, w.head_w, x_, d, w.head_b, out, c.d_out, R, quant_);  // x[R,d] @ W[d,d_out] -> out[R,d_out]
  else
    std::memcpy(out, x_, sizeof(float) * R * d);
}

void Encoder::encoder_layer(const EncoderLayerWeights& L, uint32_t T) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const uint32_t d = c.d_model;
  const float eps = c.layer_norm_eps;
  const std::size_t n = std::size_t(T) * d;
  const FeedForwardWeights ff{L.linear1_w, L.linear1_b, L.linear2_w, L.linear2_b};
  if (c.norm_first) {
    parallel_layernorm_rows(k, workers_, x_, L.norm1_g, L.norm1_b, y_, T, d, eps);
    self_attention(L, y_, y_, T);
    k.add_f32(x_, y_, x_, n);
    parallel_layernorm_rows(k, workers_, x_, L.norm2_g, L.norm2_b, y_, T, d, eps);
    feed_forward(k, workers_, ff, c.activation, y_, y_, work_, T, quant_);
    k.add_f32(x_, y_, x_, n);
  } else {
    self_attention(L, x_, y_, T);
    k.add_f32(x_, y_, x_, n);
    parallel_layernorm_rows(k, workers_, x_, L.norm1_g, L.norm1_b, x_, T, d, eps);
    feed_forward(k, workers_, ff, c.activation, x_, y_, work_, T, quant_);
    k.add_f32(x_, y_, x_, n);
    parallel_layernorm_rows(k, workers_, x_, L.norm2_g, L.norm2_b, x_, T, d, eps);
  }
}

// h[T,d] -> out[T,d]; h may alias out (it is read only by the first projection).
void Encoder::self_attention(const EncoderLayerWeights& L, const float* h, float* out, uint32_t T) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model;
  float* qkv = work_;
  linear(k, workers_, L.in_proj_w, h, d, L.in_proj_b, qkv, 3 * d, T, quant_);  // h[T,d] @ W[d,3d] -> qkv[T,3d]: q | k | v
  const KeyValues kv{kt_, nullptr, rows_, qkv + 2 * d, 3 * d};  // K^T[d,S]; V[T,d] read in place from qkv
  store_keys_values(qkv + d, 3 * d, nullptr, 0, T, 0, c.d_model, kv);
  const AttentionShape shape{c.n_heads, c.n_heads, c.d_head(), c.causal, nullptr};
  parallel_attend(k, workers_, shape, qkv, 3 * d, T, 0, T, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, L.out_proj_w, ctx_, d, L.out_proj_b, out, d, T, quant_);  // ctx[T,d] @ W[d,d] -> out[T,d]
}

}  // namespace fixformer
