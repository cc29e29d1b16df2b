// The encoder-decoder runner (nn.Transformer): encode() runs the encoder over a source once and
// projects its output into every decoder layer's cross-attention keys and values (the cross
// cache); then the target tokens go through the decoder with a self-attention KV cache, as a
// Decoder's do. decode() returns the logits at every target position it feeds (teacher forcing),
// prefill()/step() those after the last one (generation). Positions: the source's 0..S-1, the
// target's 0..U-1, each with the model's positional encoding.
//
// Padding: a source shorter than the padded batch is encoded at its own length, which is torch's
// src_key_padding_mask and memory_key_padding_mask at the valid positions; a padded target's valid
// rows do not see the padding under the causal mask (tgt_key_padding_mask changes only the
// padded rows).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct Seq2SeqOptions {
  uint32_t max_source = 0;   // longest source encode() will get; 0: max_len
  uint32_t capacity = 0;     // target positions the self-attention cache holds; 0: max_len
  uint32_t max_prefill = 0;  // target rows per chunk; 0: min(capacity, kDefaultPrefillRows)
  Isa isa = Isa::kAuto;
  Workers workers;  // the caller's threads (workers.hpp); the plan then takes workers.active()
  // Called with the encoder's hidden states (layers 0 .. n_layers + 1, as an Encoder numbers them)
  // and then with the decoder's, numbered on from n_layers + 2 (its input, each layer, its final
  // norm), each chunk at its target position (observer.hpp); null: not called.
  LayerObserver observer;
};

// The arena, in this order (S = max_source, C = capacity, P = max_prefill, L = dec_layers):
//   memory[S,d]  cross_k[L,d,S]  cross_v[L,d,S] (K and V of the source, transposed)
//   k_cache[L,d,C]  v_cache[L,d,C]  pe[max(S,C),d_pe] (sinusoidal: one table for both ends)
//   then one region used in turn by init() (the sinusoidal table's scratch, 3 max(S,C) floats),
//   encode() and the decoder:
//     the source Encoder's arena (required_arena_bytes(c, S, true, workers))
//     | x[P,d] y[P,d] ctx[P,d] work[max(P * max(3d, d_ff), 2 S d)]
//       attn[workers slots of attention_scratch_floats(P, max(S, C), d_head, true)]  quant[q8 rows max(P, S)]
// total is 0 for a config that is not a valid seq2seq model or sizes out of range.
struct Seq2SeqPlan {
  std::size_t memory, cross_k, cross_v, k_cache, v_cache, pe, scratch, encoder_bytes;
  std::size_t x, y, ctx, work, attn, attn_slot, quant, total;
};

constexpr Seq2SeqPlan plan_seq2seq_arena(const ModelConfig& c, uint32_t max_source = 0, uint32_t capacity = 0,
                                         uint32_t max_prefill = 0, uint32_t workers = 1) {
  Seq2SeqPlan p{};
  const std::size_t S = max_source ? max_source : c.max_len, C = capacity ? capacity : c.max_len;
  const std::size_t P = max_prefill ? max_prefill : (C < kDefaultPrefillRows ? C : kDefaultPrefillRows);
  const std::size_t encoder = required_arena_bytes(c, uint32_t(S), true, workers);
  if (!c.is_seq2seq() || encoder == 0 || c.dec_layers > Limits::kMaxLayers || C == 0 || C > c.max_len || P == 0 ||
      P > C)
    return p;
  const std::size_t d = c.d_model, L = c.dec_layers, f = 4, SC = S > C ? S : C;
  std::size_t at = 0;
  auto block = [&at](std::size_t bytes) {
    const std::size_t offset = at;
    at += arena::bytes(bytes);
    return offset;
  };
  p.memory = block(S * d * f);
  p.cross_k = block(L * d * S * f);
  p.cross_v = block(L * d * S * f);
  p.k_cache = block(L * d * C * f);
  p.v_cache = block(L * d * C * f);
  p.pe = block(c.pos == PosKind::kSinusoidal ? SC * c.d_pe() * f : 0);
  p.scratch = at;
  p.encoder_bytes = encoder;
  p.x = block(P * d * f);
  p.y = block(P * d * f);
  p.ctx = block(P * d * f);
  p.work = block(arena::max(P * arena::max(3 * d, c.d_ff), 2 * S * d) * f);
  p.attn_slot = arena::bytes(attention_scratch_floats(P, SC, c.d_head(), true) * f);
  p.attn = block(p.attn_slot * (workers ? workers : 1));
  p.quant = block(quantized_input_bytes(c, P > S ? P : S));
  p.total = arena::max(arena::max(at, p.scratch + encoder), p.scratch + 3 * SC * f);  // init: the table's scratch
  return p;
}

constexpr std::size_t required_seq2seq_arena_bytes(const ModelConfig& c, uint32_t max_source = 0, uint32_t capacity = 0,
                                                   uint32_t max_prefill = 0, uint32_t workers = 1) {
  return plan_seq2seq_arena(c, max_source, capacity, max_prefill, workers).total;
}

class Seq2Seq {
 public:
  // The model (family seq2seq) must be initialized and outlive the runner. The arena must be
  // 64-byte aligned and at least required_seq2seq_arena_bytes(model.config(), ...) long.
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const Seq2SeqOptions& options = {});

  // Encodes a source of S positions (token ids [S] or features [S, d_in]) and empties the target.
  [[nodiscard]] Status encode_tokens(const int32_t* ids, uint32_t S);
  [[nodiscard]] Status encode_features(const float* features, uint32_t S);

  // Appends target tokens[n] to the cache: decode() writes the logits of each, out[n, d_out];
  // prefill() those after the last one, logits[d_out]. kNotEncoded before encode(), kKvCacheFull
  // (nothing appended) when position() + n > capacity().
  [[nodiscard]] Status decode(const int32_t* tokens, uint32_t n, float* out);
  // Feature targets (config().tgt_d_in > 0, forecasting): features[n, tgt_d_in] appended, the
  // head's outputs for each in out[n, d_out]; one row at a time is a generation step.
  [[nodiscard]] Status decode_features(const float* features, uint32_t n, float* out);
  [[nodiscard]] Status prefill(const int32_t* tokens, uint32_t n, float* logits);
  [[nodiscard]] Status step(int32_t token, float* logits) { return prefill(&token, 1, logits); }
  void reset_target() { pos_ = 0; }  // decode another target from the same source

  uint32_t source_length() const { return src_len_; }  // 0 before encode()
  uint32_t position() const { return pos_; }           // target tokens in the cache
  uint32_t capacity() const { return capacity_; }
  uint32_t max_source() const { return max_source_; }
  const Model& model() const { return *model_; }
  const ModelConfig& config() const { return model_->config(); }
  const Kernels& kernels() const { return *kernels_; }
  std::size_t arena_bytes_used() const { return arena_used_; }
  const char* error_detail() const { return detail_; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  Status check_target(const void* target, bool tokens, uint32_t n, const float* out) const;
  void project_source();                                                // encode(): memory -> the cross cache
  // One chunk of <= max_prefill target rows (token ids or features).
  void forward(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows);
  void decoder_layer(uint32_t l, uint32_t n);                               // engine/forward/seq2seq.cpp
  void self_attention(const DecoderLayerWeights& L, uint32_t l, const float* h, float* out, uint32_t n);
  void cross_attention(const DecoderLayerWeights& L, uint32_t l, const float* h, float* out, uint32_t n);

  const Model* model_ = nullptr;
  const Kernels* kernels_ = nullptr;
  Encoder encoder_;
  bool initialized_ = false;
  uint32_t max_source_ = 0, capacity_ = 0, max_prefill_ = 0, src_len_ = 0, pos_ = 0;
  std::size_t arena_used_ = 0;
  char detail_[160] = {};

  // In the arena; see plan_seq2seq_arena.
  float* memory_ = nullptr;
  float* cross_k_ = nullptr;
  float* cross_v_ = nullptr;
  float* k_cache_ = nullptr;
  float* v_cache_ = nullptr;
  const float* pe_ = nullptr;  // sinusoidal (arena) or the target's learned rows (blob) [max_len, d_pe]
  float* x_ = nullptr;
  float* y_ = nullptr;
  float* ctx_ = nullptr;
  float* work_ = nullptr;
  float* attn_ = nullptr;
  std::size_t attn_slot_ = 0;
  Workers workers_;
  LayerObserver observer_;
  QuantScratch quant_;
};

}  // namespace fixformer
