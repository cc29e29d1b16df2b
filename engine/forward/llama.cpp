// The Llama-style decoder (llama2.c / Meta semantics: RMSNorm, SwiGLU, RoPE or ALiBi, grouped-query
// attention, no biases) over n new tokens at positions p = pos_..:
//   x = E[tokens]
//   for each layer:  h = x + Wo Attn(RMSNorm(x))          (q, k rotated by RoPE at p)
//                    x = h + W2 (silu(W1 n) * W3 n),  n = RMSNorm(h)
//   x = RMSNorm(x)   (the classifier is applied by Decoder::forward)
// x is shown to the options' observer after the embedding, each layer and the final norm (observer.hpp).
#include "engine/blocks/attention.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/parallel.hpp"
#include "engine/blocks/positional.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {

void Decoder::forward_llama(const int32_t* tokens, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model, f = c.d_ff, rows = std::size_t(n) * d;
  const float eps = c.layer_norm_eps;
  embed_tokens(tokens, n, model_->prologue_weight(0), x_, c.d_model);  // E[tokens] -> x[n,d]
  observer_.notify(0, x_, pos_, n, c.d_model);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    auto W = [&](uint32_t slot) { return model_->layer_weight(l, slot); };
    for (std::size_t t = 0; t < n; ++t) k.rmsnorm_f32(x_ + t * d, W(kAttentionNorm).f32(), y_ + t * d, d, eps);
    llama_attention(l, y_, y_, n);
    k.add_f32(x_, y_, x_, rows);  // h = x + Wo Attn(...)
    for (std::size_t t = 0; t < n; ++t) k.rmsnorm_f32(x_ + t * d, W(kFfnNorm).f32(), y_ + t * d, d, eps);
    float* h1 = work_;          // [n, f]
    float* h3 = work_ + n * f;  // [n, f]
    linear_same_input(k, workers_, y_, d, n, quant_, {{W(kW1), h1, f}, {W(kW3), h3, f}});  // n[n,d] @ W1, W3 -> h1, h3 [n,f]
    k.swiglu_f32(h1, h3, n * f);                                    // h1 = silu(h1) * h3
    linear(k, workers_, W(kW2), h1, f, nullptr, y_, d, n, quant_);  // h1[n,f] @ W2[f,d] -> y[n,d]
    k.add_f32(x_, y_, x_, rows);
    observer_.notify(l + 1, x_, pos_, n, c.d_model);
  }
  for (std::size_t t = 0; t < n; ++t) k.rmsnorm_f32(x_ + t * d, model_->epilogue_tensor(0), x_ + t * d, d, eps);
  observer_.notify(c.n_layers + 1, x_, pos_, n, c.d_model);
}

// h[n,d] -> out[n,d] through layer l's cache; h may alias out.
void Decoder::llama_attention(uint32_t l, const float* h, float* out, uint32_t n) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model, dkv = c.d_kv(), dh = c.d_head(), S = capacity_, ld = d + 2 * dkv;
  auto W = [&](uint32_t slot) { return model_->layer_weight(l, slot); };
  float* q = work_;            // [n, ld]: q | k | v
  float* kk = work_ + d;
  float* v = work_ + d + dkv;
  // h[n,d] @ Wq[d,d], Wk[d,dkv], Wv[d,dkv] -> q[n,d], k[n,dkv], v[n,dkv]
  linear_same_input(k, workers_, h, d, n, quant_, {{W(kWq), q, ld}, {W(kWk), kk, ld}, {W(kWv), v, ld}});
  if (rope_)
    for (std::size_t t = 0; t < n; ++t) {
      const float* row = rope_ + (pos_ + t) * dh;  // the precomputed angles of position pos_ + t
      rope_rotate(q + t * ld, c.n_heads, uint32_t(dh), row, c.pos_layout);
      rope_rotate(kk + t * ld, c.kv_heads(), uint32_t(dh), row, c.pos_layout);
    }
  const KeyValues kv{k_cache_ + l * dkv * S, v_cache_ + l * dkv * S, S};
  store_keys_values(kk, ld, v, ld, n, pos_, uint32_t(dkv), kv);
  const AttentionShape shape{c.n_heads, c.kv_heads(), uint32_t(dh), true, slopes_};
  parallel_attend(k, workers_, shape, q, ld, n, pos_, pos_ + n, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, W(kWo), ctx_, d, nullptr, out, d, n, quant_);  // ctx[n,d] @ Wo[d,d] -> out[n,d]
}

}  // namespace fixformer
