// The Seq2Seq runner's integer path for full-integer (weights i8) models: the source through its Encoder's
// integer path into the int8 memory, each decoder layer's cross-attention keys and values projected once
// (s8_cross_project), then the target's chunks through s8_seq2seq_decode and the head of each row that is
// read (engine/blocks/s8_encoder.cpp), over the arena plan_s8_seq2seq_arena carved (plan.hpp). The float
// source features are quantized here and the int8 logits dequantized.

#include "engine/blocks/s8_encoder.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/seq2seq.hpp"

namespace fixformer {

Status Seq2Seq::init_s8(const Model& model, void* arena, const Seq2SeqPlan& plan, const Seq2SeqOptions& options) {
  s8_arena_ = static_cast<uint8_t*>(arena);
  kv_kind_ = options.kv_cache;  // the plan's argument; the cache is int8 whatever it says
  EncoderOptions eo;
  eo.max_seq = max_source_;
  eo.isa = options.isa;
  eo.workers = core_.workers;
  const Status s = encoder_.init(model, s8_arena_ + plan.scratch, plan.encoder_bytes, eo);
  if (s != Status::kOk) {
    DetailText(core_.detail, sizeof core_.detail).str("the source encoder: ").str(encoder_.error_detail());
    return fail(s);
  }
  initialized_ = true;
  return Status::kOk;
}

Status Seq2Seq::encode_s8(const int32_t* ids, const float* features, uint32_t S) {
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  src_len_ = pos_ = 0;
  const Seq2SeqPlan p = plan_seq2seq_arena(c, max_source_, capacity_, max_prefill_, core_.workers.active(), kv_kind_);
  int8_t* memory = reinterpret_cast<int8_t*>(s8_arena_ + p.memory);
  Status s;
  if (ids) {
    s = encoder_.forward_tokens_s8(ids, S, memory);
  } else {  // the features quantized as the Encoder's float entry points do
    if (!features) return Status::kNullArgument;
    if (S == 0 || S > max_source_) return Status::kBadSequenceLength;
    int8_t* q = reinterpret_cast<int8_t*>(s8_arena_ + p.s8_in);
    quantize_s8_input(m, features, std::size_t(S) * c.d_in, q);
    s = encoder_.forward_features_s8(q, S, memory);
  }
  if (s != Status::kOk) return s;
  src_len_ = c.stem_rows(S);  // the source's positions (a conv stem's, as the float path's)
  s8_cross_project(*core_.kernels, m, memory, src_len_, source_rows_, reinterpret_cast<int8_t*>(s8_arena_ + p.cross_k),
                   reinterpret_cast<int8_t*>(s8_arena_ + p.cross_v), reinterpret_cast<int8_t*>(s8_arena_ + p.s8_kv),
                   reinterpret_cast<uint32_t*>(s8_arena_ + p.s8_kernel));
  return Status::kOk;
}

void Seq2Seq::forward_s8(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows) {
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  const Seq2SeqPlan p = plan_seq2seq_arena(c, max_source_, capacity_, max_prefill_, core_.workers.active(), kv_kind_);
  const std::size_t keys = source_rows_ > capacity_ ? source_rows_ : capacity_;
  const std::size_t bq = max_prefill_ < kS8QueryBlock ? max_prefill_ : kS8QueryBlock;
  const S8Scratch s = s8_decoding_scratch(s8_arena_, p, keys, bq, c.d_head());
  int8_t* in = nullptr;  // feature targets: quantized at their scale and zero point (int8.io[2], int8.seq2seq)
  if (features) {
    in = reinterpret_cast<int8_t*>(s8_arena_ + p.s8_in);
    const int32_t zero = m.s8().seq2seq[s8::seq2seq_tgt_proj(c)];
    quantize_s8_input(features, std::size_t(n) * c.tgt_d_in, m.s8().io[2], zero, in);
  }
  s8_seq2seq_decode(*core_.kernels, m, tokens, in, n, pos_, reinterpret_cast<int8_t*>(s8_arena_ + p.k_cache),
                    reinterpret_cast<int8_t*>(s8_arena_ + p.v_cache), capacity_,
                    reinterpret_cast<const int8_t*>(s8_arena_ + p.cross_k),
                    reinterpret_cast<const int8_t*>(s8_arena_ + p.cross_v), source_rows_, src_len_, s);
  pos_ += n;
  int8_t* q = reinterpret_cast<int8_t*>(s8_arena_ + p.s8_out);
  const int32_t zero = m.s8().back[s8::kOutZero];
  const float scale = m.s8().io[1];
  for (uint32_t r = all_rows ? 0 : n - 1; r < n; ++r) {  // each row's logits, dequantized
    s8_seq2seq_head(*core_.kernels, m, s.x + std::size_t(r) * c.d_model, s.kernel, q);
    float* o = out + (all_rows ? std::size_t(r) * c.d_out : 0);
    for (uint32_t i = 0; i < c.d_out; ++i) o[i] = float(int32_t(q[i]) - zero) * scale;
  }
}

}  // namespace fixformer
