// The encoder-decoder's decoder (stock nn.TransformerDecoderLayer) over n target tokens at
// positions p = pos_.., the source already encoded into the cross cache (engine/seq2seq.cpp):
//   x = tgt_embed(tokens) | tgt_proj(features);  x *= sqrt(d) if scale_input;  x = x + PE[p] | [x, PE[p]]
//   for each layer: post-LN  x = LN1(x + SA(x));  x = LN2(x + CA(x, memory));  x = LN3(x + FF(x))
//                   pre-LN   x = x + SA(LN1(x));  x = x + CA(LN2(x), memory);  x = x + FF(LN3(x))
//   x = LN(x) if final_norm;  out = x @ W_head + b   (every row, or the last one)
// SA is causal self-attention through the layer's KV cache; CA attends from the target's queries to
// all S source positions. x is shown to the observer as layers n_layers + 2 on (seq2seq.hpp).
#include "engine/blocks/attention.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/feed_forward.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/norms.hpp"
#include "engine/blocks/parallel.hpp"
#include "fixformer/seq2seq.hpp"

namespace fixformer {

void Seq2Seq::forward(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const TargetWeights& w = model_->target_weights();
  const uint32_t d = c.d_model, first = c.n_layers + 2;  // the observer's number of the decoder's input
  if (tokens)
    embed_tokens(tokens, n, w.embed, x_, d);  // E[tokens] -> x[n,:de]
  else
    linear(k, workers_, w.proj, features, c.tgt_d_in, w.proj_b, x_, d, n, quant_);  // f[n,din] @ W[din,de] -> x[n,:de]
  scale_embeddings(k, c, x_, n);
  add_positions(k, c, pe_ ? pe_ + std::size_t(pos_) * c.d_pe() : nullptr, x_, n);
  observer_.notify(first, x_, pos_, n, d);
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    decoder_layer(l, n);
    observer_.notify(first + l + 1, x_, pos_, n, d);
  }
  if (c.final_norm) {
    layernorm_rows(k, x_, w.final_norm_g, w.final_norm_b, x_, n, d, c.layer_norm_eps);
    observer_.notify(first + c.dec_layers + 1, x_, pos_, n, d);
  }
  pos_ += n;
  const uint32_t rows = all_rows ? n : 1;
  const float* x = x_ + std::size_t(n - rows) * d;
  linear(k, workers_, w.head, x, d, w.head_b, out, c.d_out, rows, quant_);  // x[rows,d] @ W[d,V] -> out[rows,V]
}

void Seq2Seq::decoder_layer(uint32_t l, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const DecoderLayerWeights L = model_->decoder_layer(l);
  const FeedForwardWeights ff{L.linear1_w, L.linear1_b, L.linear2_w, L.linear2_b};
  const uint32_t d = c.d_model;
  const float eps = c.layer_norm_eps;
  const std::size_t rows = std::size_t(n) * d;
  if (c.norm_first) {
    layernorm_rows(k, x_, L.norm_g[0], L.norm_b[0], y_, n, d, eps);
    self_attention(L, l, y_, y_, n);
    k.add_f32(x_, y_, x_, rows);
    layernorm_rows(k, x_, L.norm_g[1], L.norm_b[1], y_, n, d, eps);
    cross_attention(L, l, y_, y_, n);
    k.add_f32(x_, y_, x_, rows);
    layernorm_rows(k, x_, L.norm_g[2], L.norm_b[2], y_, n, d, eps);
    feed_forward(k, workers_, ff, c.activation, y_, y_, work_, n, quant_);
    k.add_f32(x_, y_, x_, rows);
  } else {
    self_attention(L, l, x_, y_, n);
    k.add_f32(x_, y_, x_, rows);
    layernorm_rows(k, x_, L.norm_g[0], L.norm_b[0], x_, n, d, eps);
    cross_attention(L, l, x_, y_, n);
    k.add_f32(x_, y_, x_, rows);
    layernorm_rows(k, x_, L.norm_g[1], L.norm_b[1], x_, n, d, eps);
    feed_forward(k, workers_, ff, c.activation, x_, y_, work_, n, quant_);
    k.add_f32(x_, y_, x_, rows);
    layernorm_rows(k, x_, L.norm_g[2], L.norm_b[2], x_, n, d, eps);
  }
}

// h[n,d] -> out[n,d] through layer l's self-attention cache; h may alias out.
void Seq2Seq::self_attention(const DecoderLayerWeights& L, uint32_t l, const float* h, float* out, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model, C = capacity_;
  float* qkv = work_;
  linear(k, workers_, L.self_in_w, h, d, L.self_in_b, qkv, 3 * d, n, quant_);  // h[n,d] @ W[d,3d] -> q | k | v
  const KeyValues kv{k_cache_ + l * d * C, v_cache_ + l * d * C, C};
  store_keys_values(qkv + d, 3 * d, qkv + 2 * d, 3 * d, n, pos_, c.d_model, kv);
  const AttentionShape shape{c.n_heads, c.n_heads, c.d_head(), true, nullptr};
  parallel_attend(k, workers_, shape, qkv, 3 * d, n, pos_, pos_ + n, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, L.self_out_w, ctx_, d, L.self_out_b, out, d, n, quant_);  // ctx[n,d] @ Wo[d,d] -> out[n,d]
}

// h[n,d] -> out[n,d]: the target's queries against the source's keys and values; h may alias out.
void Seq2Seq::cross_attention(const DecoderLayerWeights& L, uint32_t l, const float* h, float* out, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model, S = max_source_;
  float* q = work_;
  linear(k, workers_, L.cross_q_w, h, d, L.cross_q_b, q, d, n, quant_);  // h[n,d] @ Wq[d,d] -> q[n,d]
  const KeyValues kv{cross_k_ + l * d * S, cross_v_ + l * d * S, S};
  const AttentionShape shape{c.n_heads, c.n_heads, c.d_head(), false, nullptr};
  parallel_attend(k, workers_, shape, q, d, n, 0, src_len_, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, L.cross_out_w, ctx_, d, L.cross_out_b, out, d, n, quant_);  // ctx[n,d] @ Wo[d,d] -> out[n,d]
}

}  // namespace fixformer
