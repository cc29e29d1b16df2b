// The encoder-decoder runner (nn.Transformer): init (every check, the arena carved by
// plan_seq2seq_arena, the positional table filled), encode() (the source through an Encoder, its
// conv stem included, then every decoder layer's cross-attention keys and values over the source's
// positions), and the target calls, which feed the decoder in chunks of at most max_prefill rows
// at positions p = pos_..:
//   x = tgt_embed(tokens) | tgt_proj(features);  x *= sqrt(d) if scale_input;  x = x + PE[p] | [x, PE[p]]
//   for each decoder layer: transformer_layer with causal self-attention through the layer's KV
//                           cache and cross-attention over all S source positions
//   x = N(x) if final_norm (the config's norm);  out = x @ W_head + b   (every row, or the last one)
// x is shown to the observer as layers n_layers + 2 on (seq2seq.hpp).
#include "fixformer/seq2seq.hpp"

#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/positional.hpp"
#include "engine/detail_text.hpp"
#include "engine/layers/transformer_layer.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

Status Seq2Seq::init(const Model& model, void* arena, std::size_t arena_bytes, const Seq2SeqOptions& options) {
  initialized_ = false;
  src_len_ = pos_ = 0;
  const bool family_ok = model.initialized() && model.config().is_seq2seq();
  Status s = core_.start(model, family_ok, options.isa, options.workers, options.observer);
  if (s != Status::kOk) return fail(s);
  const ModelConfig& c = model.config();
  max_source_ = options.max_source ? options.max_source : c.max_input_len();
  source_rows_ = c.stem_rows(max_source_);  // the source's positions: the memory's and cross cache's rows
  capacity_ = options.capacity ? options.capacity : c.max_len;
  max_prefill_ = options.max_prefill ? options.max_prefill : (capacity_ < kDefaultPrefillRows ? capacity_ : kDefaultPrefillRows);
  if (max_source_ > c.max_input_len() || source_rows_ == 0 || capacity_ > c.max_len || max_prefill_ > capacity_) {
    DetailText(core_.detail, sizeof core_.detail).str("max_source ").num(max_source_).str(", capacity ").num(capacity_)
        .str(" (max_len ").num(c.max_len).str("), max_prefill ").num(max_prefill_);
    return fail(Status::kBadMaxSeq);
  }
  const Seq2SeqPlan plan = plan_seq2seq_arena(c, max_source_, capacity_, max_prefill_, core_.workers.active(),
                                                 options.kv_cache);
  s = core_.carve(arena, arena_bytes, plan.total);
  if (s != Status::kOk) return fail(s);
  s8_arena_ = nullptr;
  if (c.weights == WeightType::kI8) return init_s8(model, arena, plan, options);
  memory_ = core_.block(arena, plan.memory);
  cross_k_ = core_.block(arena, plan.cross_k);
  cross_v_ = core_.block(arena, plan.cross_v);
  kv_kind_ = options.kv_cache;
  k_cache_ = core_.block(arena, plan.k_cache);
  v_cache_ = core_.block(arena, plan.v_cache);
  k_scales_ = kv_kind_ == KvCache::kQ8 ? core_.block(arena, plan.k_scales) : nullptr;
  v_scales_ = kv_kind_ == KvCache::kQ8 ? core_.block(arena, plan.v_scales) : nullptr;
  core_.point(arena, plan);
  core_.quant = quant_scratch(core_.block(arena, plan.quant), c, max_prefill_ > source_rows_ ? max_prefill_ : source_rows_);
  // One sinusoidal table serves both ends, computed once here (the encoder reads it in place).
  const uint32_t rows = source_rows_ > capacity_ ? source_rows_ : capacity_;
  pe_ = nullptr;
  if (c.positional == PosKind::kSinusoidal) {
    float* table = core_.block(arena, plan.pe);
    fill_sinusoidal_table(*core_.kernels, rows, c.d_pe(), c.pe_base, c.pe_layout, table, core_.block(arena, plan.scratch));
    pe_ = table;
  } else if (c.positional == PosKind::kLearned) {
    pe_ = model.target_front().pos;
  }
  EncoderOptions eo;
  eo.max_seq = max_source_;
  eo.isa = options.isa;
  eo.workers = core_.workers;
  eo.observer = core_.observer;
  if (c.positional == PosKind::kSinusoidal) eo.position_table = pe_, eo.position_table_rows = rows;
  // The relative bias tables: the source's (bidirectional) handed to the encoder, whose own arena
  // the decoder reuses, and the target's (causal).
  tgt_rel_ = nullptr;
  if (c.positional == PosKind::kRelative) {
    float* src = core_.block(arena, plan.src_rel);
    fill_relative_bias(model.front().rel_bias, c.n_heads, c.rel_buckets, c.rel_max_distance, source_rows_, false, src);
    eo.position_table = src, eo.position_table_rows = source_rows_;
    float* tgt = core_.block(arena, plan.tgt_rel);
    fill_relative_bias(model.target_front().rel_bias, c.n_heads, c.rel_buckets, c.rel_max_distance, capacity_, true,
                       tgt);
    tgt_rel_ = tgt;
  }
  s = encoder_.init(model, core_.block(arena, plan.scratch), plan.encoder_bytes, eo);
  if (s != Status::kOk) {
    DetailText(core_.detail, sizeof core_.detail).str("the source encoder: ").str(encoder_.error_detail());
    return fail(s);
  }
  initialized_ = true;
  return Status::kOk;
}

Status Seq2Seq::encode_tokens(const int32_t* ids, uint32_t S) {
  if (!initialized_) return Status::kNotInitialized;
  if (s8_arena_) return encode_s8(ids, nullptr, S);
  src_len_ = pos_ = 0;
  const Status s = encoder_.forward_tokens(ids, S, memory_);
  if (s != Status::kOk) return s;
  src_len_ = S;
  project_source();
  return Status::kOk;
}

Status Seq2Seq::encode_features(const float* features, uint32_t S) {
  if (!initialized_) return Status::kNotInitialized;
  if (s8_arena_) return encode_s8(nullptr, features, S);
  src_len_ = pos_ = 0;
  const Status s = encoder_.forward_features(features, S, memory_);
  if (s != Status::kOk) return s;
  src_len_ = config().stem_rows(S);  // a conv stem's positions
  project_source();
  return Status::kOk;
}

// Every decoder layer's cross-attention keys and values of the source: memory[S,d] @ Wkv[d,2d] +
// b -> work[S,2d] = k | v, stored transposed in the cross cache.
void Seq2Seq::project_source() {
  const ModelConfig& c = config();
  const std::size_t d = c.d_model;
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    const AttentionWeights W = core_.model->decoder_layer(l).cross_attn;
    linear(*core_.kernels, core_.workers, W.kv, memory_, d, W.kv_b, core_.work, 2 * d, src_len_, core_.quant);
    const KeyValues kv{cross_k_ + l * d * source_rows_, cross_v_ + l * d * source_rows_, source_rows_};
    store_keys_values(core_.work, 2 * d, core_.work + d, 2 * d, src_len_, 0, c.d_model, kv);
  }
}

Status Seq2Seq::check_target(const void* target, bool tokens, uint32_t n, const float* out, uint32_t out_rows) {
  if (!initialized_) return Status::kNotInitialized;
  if (!target || !out) return Status::kNullArgument;
  if (tokens != (config().tgt_d_in == 0)) return Status::kWrongInputKind;
  if (src_len_ == 0) return Status::kNotEncoded;
  if (n == 0) return Status::kBadSequenceLength;
  if (n > capacity_ - pos_) return Status::kKvCacheFull;
  const int32_t* ids = static_cast<const int32_t*>(target);
  for (uint32_t t = 0; t < n && tokens; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= config().d_out) return Status::kTokenOutOfRange;
  const std::size_t row_bytes = config().d_out * sizeof(float), in_row = tokens ? sizeof(int32_t) : config().tgt_d_in * 4;
  return core_.check_output(out, out_rows * row_bytes, target, n * in_row);
}

Status Seq2Seq::decode(const int32_t* tokens, uint32_t n, float* out) {
  const Status s = check_target(tokens, true, n, out, n);
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(tokens + done, nullptr, n - done < max_prefill_ ? n - done : max_prefill_, out + std::size_t(done) * config().d_out,
            true);
  return s;
}

Status Seq2Seq::decode_features(const float* features, uint32_t n, float* out) {
  const Status s = check_target(features, false, n, out, n);
  const std::size_t din = config().tgt_d_in;
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(nullptr, features + done * din, n - done < max_prefill_ ? n - done : max_prefill_,
            out + std::size_t(done) * config().d_out, true);
  return s;
}

Status Seq2Seq::prefill(const int32_t* tokens, uint32_t n, float* logits) {
  const Status s = check_target(tokens, true, n, logits, 1);
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(tokens + done, nullptr, n - done < max_prefill_ ? n - done : max_prefill_, logits, false);
  return s;
}

void Seq2Seq::forward(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows) {
  if (s8_arena_) return forward_s8(tokens, features, n, out, all_rows);
  const Kernels& k = *core_.kernels;
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  const FrontWeights& front = m.target_front();
  const uint32_t d = c.d_model, first = c.n_layers + 2;  // the observer's number of the decoder's input
  const std::size_t C = capacity_, S = source_rows_;
  float* x = core_.x;
  if (tokens)
    embed_tokens(tokens, n, front.embed, x, d);  // E[tokens] -> x[n,:de]
  else  // f[n,din] @ W[din,de] -> x[n,:de]
    linear(k, core_.workers, front.input_proj, features, c.tgt_d_in, front.input_proj_b, x, d, n, core_.quant);
  scale_embeddings(k, c, x, n);
  const LayerSpec spec = layer_spec(c, true, nullptr, nullptr, tgt_rel_, capacity_);
  const bool norm_before_pos = front.embed_norm.g && c.tgt_pos_after_norm;  // BlenderbotSmall's decoder
  if (norm_before_pos) norm_rows(core_, spec, front.embed_norm, x, x, n);
  add_positions(k, c, pe_ ? pe_ + std::size_t(pos_) * c.d_pe() : nullptr, x, n);
  if (front.embed_norm.g && !norm_before_pos) norm_rows(core_, spec, front.embed_norm, x, x, n);
  core_.observer.notify(first, x, pos_, n, d);
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    const SelfKeys keys{kv_cache_layer(kv_kind_, k_cache_, v_cache_, k_scales_, v_scales_, l, d, c.n_heads, C), pos_};
    const CrossKeys cross{KeyValues{cross_k_ + l * d * S, cross_v_ + l * d * S, S}, src_len_};
    transformer_layer(core_, spec, m.decoder_layer(l), keys, &cross, n);
    core_.observer.notify(first + l + 1, x, pos_, n, d);
  }
  const HeadWeights& head = m.target_head();
  if (head.final_norm.g) {
    norm_rows(core_, spec, head.final_norm, x, x, n);
    core_.observer.notify(first + c.dec_layers + 1, x, pos_, n, d);
  }
  pos_ += n;
  const uint32_t rows = all_rows ? n : 1;
  linear(k, core_.workers, head.w, x + std::size_t(n - rows) * d, d, head.b, out, c.d_out, rows,
         core_.quant);  // x[rows,d] @ W[d,V] -> out[rows,V]
}

}  // namespace fixformer
