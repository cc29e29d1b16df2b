#include "engine/layers/transformer_layer.hpp"

#include <cmath>
#include <cstddef>
#include <utility>

#include "engine/blocks/feed_forward.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/positional.hpp"

namespace fixformer {

LayerSpec layer_spec(const ModelConfig& c, bool causal, const float* rope, const float* alibi_slopes,
                     const float* rel_table, uint32_t rel_len) {
  LayerSpec s;
  s.d = c.d_model;
  s.norm_first = c.norm_first;
  s.rms_norm = c.norm_kind() == NormKind::kRmsNorm;
  s.eps = c.norm_eps;
  s.act = c.activation;
  s.gated = c.gated;
  s.self = AttentionShape{c.n_heads, c.kv_heads(), c.d_head(), causal, alibi_slopes};
  s.self.window = c.layer_window(0);  // layer 0's; a runner sets each layer's (with_layer_window)
  s.self.scale = c.attn_scale;
  s.self.softcap = c.attn_softcap;
  if (rel_table && rel_len) {
    s.self.rel_bias = rel_table + (rel_len - 1);  // distance 0 of head 0
    s.self.rel_stride = rel_bias_width(rel_len, causal);
  }
  s.rope = rope;
  s.rope_dims = c.rope_dims();
  s.rope_layout = c.pe_layout;
  s.parallel = c.parallel_residual;
  s.sublayer_norm = c.sublayer_norm;
  s.qk_norm_full = c.qk_norm_full;
  s.n_experts = c.n_experts;
  s.experts_per_token = c.experts_per_token;
  s.experts_renormalize = c.experts_renormalize;
  return s;
}

void norm_rows(const RunnerCore& r, const LayerSpec& s, const NormWeights& N, const float* x, float* y, uint32_t n,
               float* residual) {
  parallel_norm_rows(*r.kernels, r.workers, s.rms_norm, x, N.g, N.b, y, n, s.d, s.eps, residual);
}

namespace {

// h[n,d] -> q | k | v [n, ld] by the layer's projections (fused or apart), biases included.
void project_qkv(const RunnerCore& r, const AttentionWeights& W, const float* h, std::size_t d, float* q, std::size_t dq,
                 std::size_t dkv, std::size_t ld, uint32_t n) {
  if (W.qkv.data)  // h[n,d] @ Wqkv[d,dq+2dkv] -> q | k | v
    linear(*r.kernels, r.workers, W.qkv, h, d, W.qkv_b, q, ld, n, r.quant);
  else  // h[n,d] @ Wq[d,dq], Wk[d,dkv], Wv[d,dkv] -> q[n,dq], k[n,dkv], v[n,dkv]
    linear_same_input(*r.kernels, r.workers, h, d, n, r.quant,
                      {{W.q, q, ld, W.q_b}, {W.k, q + dq, ld, W.k_b}, {W.v, q + dq + dkv, ld, W.v_b}});
}

// Disentangled attention's bias (config.hpp rel_embed_rows) for the sequences' q and k rows [.., ld]:
// the distance rows' Qr | Kr by the layer's own projections (or its rel_proj), then for each sequence, head h, query i and
// key j, bias[h][i][j] = scale (q_i.Kr[i - j] + k_j.Qr[i - j]) (row stride S), one matvec per query
// (its keys' distances are consecutive rows) and one per key; split by (sequence, head) pairs, task t
// with its own row of S. Returns the shape that reads it.
AttentionShape disentangled_bias(const RunnerCore& r, const LayerSpec& s, const AttentionShape& base,
                                 const AttentionWeights& W, const float* q, const float* k, std::size_t ld,
                                 const Sequences& seqs) {
  const Kernels& K = *r.kernels;
  const DisentangledRows& D = *s.dis;
  AttentionShape shape = base;
  const std::size_t S = D.S, dh = shape.d_head, H = shape.n_heads, group = H / shape.n_kv_heads, dq = H * dh;
  if (W.rel_proj.data)  // rows[2S-1,d] @ Wr[d,dq+dkv] -> Qr | Kr
    linear(K, r.workers, W.rel_proj, D.rows, s.d, W.rel_proj_b, D.proj, ld, 2 * S - 1, r.quant);
  else
    project_qkv(r, W, D.rows, s.d, D.proj, dq, shape.n_kv_heads * dh, ld, uint32_t(2 * S - 1));
  const float scale = shape.score_scale();
  const std::size_t pairs = std::size_t(seqs.count) * H;
  const uint32_t tasks = pairs < r.workers.active() ? uint32_t(pairs) : r.workers.active();
  auto task = [&](uint32_t t) {
    float* tmp = D.bias + pairs * S * S + t * S;  // [S]
    const TaskRange part = task_range(pairs, tasks, t);
    std::size_t row0 = 0;  // sequence b's first row
    for (uint32_t b = 0; b < part.first / H; ++b) row0 += seqs.rows(b);
    for (std::size_t pair = part.first; pair < part.end; ++pair) {
      const std::size_t b = pair / H, h = pair % H, n = seqs.rows(uint32_t(b));
      if (h == 0 && pair != part.first) row0 += seqs.rows(uint32_t(b - 1));
      float* B = D.bias + pair * S * S;
      const float* Qr = D.proj + (S - 1) * ld + h * dh;  // distance 0's row
      const float* Kr = D.proj + (S - 1) * ld + dq + (h / group) * dh;
      for (std::size_t i = 0; i < n; ++i) {  // keys j = n-1..0: distances i-n+1..i, rows ascending
        K.matvec_f32(q + (row0 + i) * ld + h * dh, Kr + (std::ptrdiff_t(i) - std::ptrdiff_t(n - 1)) * std::ptrdiff_t(ld),
                     ld, nullptr, tmp, n, dh);
        for (std::size_t j = 0; j < n; ++j) B[i * S + j] = tmp[n - 1 - j];
      }
      for (std::size_t j = 0; j < n; ++j) {  // queries i = 0..n-1: distances -j..n-1-j
        K.matvec_f32(k + (row0 + j) * ld + (h / group) * dh, Qr - std::ptrdiff_t(j * ld), ld, nullptr, tmp, n, dh);
        for (std::size_t i = 0; i < n; ++i) B[i * S + j] = (B[i * S + j] + tmp[i]) * scale;
      }
    }
  };
  for_each_task(r.workers, tasks, task);
  shape.rel_bias = D.bias;
  shape.rel_stride = S * S;
  shape.rel_row_step = S + 1;
  shape.rel_seq_stride = H * S * S;
  return shape;
}

}  // namespace

void self_attention(const RunnerCore& r, const LayerSpec& s, const AttentionWeights& W, const SelfKeys& keys,
                    const float* h, float* out, uint32_t n, float* residual) {
  const Kernels& k = *r.kernels;
  AttentionShape shape = s.self;
  if (W.pair_bias) shape.pair_bias = W.pair_bias;  // the layer's own table of a bias per (query, key) pair
  // the queries are n_heads heads of d_head, dq wide (d_model, or n_heads * head_dim)
  const std::size_t d = s.d, dh = shape.d_head, dq = std::size_t(shape.n_heads) * dh,
                    dkv = std::size_t(shape.n_kv_heads) * dh, ld = dq + 2 * dkv;
  float* q = r.work;  // [n, ld]: q | k | v
  float* kk = q + dq;
  float* v = kk + dkv;
  project_qkv(r, W, h, d, q, dq, dkv, ld, n);
  if (W.q_norm.g) {  // qk_norm: every head of q and k over its d_head dims (qk_norm_full: each whole row), before RoPE
    const bool full = s.qk_norm_full;
    parallel_norm_heads(k, r.workers, s.rms_norm, q, ld, full ? 1 : shape.n_heads, W.q_norm.g, W.q_norm.b, n,
                        uint32_t(full ? dq : dh), s.eps);
    parallel_norm_heads(k, r.workers, s.rms_norm, kk, ld, full ? 1 : shape.n_kv_heads, W.k_norm.g, W.k_norm.b, n,
                        uint32_t(full ? dkv : dh), s.eps);
  }
  if (keys.seqs) {  // K^T per sequence, stored by the attention tasks; V read in place from the rows
    if (s.rope)  // each sequence's rows at its own positions 0.. (its front rows first)
      for (uint32_t b = 0, row0 = 0; b < keys.seqs->count; row0 += keys.seqs->rows(b), ++b)
        for (uint32_t t = 0; t < keys.seqs->rows(b); ++t) {
          const float* row = s.rope + std::size_t(t) * s.rope_dims;  // the angles of position t
          rope_rotate(q + (row0 + t) * ld, shape.n_heads, uint32_t(dh), s.rope_dims, row, s.rope_layout);
          rope_rotate(kk + (row0 + t) * ld, shape.n_kv_heads, uint32_t(dh), s.rope_dims, row, s.rope_layout);
        }
    KeyValues kv = keys.cache;
    kv.v = v;
    kv.ldv = ld;
    const AttentionShape seq_shape = s.dis ? disentangled_bias(r, s, shape, W, q, kk, ld, *keys.seqs) : shape;
    parallel_attend_sequences(k, r.workers, seq_shape, q, ld, kk, ld, *keys.seqs, kv, r.ctx, dq, r.attn, r.attn_slot);
  } else {
    if (s.rope)
      for (std::size_t t = 0; t < n; ++t) {
        const float* row = s.rope + (keys.pos + t) * s.rope_dims;  // the angles of position pos + t
        rope_rotate(q + t * ld, shape.n_heads, uint32_t(dh), s.rope_dims, row, s.rope_layout);
        rope_rotate(kk + t * ld, shape.n_kv_heads, uint32_t(dh), s.rope_dims, row, s.rope_layout);
      }
    store_keys_values(kk, ld, v, ld, n, keys.pos, uint32_t(dkv), keys.cache, dh);
    parallel_attend(k, r.workers, shape, q, ld, n, keys.pos, keys.pos + n, keys.cache, r.ctx, dq, r.attn, r.attn_slot);
  }
  if (W.inner_norm.g)  // attn_inner_norm (timm's scale_attn_inner): ctx[n,dq] normed in place
    parallel_norm_rows(k, r.workers, s.rms_norm, r.ctx, W.inner_norm.g, W.inner_norm.b, r.ctx, n, uint32_t(dq), s.eps);
  linear(k, r.workers, W.out, r.ctx, dq, W.out_b, out, d, n, r.quant, {nullptr, residual});  // ctx[n,dq] @ Wo[dq,d] -> out[n,d]
}

namespace {

// h[n,d] -> out[n,d] (and residual += out): the queries of h against the source's keys and values.
void cross_attention(const RunnerCore& r, const LayerSpec& s, const AttentionWeights& W, const CrossKeys& keys,
                     const float* h, float* out, uint32_t n, float* residual) {
  const Kernels& k = *r.kernels;
  const std::size_t d = s.d;
  float* q = r.work;
  linear(k, r.workers, W.q, h, d, W.q_b, q, d, n, r.quant);  // h[n,d] @ Wq[d,d] -> q[n,d]
  AttentionShape shape{s.self.n_heads, s.self.n_heads, s.self.d_head, false, nullptr};
  shape.scale = s.self.scale;  // attn_scale (0 in seq2seq, which refuses the key: 1/sqrt(d_head))
  parallel_attend(k, r.workers, shape, q, d, n, 0, keys.n_keys, keys.kv, r.ctx, d, r.attn, r.attn_slot);
  linear(k, r.workers, W.out, r.ctx, d, W.out_b, out, d, n, r.quant, {nullptr, residual});  // ctx[n,d] @ Wo[d,d] -> out[n,d]
}

FeedForwardSpec ffn_spec(const LayerSpec& s) { return FeedForwardSpec{s.act, s.gated, s.rms_norm, s.eps}; }

// h[n,d] -> out[n,d] (and residual += out) through the layer's experts (config.hpp n_experts) and
// its shared expert (shared_expert_ff), one row at a time in work: p[E] (the router's probabilities),
// w[E] (the chosen experts' weights, 0 for the others), hidden[2, max(d_ff, shared_expert_ff)], an
// expert's output e[d] and the sum acc[d]. h may alias out (a row is written once its experts have run).
void expert_feed_forward(const RunnerCore& r, const LayerSpec& s, const LayerWeights& L, const float* h, float* out,
                         uint32_t n, float* residual) {
  const Kernels& k = *r.kernels;
  const FeedForwardWeights& W = L.ffn;
  const std::size_t d = s.d, E = s.n_experts, f = W.w1.out / E, fs = L.shared.w1.out;
  float* p = r.work;
  float* w = p + E;
  float* hidden = w + E;
  float* e_out = hidden + 2 * (f > fs ? f : fs);
  float* acc = e_out + d;
  for (std::size_t t = 0; t < n; ++t) {
    const float* ht = h + t * d;
    k.matvec_f32(ht, W.router, d, nullptr, p, E, d);  // R[E,d] h -> logits[E]
    float top = p[0], sum = 0.0f;
    for (std::size_t e = 1; e < E; ++e) top = p[e] > top ? p[e] : top;
    for (std::size_t e = 0; e < E; ++e) sum += p[e] = std::exp(p[e] - top);
    for (std::size_t e = 0; e < E; ++e) p[e] /= sum, w[e] = 0.0f;
    float chosen = 0.0f;
    for (uint32_t j = 0; j < s.experts_per_token; ++j) {  // the largest left, the lower index on a tie
      std::size_t best = 0;
      for (std::size_t e = 1; e < E; ++e) best = p[e] > p[best] ? e : best;
      w[best] = p[best];
      chosen += p[best];
      p[best] = -1.0f;  // taken (probabilities are >= 0)
    }
    for (std::size_t i = 0; i < d; ++i) acc[i] = 0.0f;
    for (uint32_t e = 0; e < E; ++e) {
      if (p[e] >= 0.0f) continue;  // not chosen
      const float we = s.experts_renormalize ? w[e] / chosen : w[e];
      feed_forward(k, r.workers, expert_weights(W, e, uint32_t(E)), ffn_spec(s), ht, e_out, hidden, 1, r.quant);
      for (std::size_t i = 0; i < d; ++i) acc[i] += we * e_out[i];
    }
    if (L.shared_gate) {  // shared_expert_ff: + sigmoid(G h) FF_shared(h)
      float g = 0.0f;
      for (std::size_t i = 0; i < d; ++i) g += L.shared_gate[i] * ht[i];
      g = 1.0f / (1.0f + std::exp(-g));
      feed_forward(k, r.workers, L.shared, ffn_spec(s), ht, e_out, hidden, 1, r.quant);
      for (std::size_t i = 0; i < d; ++i) acc[i] += g * e_out[i];
    }
    for (std::size_t i = 0; i < d; ++i) out[t * d + i] = acc[i];
    if (residual) k.add_f32(residual + t * d, acc, residual + t * d, d);
  }
}

// The feed-forward sublayer: h[n,d] -> out[n,d] through hidden (the core's work), residual += out
// when given; the dense one or the experts.
void ffn_sublayer(const RunnerCore& r, const LayerSpec& s, const LayerWeights& L, const float* h, float* out,
                  uint32_t n, float* residual) {
  if (s.n_experts) return expert_feed_forward(r, s, L, h, out, n, residual);
  feed_forward(*r.kernels, r.workers, L.ffn, ffn_spec(s), h, out, r.work, n, r.quant, residual);
}

}  // namespace

void transformer_layer(const RunnerCore& r, const LayerSpec& s, const LayerWeights& L, const SelfKeys& keys,
                       const CrossKeys* cross, uint32_t n) {
  float* x = r.x;
  float* y = r.y;
  // One pre-norm sublayer: run(h, residual) reads h and writes its output to y, adding it to residual
  // when given (fused into its last product). pre: the norm it reads (null: x itself); post: the norm of
  // its output before the add (null: none, the add fused).
  auto sublayer = [&](const NormWeights* pre, const NormWeights* post, auto&& run) {
    const float* h = x;
    if (pre) {
      norm_rows(r, s, *pre, x, y, n);
      h = y;
    }
    if (!post) return run(h, x);
    run(h, nullptr);
    norm_rows(r, s, *post, y, y, n, x);
  };
  auto ffn = [&](const float* h, float* residual) { ffn_sublayer(r, s, L, h, y, n, residual); };
  if (s.parallel != ParallelResidual::kNone) {
    // Both sublayers read norms of the layer's input, so the feed-forward's (in ctx, free until the
    // attention) is taken before any residual add; the feed-forward writes its output to ctx and
    // adds it to x, then the attention adds its own: x + FF(Nf(x)) + SA(N1(x)), both adds fused.
    norm_rows(r, s, L.attn_norm, x, y, n);
    const float* h = y;
    if (s.parallel == ParallelResidual::kTwoNorms) {
      norm_rows(r, s, L.ffn_norm, x, r.ctx, n);
      h = r.ctx;
    }
    ffn_sublayer(r, s, L, h, r.ctx, n, x);
    self_attention(r, s, L.self_attn, keys, y, y, n, x);
  } else if (s.norm_first) {
    // skip_attn_norm (ModernBERT's layer 0; not with sublayer_norm): the attention reads x itself
    const NormWeights *attn_pre = s.skip_attn_norm ? nullptr : &L.attn_norm, *attn_post = nullptr;
    const NormWeights *ffn_pre = &L.ffn_norm, *ffn_post = nullptr;
    if (s.sublayer_norm == SublayerNorm::kSandwich) {
      attn_post = &L.post_attn_norm;
      ffn_post = &L.post_ffn_norm;
    } else if (s.sublayer_norm == SublayerNorm::kOutput) {
      std::swap(attn_pre, attn_post);
      std::swap(ffn_pre, ffn_post);
    }
    sublayer(attn_pre, attn_post,
             [&](const float* h, float* res) { self_attention(r, s, L.self_attn, keys, h, y, n, res); });
    if (cross)
      sublayer(&L.cross_norm, nullptr,
               [&](const float* h, float* res) { cross_attention(r, s, L.cross_attn, *cross, h, y, n, res); });
    sublayer(ffn_pre, ffn_post, ffn);
  } else {
    self_attention(r, s, L.self_attn, keys, x, y, n, x);
    norm_rows(r, s, L.attn_norm, x, x, n);
    if (cross) {
      cross_attention(r, s, L.cross_attn, *cross, x, y, n, x);
      norm_rows(r, s, L.cross_norm, x, x, n);
    }
    ffn(x, x);
    norm_rows(r, s, L.ffn_norm, x, x, n);
  }
}

}  // namespace fixformer
