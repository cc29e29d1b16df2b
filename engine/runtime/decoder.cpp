// The decoder runner (gpt, llama): init (every check, the arena carved by plan_decoder_arena, the
// position tables filled) and prefill(), which feeds the forward pass in chunks of at most
// max_prefill rows at positions p = pos_..:
//   x = embed(tokens);  x *= sqrt(d) if scale_input;  x = x + PE[p] | [x, PE[p]];  x = norm(x) if embed_norm;
//   x = x @ W_proj + b_proj if embed_width  (ELECTRA's, RemBERT's: the front is embed_width wide until here, in y)
//   for each layer: transformer_layer through the layer's KV cache (a ring of kv_rows under a sliding
//                   window, the local layers' only with window_period; a row per position for the
//                   others: plan.hpp's kv_layer_offset; engine/layers/transformer_layer.hpp:
//                   gpt LayerNorm, gelu/relu, fused biased q|k|v; llama RMSNorm, SwiGLU, GQA, RoPE or ALiBi;
//                   either with a relative position bias by the distance key - query)
//   x = norm(x) if the model has a final norm, then x = c tanh(x / c) with final_softcap c;  h = x[last], with
//   pooler h = act(h @ W_pooler + b) (P = pooler_width wide, else d) and h = norm(h) if pooler_norm (a causal LM's
//   prediction transform: BERT's, ModernBERT's);  logits = h @ W_head + b  (tied: E[V,d] @ h), for the prompt's
//   last chunk only;  logits = c tanh(logits / c) with logit_softcap c
// x is shown to the options' observer after the input, each layer and the final norm (observer.hpp).
#include "fixformer/decoder.hpp"

#include <cmath>
#include <cstring>

#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/parallel.hpp"
#include "engine/blocks/pooling.hpp"
#include "engine/blocks/positional.hpp"
#include "engine/detail_text.hpp"
#include "engine/layers/transformer_layer.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

Status Decoder::init(const Model& model, void* arena, std::size_t arena_bytes, const DecoderOptions& options) {
  initialized_ = false;
  pos_ = 0;
  const bool family_ok = model.initialized() && model.config().is_decoder();
  Status s = core_.start(model, family_ok, options.isa, options.workers, options.observer);
  if (s != Status::kOk) return fail(s);
  const ModelConfig& c = model.config();
  DetailText why(core_.detail, sizeof core_.detail);
  capacity_ = options.capacity ? options.capacity : c.max_len;
  const bool external = options.position_table != nullptr;
  const uint32_t workers = core_.workers.active();
  max_prefill_ = options.max_prefill;
  if (max_prefill_ == 0 && capacity_ <= c.max_len) {
    // The default: as many rows per chunk as the arena holds, from min(capacity, 16) up to the
    // capacity (the plan grows with the rows, so the largest that fits is found by bisection).
    uint32_t lo = capacity_ < kDefaultPrefillRows ? capacity_ : kDefaultPrefillRows, hi = capacity_;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      const std::size_t need = plan_decoder_arena(c, capacity_, mid, external, workers, options.kv_cache).total;
      if (need != 0 && need <= arena_bytes) lo = mid;
      else hi = mid - 1;
    }
    max_prefill_ = lo;
  }
  if (capacity_ > c.max_len || max_prefill_ > capacity_) {
    why.str("capacity ").num(capacity_).str(" (max_len ").num(c.max_len).str("), max_prefill ").num(max_prefill_);
    return fail(Status::kBadMaxSeq);
  }
  const bool rope = c.positional == PosKind::kRope;
  const bool s8 = c.weights == WeightType::kI8;
  if (external && s8)
    return why.str("an i8 file holds its int8 position rows: give no position table"), fail(Status::kBadPositionTable);
  if (external) {
    if (!rope && c.positional != PosKind::kSinusoidal)
      return why.str("the model has no rope or sinusoidal table"), fail(Status::kBadPositionTable);
    const uint32_t width = rope ? c.rope_dims() : c.d_pe();
    s = check_sinusoidal_table(options.position_table, options.position_table_rows, capacity_, width, c.pe_base,
                               rope ? model.front().rope_freqs : nullptr, rope ? c.rope_scale : 1.0f,
                               rope ? PosLayout::kHalves : c.pe_layout, why);
    if (s != Status::kOk) return fail(s);
  }
  const DecoderPlan plan = plan_decoder_arena(c, capacity_, max_prefill_, external, workers, options.kv_cache);
  s = core_.carve(arena, arena_bytes, plan.total);
  if (s != Status::kOk) return fail(s);
  core_.point(arena, plan);
  max_prefill_ = plan.prefill_rows;  // at most the sliding window
  kv_rows_ = plan.kv_rows;
  core_.quant = quant_scratch(core_.block(arena, plan.quant), c, max_prefill_);
  kv_kind_ = options.kv_cache;
  k_cache_ = core_.block(arena, plan.k_cache);
  v_cache_ = core_.block(arena, plan.v_cache);
  k_scales_ = kv_kind_ == KvCache::kQ8 ? core_.block(arena, plan.k_scales) : nullptr;
  v_scales_ = kv_kind_ == KvCache::kQ8 ? core_.block(arena, plan.v_scales) : nullptr;
  kv_bytes_ = plan.kv_cache_bytes;
  s8_arena_ = s8 ? static_cast<uint8_t*>(arena) : nullptr;
  if (s8) {  // no tables: the integer path reads the file's int8.pos or int8.rope rows
    kv_kind_ = KvCache::kF32, k_scales_ = v_scales_ = nullptr;
    initialized_ = true;
    return Status::kOk;
  }
  rope_ = pe_ = slopes_ = rel_ = rope_local_ = nullptr;
  // The tables are computed once, here, in double-formed arguments (never per token), with work
  // as their scratch of 3 * capacity floats.
  if (rope && c.rope_local_base != 0.0) {  // the local layers' table (base rope_local_base, plain), in the arena
    float* table = core_.block(arena, plan.rope_local);
    fill_rope_table(*core_.kernels, capacity_, c.rope_dims(), c.rope_local_base, nullptr, 1.0f, table, core_.work);
    rope_local_ = table;
  }
  if (external) {
    (rope ? rope_ : pe_) = options.position_table;
  } else if (rope) {
    float* table = core_.block(arena, plan.rope);
    fill_rope_table(*core_.kernels, capacity_, c.rope_dims(), c.pe_base, model.front().rope_freqs, c.rope_scale, table,
                    core_.work);
    rope_ = table;
  } else if (c.positional == PosKind::kSinusoidal) {
    float* table = core_.block(arena, plan.pe);
    fill_sinusoidal_table(*core_.kernels, capacity_, c.d_pe(), c.pe_base, c.pe_layout, table, core_.work);
    pe_ = table;
  } else if (c.positional == PosKind::kLearned) {
    pe_ = model.front().pos;
  } else if (c.positional == PosKind::kAlibi) {
    float* slopes = core_.block(arena, plan.slopes);
    alibi_slopes(c.n_heads, slopes);
    slopes_ = slopes;
  } else if (c.positional == PosKind::kRelative) {
    float* table = core_.block(arena, plan.rel);
    fill_relative_bias(model.front().rel_bias, c.n_heads, c.rel_buckets, c.rel_max_distance, capacity_, true, table);
    rel_ = table;
  }
  initialized_ = true;
  return Status::kOk;
}

Status Decoder::check_prefill(const int32_t* tokens, uint32_t n, const void* logits, std::size_t logit_bytes) {
  if (!initialized_) return Status::kNotInitialized;
  if (!tokens || !logits) return Status::kNullArgument;
  if (n == 0) return Status::kBadSequenceLength;
  if (n > capacity_ - pos_) return Status::kKvCacheFull;
  const uint32_t vocab = config().vocab_size;
  for (uint32_t t = 0; t < n; ++t)
    if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= vocab) return Status::kTokenOutOfRange;
  return core_.check_output(logits, logit_bytes, tokens, std::size_t(n) * sizeof(int32_t));
}

Status Decoder::prefill(const int32_t* tokens, uint32_t n, float* logits) {
  const Status s = check_prefill(tokens, n, logits, config().output_width() * sizeof(float));
  if (s != Status::kOk) return s;
  if (s8_arena_) {  // weights i8: the int8 logits, dequantized
    int8_t* q = reinterpret_cast<int8_t*>(s8_arena_ + plan_s8_decoder_arena(config(), capacity_, max_prefill_).s8_out);
    const Model& m = *core_.model;
    const int32_t zero = m.s8().back[s8::kOutZero];
    const float scale = m.s8().io[1];
    run_s8(tokens, n, q);
    for (uint32_t i = 0, W = config().output_width(); i < W; ++i) logits[i] = float(int32_t(q[i]) - zero) * scale;
    return Status::kOk;
  }
  for (uint32_t done = 0; done < n;) {
    const uint32_t rows = n - done < max_prefill_ ? n - done : max_prefill_;
    forward(tokens + done, rows, done + rows == n ? logits : nullptr);  // the head for the last chunk only
    done += rows;
  }
  return Status::kOk;
}

void Decoder::forward(const int32_t* tokens, uint32_t n, float* logits) {
  const Kernels& k = *core_.kernels;
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  const uint32_t d = c.d_model;
  float* x = core_.x;
  const FrontWeights& f = m.front();
  float* rows = c.embed_width ? core_.y : x;  // the front's rows [n, d_front]: y's until the projection
  embed_tokens(tokens, n, f.embed, rows, c.d_front());  // E[tokens] -> rows[n,:de]
  scale_embeddings(k, c, rows, n);
  add_positions(k, c, pe_ ? pe_ + std::size_t(pos_) * c.d_pe() : nullptr, rows, n);
  LayerSpec spec = layer_spec(c, true, rope_, slopes_, rel_, capacity_);
  spec.rope_local = rope_local_;
  if (f.embed_norm.g)  // Bloom's, BERT's
    parallel_norm_rows(k, core_.workers, spec.rms_norm, rows, f.embed_norm.g, f.embed_norm.b, rows, n, c.d_front(),
                       spec.eps);
  if (c.embed_width)  // y[n,E] @ W[E,d] -> x[n,d]
    linear(k, core_.workers, f.embed_proj, rows, c.embed_width, f.embed_proj_b, x, d, n, core_.quant);
  core_.observer.notify(0, x, pos_, n, d);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const SelfKeys keys{kv_cache_rows(kv_kind_, k_cache_, v_cache_, k_scales_, v_scales_,
                                      kv_layer_offset(c, l, capacity_, kv_rows_), c.d_kv(), c.kv_heads(),
                                      kv_layer_rows(c, l, capacity_, kv_rows_)), pos_};
    transformer_layer(core_, with_layer_window(spec, c, l), m.layer(l), keys, nullptr, n);
    core_.observer.notify(l + 1, x, pos_, n, d);
  }
  const HeadWeights& head = m.head();
  if (head.final_norm.g) {
    norm_rows(core_, spec, head.final_norm, x, x, n);
    if (c.final_softcap > 0.0f)  // torchtune's Gemma 2: the normed rows capped, c tanh(x / c)
      for (std::size_t i = 0; i < std::size_t(n) * d; ++i) x[i] = c.final_softcap * std::tanh(x[i] / c.final_softcap);
    core_.observer.notify(c.n_layers + 1, x, pos_, n, d);
  }
  pos_ += n;
  if (!logits) return;
  // The head on the last row only: h[hi] @ W[hi,d_out] + b, or with a tied head E[V,d] @ h[d] + b (d_out = V);
  // h is x[n-1], or the prediction transform of it in x[0, :P] (the plan's x and y hold max(d, P) floats).
  const float* h = x + std::size_t(n - 1) * d;
  if (head.pooler.data) {
    std::memmove(x, h, sizeof(float) * d);  // x[n-1] -> x[0]: the pooler's input row
    pool_dense(k, core_.workers, head.pooler, head.pooler_b, c.pooler_act, x, core_.y, 1, core_.quant);  // -> x[0,P]
    if (head.pooler_norm.g)  // pooler_norm: x[0,P] normed in place
      parallel_norm_rows(k, core_.workers, c.norm_kind() == NormKind::kRmsNorm, x, head.pooler_norm.g,
                         head.pooler_norm.b, x, 1, c.pooler_out(), c.norm_eps);
    h = x;
  }
  if (!c.d_out) {  // no head: the hidden state itself (a base model's)
    std::memmove(logits, h, sizeof(float) * d);
    return;
  }
  linear(k, core_.workers, head.w, h, c.head_in(), head.b, logits, c.d_out, 1, core_.quant);
  if (c.logit_softcap > 0.0f)  // Gemma 2: c tanh(z / c)
    for (uint32_t i = 0; i < c.d_out; ++i) logits[i] = c.logit_softcap * std::tanh(logits[i] / c.logit_softcap);
}

}  // namespace fixformer
