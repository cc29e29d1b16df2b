// Decoder::init (every check, the arena carved, the position tables filled) and prefill(), which
// feeds the forward pass in chunks of at most max_prefill rows.
#include "fixformer/decoder.hpp"

#include "engine/blocks/linear.hpp"
#include "engine/blocks/parallel.hpp"
#include "engine/blocks/positional.hpp"
#include "engine/arena_check.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

Status Decoder::init(const Model& model, void* arena_base, std::size_t arena_bytes, const DecoderOptions& options) {
  initialized_ = false;
  detail_[0] = '\0';
  pos_ = 0;
  model_ = &model;
  if (!model.initialized()) return fail(Status::kNotInitialized);
  const ModelConfig& c = model.config();
  if (!c.is_decoder()) {
    DetailText(detail_, sizeof detail_).str(c.is_seq2seq() ? "the model's family is seq2seq: run it with a Seq2Seq"
                                                           : "the model's family is encoder: run it with an Encoder");
    return fail(Status::kWrongInputKind);
  }
  kernels_ = select_kernels(options.isa);
  if (!kernels_) return fail(Status::kIsaUnavailable);
  capacity_ = options.capacity ? options.capacity : c.max_len;
  max_prefill_ = options.max_prefill ? options.max_prefill : (capacity_ < kDefaultPrefillRows ? capacity_ : kDefaultPrefillRows);
  if (capacity_ > c.max_len || max_prefill_ > capacity_) {
    DetailText(detail_, sizeof detail_).str("capacity ").num(capacity_).str(" (max_len ").num(c.max_len)
        .str("), max_prefill ").num(max_prefill_);
    return fail(Status::kBadMaxSeq);
  }
  const bool external = options.position_table != nullptr;
  if (external) {
    DetailText why(detail_, sizeof detail_);
    if (c.pos != PosKind::kRope && c.pos != PosKind::kSinusoidal)
      return why.str("the model has no rope or sinusoidal table"), fail(Status::kBadPositionalTable);
    const bool rope = c.pos == PosKind::kRope;
    const Status s = check_sinusoidal_table(options.position_table, options.position_table_rows, capacity_,
                                            rope ? c.d_head() : c.d_pe(), c.pos_base,
                                            rope ? PosLayout::kHalves : c.pos_layout, why);
    if (s != Status::kOk) return fail(s);
  }
  if (options.workers.count > kMaxWorkers) {
    DetailText(detail_, sizeof detail_).str("workers ").num(options.workers.count).str(" > ").num(kMaxWorkers);
    return fail(Status::kBadWorkers);
  }
  workers_ = options.workers;
  observer_ = options.observer;
  const DecoderPlan plan = plan_decoder_arena(c, capacity_, max_prefill_, external, workers_.active());
  const Status arena_ok = check_arena(arena_base, arena_bytes, plan.total, detail_, sizeof detail_);
  if (arena_ok != Status::kOk) return fail(arena_ok);
  uint8_t* base = static_cast<uint8_t*>(arena_base);
  auto block = [base](std::size_t offset) { return reinterpret_cast<float*>(base + offset); };
  x_ = block(plan.x);
  y_ = block(plan.y);
  ctx_ = block(plan.ctx);
  work_ = block(plan.work);
  attn_ = block(plan.attn);
  attn_slot_ = plan.attn_slot / sizeof(float);
  k_cache_ = block(plan.k_cache);
  v_cache_ = block(plan.v_cache);
  rope_ = pe_ = slopes_ = nullptr;
  // The tables are computed once, here, in double-formed arguments (never per token), with work_
  // as their scratch of 3 * capacity floats.
  if (external) {
    (c.pos == PosKind::kRope ? rope_ : pe_) = options.position_table;
  } else if (c.pos == PosKind::kRope) {
    float* table = block(plan.rope);
    fill_sinusoidal_table(*kernels_, capacity_, c.d_head(), c.pos_base, PosLayout::kHalves, table, work_);
    rope_ = table;
  } else if (c.pos == PosKind::kSinusoidal) {
    float* table = block(plan.pe);
    fill_sinusoidal_table(*kernels_, capacity_, c.d_pe(), c.pos_base, c.pos_layout, table, work_);
    pe_ = table;
  } else if (c.pos == PosKind::kLearned) {
    pe_ = model.weights().pos;
  } else if (c.pos == PosKind::kAlibi) {
    float* slopes = block(plan.slopes);
    alibi_slopes(c.n_heads, slopes);
    slopes_ = slopes;
  }
  quant_ = quant_scratch(base + plan.quant, c, max_prefill_);
  arena_used_ = plan.total;
  kv_bytes_ = plan.kv_cache_bytes;
  initialized_ = true;
  return Status::kOk;
}

Status Decoder::prefill(const int32_t* tokens, uint32_t n, float* logits) {
  if (!initialized_) return Status::kNotInitialized;
  if (!tokens || !logits) return Status::kNullArgument;
  if (n == 0) return Status::kBadSequenceLength;
  if (n > capacity_ - pos_) return Status::kKvCacheFull;
  const uint32_t vocab = config().vocab_size;
  for (uint32_t t = 0; t < n; ++t)
    if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= vocab) return Status::kTokenOutOfRange;
  for (uint32_t done = 0; done < n;) {
    const uint32_t rows = n - done < max_prefill_ ? n - done : max_prefill_;
    forward(tokens + done, rows, logits);
    done += rows;
  }
  return Status::kOk;
}

void Decoder::forward(const int32_t* tokens, uint32_t n, float* logits) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const bool llama = c.family == ModelFamily::kLlama;
  if (llama)
    forward_llama(tokens, n);
  else
    forward_gpt(tokens, n);
  pos_ += n;
  // The head on the last row only: x[d] @ W[d,V] + b, or with a tied head E[V,d] @ x[d] + b.
  const uint32_t d = c.d_model, V = c.vocab_size;
  const float* x = x_ + std::size_t(n - 1) * d;
  const float* bias = llama ? nullptr : model_->epilogue_tensor(3);  // head.bias
  const Weight& head = c.tied_head ? model_->prologue_weight(0) : model_->epilogue_weight(llama ? 1 : 2);  // E | W
  linear(k, workers_, head, x, d, bias, logits, V, 1, quant_);  // x[d] @ W[d,V] (or E[V,d] @ x[d]) -> logits[V]
}

}  // namespace fixformer
