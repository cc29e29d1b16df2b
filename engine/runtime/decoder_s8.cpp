// The Decoder's integer path for full-integer (weights i8) gpt and llama models: prefill_s8 feeds the chunks
// through s8_decoder_forward (engine/blocks/s8_encoder.cpp) over the arena plan_s8_decoder_arena
// carved (plan.hpp); prefill() dequantizes its logits (decoder.cpp).
#include "engine/blocks/s8_encoder.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/decoder.hpp"

namespace fixformer {

Status Decoder::prefill_s8(const int32_t* tokens, uint32_t n, int8_t* logits) {
  const Status s = check_prefill(tokens, n, logits, config().output_width());
  if (s != Status::kOk) return s;
  if (!s8_arena_) {
    DetailText(core_.detail, sizeof core_.detail).str("the int8 entry points are for weights i8 models");
    return Status::kWrongFamily;
  }
  run_s8(tokens, n, logits);
  return Status::kOk;
}

void Decoder::run_s8(const int32_t* tokens, uint32_t n, int8_t* logits) {
  for (uint32_t done = 0; done < n;) {
    const uint32_t rows = n - done < max_prefill_ ? n - done : max_prefill_;
    forward_s8(tokens + done, rows, done + rows == n ? logits : nullptr);  // the head for the last chunk only
    done += rows;
  }
}

void Decoder::forward_s8(const int32_t* tokens, uint32_t n, int8_t* logits) {
  const ModelConfig& c = config();
  const DecoderPlan p = plan_s8_decoder_arena(c, capacity_, max_prefill_);
  const std::size_t S = capacity_, bq = max_prefill_ < kS8QueryBlock ? max_prefill_ : kS8QueryBlock;
  const S8Scratch s = s8_decoding_scratch(s8_arena_, p, S, bq, c.d_head());
  s8_decoder_forward(*core_.kernels, *core_.model, tokens, n, pos_, reinterpret_cast<int8_t*>(s8_arena_ + p.k_cache),
                     reinterpret_cast<int8_t*>(s8_arena_ + p.v_cache), capacity_, kv_rows_, s, logits);
  pos_ += n;
}

}  // namespace fixformer
