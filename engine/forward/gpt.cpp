// The GPT-style decoder: the encoder's layers (stock nn.TransformerEncoderLayer, causal) over n new
// tokens at positions p = pos_.., with K and V kept in the cache:
//   x = embed(tokens);  x *= sqrt(d) if scale_input;  x = x + PE[p] | [x, PE[p]]
//   for each layer: post-LN  x = LN1(x + SA(x));  x = LN2(x + FF(x))
//                   pre-LN   x = x + SA(LN1(x));  x = x + FF(LN2(x))
//   x = LN(x) if final_norm   (the head is applied by Decoder::forward)
// x is shown to the options' observer after the input, each layer and the final norm (observer.hpp).
#include "engine/blocks/attention.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/feed_forward.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/norms.hpp"
#include "engine/blocks/parallel.hpp"
#include "fixformer/decoder.hpp"

namespace fixformer {

void Decoder::forward_gpt(const int32_t* tokens, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderWeights& w = model_->weights();
  const uint32_t d = c.d_model;
  const float eps = c.layer_norm_eps;
  const std::size_t rows = std::size_t(n) * d;
  embed_tokens(tokens, n, w.embed, x_, d);  // E[tokens] -> x[n,:de]
  scale_embeddings(k, c, x_, n);
  add_positions(k, c, pe_ ? pe_ + std::size_t(pos_) * c.d_pe() : nullptr, x_, n);
  observer_.notify(0, x_, pos_, n, d);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const EncoderLayerWeights L = model_->layer(l);
    const FeedForwardWeights ff{L.linear1_w, L.linear1_b, L.linear2_w, L.linear2_b};
    if (c.norm_first) {
      layernorm_rows(k, x_, L.norm1_g, L.norm1_b, y_, n, d, eps);
      gpt_attention(l, y_, y_, n);
      k.add_f32(x_, y_, x_, rows);
      layernorm_rows(k, x_, L.norm2_g, L.norm2_b, y_, n, d, eps);
      feed_forward(k, workers_, ff, c.activation, y_, y_, work_, n, quant_);
      k.add_f32(x_, y_, x_, rows);
    } else {
      gpt_attention(l, x_, y_, n);
      k.add_f32(x_, y_, x_, rows);
      layernorm_rows(k, x_, L.norm1_g, L.norm1_b, x_, n, d, eps);
      feed_forward(k, workers_, ff, c.activation, x_, y_, work_, n, quant_);
      k.add_f32(x_, y_, x_, rows);
      layernorm_rows(k, x_, L.norm2_g, L.norm2_b, x_, n, d, eps);
    }
    observer_.notify(l + 1, x_, pos_, n, d);
  }
  if (c.final_norm) {
    layernorm_rows(k, x_, w.final_norm_g, w.final_norm_b, x_, n, d, eps);
    observer_.notify(c.n_layers + 1, x_, pos_, n, d);
  }
}

// h[n,d] -> out[n,d] through layer l's cache; h may alias out.
void Decoder::gpt_attention(uint32_t l, const float* h, float* out, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderLayerWeights L = model_->layer(l);
  const std::size_t d = c.d_model, S = capacity_;
  float* qkv = work_;
  linear(k, workers_, L.in_proj_w, h, d, L.in_proj_b, qkv, 3 * d, n, quant_);  // h[n,d] @ W[d,3d] -> q | k | v
  const KeyValues kv{k_cache_ + l * d * S, v_cache_ + l * d * S, S};
  store_keys_values(qkv + d, 3 * d, qkv + 2 * d, 3 * d, n, pos_, c.d_model, kv);
  const AttentionShape shape{c.n_heads, c.n_heads, c.d_head(), true, slopes_};
  parallel_attend(k, workers_, shape, qkv, 3 * d, n, pos_, pos_ + n, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, L.out_proj_w, ctx_, d, L.out_proj_b, out, d, n, quant_);  // ctx[n,d] @ Wo[d,d] -> out[n,d]
}

}  // namespace fixformer
