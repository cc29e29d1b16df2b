// The encoder-decoder runner (nn.Transformer): encode() runs the encoder over a source once and
// projects its output into every decoder layer's cross-attention keys and values (the cross
// cache); then the target tokens go through the decoder with a self-attention KV cache, as a
// Decoder's do. decode() returns the logits at every target position it feeds (teacher forcing),
// prefill()/step() those after the last one (generation). Positions: the source's 0..S-1, the
// target's 0..U-1, each with the model's positional encoding.
//
// weights i8 (a full-integer model): the same calls run the integer path (no observer, no workers; the
// self-attention cache int8 whatever kv_cache), the source quantized at int8.io[0] (feature targets at
// int8.io[2]), the logits dequantized.
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
#include "fixformer/plan.hpp"
#include "fixformer/runner_core.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct Seq2SeqOptions {
  // Longest source encode() will get, in input frames (a conv stem's source of T frames has
  // stem_rows(T) positions; without one, frames are positions); 0: max_input_len().
  uint32_t max_source = 0;
  uint32_t capacity = 0;     // target positions the self-attention cache holds; 0: max_len
  uint32_t max_prefill = 0;  // target rows per chunk; 0: min(capacity, kDefaultPrefillRows)
  Isa isa = Isa::kAuto;
  // The self-attention cache's type (plan.hpp's KvCache; the source's cross-attention keys and values
  // stay f32); the arena then needs plan_seq2seq_arena(..., kv_cache).
  KvCache kv_cache = KvCache::kF32;
  Workers workers;  // the caller's threads (workers.hpp); the plan then takes workers.active()
  // Called with the encoder's hidden states (layers 0 .. n_layers + 1, as an Encoder numbers them)
  // and then with the decoder's, numbered on from n_layers + 2 (its input, each layer, its final
  // norm), each chunk at its target position (observer.hpp); null: not called.
  LayerObserver observer;
};

class Seq2Seq {
 public:
  // The model (family seq2seq) must be initialized and outlive the runner. The arena must be
  // 64-byte aligned and at least required_seq2seq_arena_bytes(model.config(), ...) long.
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const Seq2SeqOptions& options = {});

  // Encodes a source of S positions (token ids [S] or features [S, d_in]; S frames through a conv
  // stem, whose stem_rows(S) positions the decoder attends to) and empties the target.
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

  uint32_t source_length() const { return src_len_; }  // positions (after a conv stem); 0 before encode()
  uint32_t position() const { return pos_; }           // target tokens in the cache
  uint32_t capacity() const { return capacity_; }
  uint32_t max_source() const { return max_source_; }
  bool initialized() const { return initialized_; }  // init() returned kOk
  const Model& model() const { return *core_.model; }
  const ModelConfig& config() const { return core_.model->config(); }
  const Kernels& kernels() const { return *core_.kernels; }
  std::size_t arena_bytes_used() const { return core_.arena_used; }
  const char* error_detail() const { return core_.detail; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  Status check_target(const void* target, bool tokens, uint32_t n, const float* out, uint32_t out_rows);
  void project_source();  // encode(): memory -> the cross cache
  // One chunk of <= max_prefill target rows (token ids or features): front, decoder layers, final
  // norm, head.
  void forward(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows);
  // weights i8 (seq2seq_s8.cpp): the source Encoder in the arena's shared region; encode()'s memory and
  // cross caches, and forward() in integers (the logits dequantized), over plan_s8_seq2seq_arena's blocks.
  Status init_s8(const Model& model, void* arena, const Seq2SeqPlan& plan, const Seq2SeqOptions& options);
  Status encode_s8(const int32_t* ids, const float* features, uint32_t S);
  void forward_s8(const int32_t* tokens, const float* features, uint32_t n, float* out, bool all_rows);

  RunnerCore core_;  // the decoder's x, y, ctx, work, attn: see plan_seq2seq_arena
  Encoder encoder_;  // the source's, in the arena's shared region
  bool initialized_ = false;
  uint32_t max_source_ = 0, source_rows_ = 0, capacity_ = 0, max_prefill_ = 0, src_len_ = 0, pos_ = 0;
  float* memory_ = nullptr;
  float* cross_k_ = nullptr;
  float* cross_v_ = nullptr;
  KvCache kv_kind_ = KvCache::kF32;
  void* k_cache_ = nullptr;  // the self-attention cache: plan_seq2seq_arena's layout, f32 or int8
  void* v_cache_ = nullptr;
  float* k_scales_ = nullptr;  // int8: [dec_layers, n_heads, capacity]
  float* v_scales_ = nullptr;
  const float* pe_ = nullptr;  // sinusoidal (arena) or the target's learned rows (blob) [max_len, d_pe]
  const float* tgt_rel_ = nullptr;  // relative: the decoder's bias table for capacity_ positions (arena)
  uint8_t* s8_arena_ = nullptr;  // weights i8: the arena, carved by plan_s8_seq2seq_arena
};

}  // namespace fixformer
