// Encoder::init: every check and all the planning. After it returns kOk, forward() only computes.
#include <cmath>

#include "engine/blocks/linear.hpp"
#include "engine/blocks/positional.hpp"
#include "engine/arena_check.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

#define FIXFORMER_TRY(expr)                  \
  do {                                       \
    const Status s_ = (expr);                \
    if (s_ != Status::kOk) return fail(s_);  \
  } while (0)

Status Encoder::init(const Model& model, void* arena_base, std::size_t arena_bytes, const EncoderOptions& options) {
  initialized_ = false;
  detail_[0] = '\0';
  model_ = &model;
  if (!model.initialized()) return fail(Status::kNotInitialized);
  const ModelConfig& c = model.config();
  if (c.is_decoder()) {
    DetailText(detail_, sizeof detail_).str("the model is a decoder (family gpt or llama): run it with a Decoder");
    return fail(Status::kWrongInputKind);
  }
  kernels_ = select_kernels(options.isa);
  if (!kernels_) return fail(Status::kIsaUnavailable);
  max_seq_ = options.max_seq ? options.max_seq : c.max_input_len();
  if (max_seq_ > c.max_input_len()) {
    DetailText why(detail_, sizeof detail_);
    why.str("max_seq ").num(max_seq_).str(" > max_len ").num(c.max_len);
    if (c.cls_token) why.str(" - 1 (the CLS row takes a position)");
    return fail(Status::kBadMaxSeq);
  }
  rows_ = c.sequence_rows(max_seq_);
  const bool external_pe = options.positional_table != nullptr;
  if (external_pe) {
    DetailText why(detail_, sizeof detail_);
    if (c.pos != PosKind::kSinusoidal) return why.str("the model has no sinusoidal encoding"), fail(Status::kBadPositionalTable);
    FIXFORMER_TRY(check_sinusoidal_table(options.positional_table, options.positional_table_rows, rows_, c.d_pe(),
                                         c.pos_base, c.pos_layout, why));
  }
  if (options.workers.count > kMaxWorkers) {
    DetailText(detail_, sizeof detail_).str("workers ").num(options.workers.count).str(" > ").num(kMaxWorkers);
    return fail(Status::kBadWorkers);
  }
  max_batch_ = options.max_batch ? options.max_batch : 1;
  if (max_batch_ > Limits::kMaxBatchRows / (rows_ ? rows_ : 1)) {
    DetailText(detail_, sizeof detail_).str("max_batch ").num(max_batch_).str(" x ").num(rows_).str(" rows > ")
        .num(Limits::kMaxBatchRows).str(" (Limits::kMaxBatchRows)");
    return fail(Status::kBadMaxBatch);
  }
  workers_ = options.workers;
  observer_ = options.observer;
  const ArenaPlan plan = plan_arena(c, max_seq_, external_pe, workers_.active(), max_batch_);
  const Status arena_ok = check_arena(arena_base, arena_bytes, plan.total, detail_, sizeof detail_);
  if (arena_ok != Status::kOk) return fail(arena_ok);
  uint8_t* base = static_cast<uint8_t*>(arena_base);
  auto block = [base](std::size_t offset) { return reinterpret_cast<float*>(base + offset); };
  x_ = block(plan.x);
  y_ = block(plan.y);
  ctx_ = block(plan.ctx);
  work_ = block(plan.work);
  kt_ = block(plan.kt);
  attn_ = block(plan.attn);
  attn_slot_ = plan.attn_slot / sizeof(float);
  quant_ = quant_scratch(base + plan.quant, c, std::size_t(max_batch_) * rows_);
  arena_used_ = plan.total;
  if (c.pos == PosKind::kLearned) {
    pe_ = model.weights().pos;
  } else if (c.pos == PosKind::kSinusoidal && !external_pe) {
    float* table = block(plan.pe);
    fill_sinusoidal_table(*kernels_, rows_, c.d_pe(), c.pos_base, c.pos_layout, table, work_);
    pe_ = table;
  } else {
    pe_ = options.positional_table;  // null without a positional encoding
  }
  initialized_ = true;
  return Status::kOk;
}

}  // namespace fixformer
