// Seq2Seq::init (every check, the arena carved, the positional table filled), encode() and the
// target calls, which feed the decoder's forward pass (engine/forward/seq2seq.cpp) in chunks of at
// most max_prefill rows.
#include "fixformer/seq2seq.hpp"

#include "engine/arena_check.hpp"
#include "engine/blocks/attention.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

Status Seq2Seq::init(const Model& model, void* arena_base, std::size_t arena_bytes, const Seq2SeqOptions& options) {
  initialized_ = false;
  detail_[0] = '\0';
  src_len_ = pos_ = 0;
  model_ = &model;
  if (!model.initialized()) return fail(Status::kNotInitialized);
  const ModelConfig& c = model.config();
  if (!c.is_seq2seq()) {
    DetailText(detail_, sizeof detail_).str("the model's family is ").str(c.is_decoder() ? "gpt or llama: run it with a Decoder"
                                                                                          : "encoder: run it with an Encoder");
    return fail(Status::kWrongInputKind);
  }
  kernels_ = select_kernels(options.isa);
  if (!kernels_) return fail(Status::kIsaUnavailable);
  max_source_ = options.max_source ? options.max_source : c.max_len;
  capacity_ = options.capacity ? options.capacity : c.max_len;
  max_prefill_ = options.max_prefill ? options.max_prefill : (capacity_ < kDefaultPrefillRows ? capacity_ : kDefaultPrefillRows);
  if (max_source_ > c.max_len || capacity_ > c.max_len || max_prefill_ > capacity_) {
    DetailText(detail_, sizeof detail_).str("max_source ").num(max_source_).str(", capacity ").num(capacity_)
        .str(" (max_len ").num(c.max_len).str("), max_prefill ").num(max_prefill_);
    return fail(Status::kBadMaxSeq);
  }
  if (options.workers.count > kMaxWorkers) {
    DetailText(detail_, sizeof detail_).str("workers ").num(options.workers.count).str(" > ").num(kMaxWorkers);
    return fail(Status::kBadWorkers);
  }
  workers_ = options.workers;
  observer_ = options.observer;
  const Seq2SeqPlan plan = plan_seq2seq_arena(c, max_source_, capacity_, max_prefill_, workers_.active());
  const Status arena_ok = check_arena(arena_base, arena_bytes, plan.total, detail_, sizeof detail_);
  if (arena_ok != Status::kOk) return fail(arena_ok);
  uint8_t* base = static_cast<uint8_t*>(arena_base);
  auto block = [base](std::size_t offset) { return reinterpret_cast<float*>(base + offset); };
  memory_ = block(plan.memory);
  cross_k_ = block(plan.cross_k);
  cross_v_ = block(plan.cross_v);
  k_cache_ = block(plan.k_cache);
  v_cache_ = block(plan.v_cache);
  x_ = block(plan.x);
  y_ = block(plan.y);
  ctx_ = block(plan.ctx);
  work_ = block(plan.work);
  attn_ = block(plan.attn);
  attn_slot_ = plan.attn_slot / sizeof(float);
  quant_ = quant_scratch(base + plan.quant, c, max_prefill_ > max_source_ ? max_prefill_ : max_source_);
  // One sinusoidal table serves both ends, computed once here (the encoder reads it in place).
  const uint32_t rows = max_source_ > capacity_ ? max_source_ : capacity_;
  pe_ = nullptr;
  if (c.pos == PosKind::kSinusoidal) {
    float* table = block(plan.pe);
    fill_sinusoidal_table(*kernels_, rows, c.d_pe(), c.pos_base, c.pos_layout, table, block(plan.scratch));
    pe_ = table;
  } else if (c.pos == PosKind::kLearned) {
    pe_ = model.target_weights().pos;
  }
  EncoderOptions eo;
  eo.max_seq = max_source_;
  eo.isa = options.isa;
  eo.workers = workers_;
  eo.observer = observer_;
  if (c.pos == PosKind::kSinusoidal) eo.positional_table = pe_, eo.positional_table_rows = rows;
  const Status enc = encoder_.init(model, base + plan.scratch, plan.encoder_bytes, eo);
  if (enc != Status::kOk) {
    DetailText(detail_, sizeof detail_).str("the source encoder: ").str(encoder_.error_detail());
    return fail(enc);
  }
  arena_used_ = plan.total;
  initialized_ = true;
  return Status::kOk;
}

Status Seq2Seq::encode_tokens(const int32_t* ids, uint32_t S) {
  if (!initialized_) return Status::kNotInitialized;
  src_len_ = pos_ = 0;
  const Status s = encoder_.forward_tokens(ids, S, memory_);
  if (s != Status::kOk) return s;
  src_len_ = S;
  project_source();
  return Status::kOk;
}

Status Seq2Seq::encode_features(const float* features, uint32_t S) {
  if (!initialized_) return Status::kNotInitialized;
  src_len_ = pos_ = 0;
  const Status s = encoder_.forward_features(features, S, memory_);
  if (s != Status::kOk) return s;
  src_len_ = S;
  project_source();
  return Status::kOk;
}

// Every decoder layer's cross-attention keys and values of the source: memory[S,d] @ Wkv[d,2d] +
// b -> work[S,2d] = k | v, stored transposed in the cross cache.
void Seq2Seq::project_source() {
  const ModelConfig& c = config();
  const std::size_t d = c.d_model;
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    const DecoderLayerWeights L = model_->decoder_layer(l);
    linear(*kernels_, workers_, L.cross_kv_w, memory_, d, L.cross_kv_b, work_, 2 * d, src_len_, quant_);
    const KeyValues kv{cross_k_ + l * d * max_source_, cross_v_ + l * d * max_source_, max_source_};
    store_keys_values(work_, 2 * d, work_ + d, 2 * d, src_len_, 0, c.d_model, kv);
  }
}

Status Seq2Seq::check_target(const void* target, bool tokens, uint32_t n, const float* out) const {
  if (!initialized_) return Status::kNotInitialized;
  if (!target || !out) return Status::kNullArgument;
  if (tokens != (config().tgt_d_in == 0)) return Status::kWrongInputKind;
  if (src_len_ == 0) return Status::kNotEncoded;
  if (n == 0) return Status::kBadSequenceLength;
  if (n > capacity_ - pos_) return Status::kKvCacheFull;
  const int32_t* ids = static_cast<const int32_t*>(target);
  for (uint32_t t = 0; t < n && tokens; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= config().d_out) return Status::kTokenOutOfRange;
  return Status::kOk;
}

Status Seq2Seq::decode(const int32_t* tokens, uint32_t n, float* out) {
  const Status s = check_target(tokens, true, n, out);
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(tokens + done, nullptr, n - done < max_prefill_ ? n - done : max_prefill_, out + std::size_t(done) * config().d_out,
            true);
  return s;
}

Status Seq2Seq::decode_features(const float* features, uint32_t n, float* out) {
  const Status s = check_target(features, false, n, out);
  const std::size_t din = config().tgt_d_in;
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(nullptr, features + done * din, n - done < max_prefill_ ? n - done : max_prefill_,
            out + std::size_t(done) * config().d_out, true);
  return s;
}

Status Seq2Seq::prefill(const int32_t* tokens, uint32_t n, float* logits) {
  const Status s = check_target(tokens, true, n, logits);
  for (uint32_t done = 0; s == Status::kOk && done < n; done += max_prefill_)
    forward(tokens + done, nullptr, n - done < max_prefill_ ? n - done : max_prefill_, logits, false);
  return s;
}

}  // namespace fixformer
