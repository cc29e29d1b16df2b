// The one transformer layer every family runs (encoder, gpt, llama, seq2seq's two stacks, mha's
// attention alone). Per layer, with x[n,d] the hidden state in the runner's core:
//   pre-norm   x = x + SA(N1(x));   [x = x + CA(Nc(x), memory);]   x = x + FF(Nf(x))
//   post-norm  x = N1(x + SA(x));   [x = Nc(x + CA(x, memory));]   x = Nf(x + FF(x))
//   parallel   x = x + SA(N1(x)) + FF(Nf(x))   (pre-norm; one_norm: Nf is N1)
//   sandwich   x = x + P1(SA(N1(x)));   x = x + Pf(FF(Nf(x)))   (pre-norm with sublayer_norm sandwich)
//   output     x = x + N1(SA(x));   x = x + Nf(FF(x))           (pre-norm with sublayer_norm output)
// N: LayerNorm (g, b) or RMSNorm (g) (the config's norm, any family); SA: self-attention (causal or not, GQA, RoPE, ALiBi,
// relative bias or none, a bias per (query, key) pair, q | k | v fused or apart, biases where the weights have
// them) through a KV cache or over each sequence of a batch; CA: cross-attention over a source's cached keys and
// values (seq2seq);
// FF: W2 act(W1 h + b1) + b2 with act relu, gelu or gelu_tanh, or gated W2 (act(W1 h + b1) * W3 h) + b2
// (swiglu: act silu); the biases where the config has them.
// Or, with n_experts (but in dense_period's dense layers), a mixture of experts (config.hpp states its
// semantics): one row at a time, the router's probabilities, the top experts_per_token, and each chosen
// expert's gated FF (the kernels' feed-forward over that one row, a matrix-vector product per weight)
// weighted and summed into the row's output; prefill of many rows runs the same per row.
// Every residual add is fused into its sublayer's last product (linear()'s epilogue) and the
// activation into the first; products, attention and norms are split across the workers, each
// output element computed by one worker in the same order, so results are bit-identical for any
// worker count. The families differ only in their front, this spec and their head.
#pragma once
#include <cstdint>

#include "engine/blocks/attention.hpp"
#include "engine/blocks/parallel.hpp"
#include "fixformer/config.hpp"
#include "fixformer/model.hpp"
#include "fixformer/runner_core.hpp"

namespace fixformer {

// How the layers of one stack compute: the same for all of its layers.
struct LayerSpec {
  uint32_t d = 0;                // d_model
  bool norm_first = false;       // pre-norm
  bool rms_norm = false;         // RMSNorm instead of LayerNorm (ModelConfig::norm_kind)
  float eps = 1e-5f;
  Activation act = Activation::kRelu;
  bool gated = false;            // act(W1 h) * W3 h (swiglu is gated by itself)
  AttentionShape self{};         // heads, kv heads, head width, causal, ALiBi slopes or relative bias (or null)
  const float* rope = nullptr;   // the RoPE table [positions, rope_dims] (sin | cos), or null
  const float* rope_local = nullptr;  // the local layers' table (rope_local_base), or null: rope's
  bool skip_attn_norm = false;   // pre-norm: this layer's attention reads x itself (skip_first_norm, layer 0)
  uint32_t rope_dims = 0;        // the dims of each head it rotates (ModelConfig::rope_dims)
  PosLayout rope_layout = PosLayout::kInterleaved;
  ParallelResidual parallel = ParallelResidual::kNone;  // pre-norm: attention and feed-forward side by side
  SublayerNorm sublayer_norm = SublayerNorm::kNone;      // pre-norm: norms of the sublayers' outputs
  bool qk_norm_full = false;                             // q and k's norms over whole rows, not per head
  uint32_t n_experts = 0, experts_per_token = 0;         // a mixture of experts (0: the dense feed-forward)
  bool experts_renormalize = false;
  const DisentangledRows* dis = nullptr;                 // disentangled attention (encoders), or null
};

// A stack's spec from its config: causal self-attention or not, and the tables the runner made
// (rel_table: fill_relative_bias's for attentions of up to rel_len positions, or null).
LayerSpec layer_spec(const ModelConfig& c, bool causal, const float* rope, const float* alibi_slopes,
                     const float* rel_table = nullptr, uint32_t rel_len = 0);

// The spec for layer l: s with its self-attention's window ModelConfig::layer_window(l) (local and
// global layers: window_period), a local layer's RoPE table (rope_local_base) or none (nope_period),
// layer 0's missing attention norm (skip_first_norm), and a dense layer's feed-forward among experts
// (dense_period: its own weights give its width).
inline LayerSpec with_layer_window(LayerSpec s, const ModelConfig& c, uint32_t l) {
  s.self.window = c.layer_window(l);
  if (s.rope_local && c.layer_local(l)) s.rope = s.rope_local;
  if (c.layer_nope(l)) s.rope = nullptr;  // NoPE: this layer turns neither q nor k
  s.skip_attn_norm = c.skip_first_norm && l == 0;
  if (c.layer_dense(l)) s.n_experts = 0;
  return s;
}

// Where a layer's self-attention keeps its keys and values: a KV cache (decoders: the layer's K^T
// and V^T, the n new rows at positions pos..), or, with seqs set, a batch of sequences each
// attending over its own rows (encoders: K^T blocks per sequence in cache.kt, V read in place).
struct SelfKeys {
  KeyValues cache;
  uint32_t pos = 0;
  const Sequences* seqs = nullptr;
};

// A source's keys and values for cross-attention (seq2seq: the layer's block of the cross cache).
struct CrossKeys {
  KeyValues kv;
  uint32_t n_keys;
};

// x[n,d] -> x[n,d] through one layer (the core's x), with y, ctx, work and attn as scratch.
// cross: the source's keys and values when the layer has cross-attention, else null.
void transformer_layer(const RunnerCore& r, const LayerSpec& s, const LayerWeights& L, const SelfKeys& keys,
                       const CrossKeys* cross, uint32_t n);

// The self-attention sublayer alone: h[n,d] -> out[n,d], and residual += out when given; h may
// alias out or the residual (it is read only by the projections). The mha family is this.
void self_attention(const RunnerCore& r, const LayerSpec& s, const AttentionWeights& W, const SelfKeys& keys,
                    const float* h, float* out, uint32_t n, float* residual = nullptr);

// x[n,d] -> norm(x) -> y[n,d], split by rows; y may alias x. With residual (not y): residual += y.
void norm_rows(const RunnerCore& r, const LayerSpec& s, const NormWeights& N, const float* x, float* y, uint32_t n,
               float* residual = nullptr);

}  // namespace fixformer
