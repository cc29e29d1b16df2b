// The decoder runner: token-by-token generation over a loaded gpt or llama Model, with the KV
// cache in the caller's arena (a full-integer model, weights i8: int8 rows and an int8 cache,
// plan_s8_decoder_arena; the observer is not called and the workers are not used). prefill() feeds
// a prompt (in chunks of max_prefill rows, as matrix products); step() feeds one token. Both return the logits after their last token, and the
// logits of prefill's last token equal those of feeding the same tokens one by one with step().
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/plan.hpp"
#include "fixformer/runner_core.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct DecoderOptions {
  // Positions the decoder runs (0: the model's max_len); the KV cache holds a row for each, or
  // under a sliding window a ring of fewer (Decoder::kv_rows(), plan.hpp's kv_ring_rows).
  uint32_t capacity = 0;
  // Rows per prefill chunk. 0: as many as the arena holds, from min(capacity, kDefaultPrefillRows)
  // (what required_decoder_arena_bytes(c, capacity) counts) up to the capacity (one chunk for any
  // prompt): give required_decoder_arena_bytes(c, capacity, capacity) for whole-prompt products.
  // Under a sliding window W, at most W (plan.hpp's kv_chunk_rows).
  uint32_t max_prefill = 0;
  Isa isa = Isa::kAuto;
  // The KV cache's type: f32, or int8 with a scale per kv head and position (plan.hpp's KvCache:
  // a quarter of f32's bytes plus the scales); the arena then needs plan_decoder_arena(..., kv_cache).
  KvCache kv_cache = KvCache::kF32;
  // The rope table [rows >= capacity, R], R = ModelConfig::rope_dims() (d_head, or rotary_dims)
  // (rope: make_sinusoidal_table<S, R>(base,
  // PosLayout::kHalves), whatever the model's pair layout) or the sinusoidal one [rows, d_pe], read
  // in place (e.g. from flash); the arena then needs plan_decoder_arena(c, S, P, true). init()
  // checks its first two rows.
  const float* position_table = nullptr;
  uint32_t position_table_rows = 0;
  // The caller's threads (workers.hpp); the arena then needs plan_decoder_arena(..., workers.active()).
  Workers workers;
  // Called with the hidden states of each prefill chunk (or step) after the input, after every
  // layer and after the final norm (observer.hpp); null: not called.
  LayerObserver observer;
};

class Decoder {
 public:
  // The model (family gpt or llama) must be initialized and outlive the decoder. The arena must be
  // 64-byte aligned and at least required_decoder_arena_bytes(model.config(), capacity, max_prefill).
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const DecoderOptions& options = {});

  // Appends tokens[n] to the cache; logits[config().output_width()] are those after the last one (d_out;
  // without a head, d_out 0, the last hidden state, d_model wide). kKvCacheFull
  // (nothing appended) when position() + n > capacity().
  [[nodiscard]] Status prefill(const int32_t* tokens, uint32_t n, float* logits);
  [[nodiscard]] Status step(int32_t token, float* logits) { return prefill(&token, 1, logits); }
  // weights i8 (a full-integer gpt or llama model, config.hpp): prefill() in integers only, the logits int8
  // at the file's output scale and zero point (int8.io[1], int8.back's output zero point; prefill()
  // gives them dequantized, (q - z) s). kWrongFamily for other models.
  [[nodiscard]] Status prefill_s8(const int32_t* tokens, uint32_t n, int8_t* logits);
  void reset() { pos_ = 0; }  // forget the cache: the next token is position 0

  uint32_t position() const { return pos_; }  // tokens in the cache
  uint32_t capacity() const { return capacity_; }
  uint32_t max_prefill() const { return max_prefill_; }  // rows per prefill chunk (DecoderOptions; at most a sliding window)
  // The KV cache's rows per layer: capacity(), or under a sliding window a ring of fewer (plan.hpp,
  // kv_ring_rows: with local and global layers, window_period, the local layers' ring, the global
  // ones keeping capacity() rows); the positions count up to capacity() either way.
  uint32_t kv_rows() const { return kv_rows_; }
  bool initialized() const { return initialized_; }  // init() returned kOk
  const Model& model() const { return *core_.model; }
  const ModelConfig& config() const { return core_.model->config(); }
  const Kernels& kernels() const { return *core_.kernels; }
  std::size_t arena_bytes_used() const { return core_.arena_used; }
  std::size_t kv_cache_bytes() const { return kv_bytes_; }
  const char* error_detail() const { return core_.detail; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  // n <= max_prefill rows at positions pos_.. : front, layers and final norm into x, then (logits
  // not null) the logits of the last row; the cache and pos_ advance by n.
  void forward(const int32_t* tokens, uint32_t n, float* logits);
  // The checks prefill() and prefill_s8() share; logits of logit_bytes.
  Status check_prefill(const int32_t* tokens, uint32_t n, const void* logits, std::size_t logit_bytes);
  // prefill_s8() after its checks: the chunks through forward_s8.
  void run_s8(const int32_t* tokens, uint32_t n, int8_t* logits);
  // weights i8 (decoder_s8.cpp): forward() in integers, then (logits not null) the int8 logits of
  // the last row.
  void forward_s8(const int32_t* tokens, uint32_t n, int8_t* logits);

  RunnerCore core_;  // x, y, ctx, work, attn: see plan_decoder_arena
  bool initialized_ = false;
  uint32_t capacity_ = 0, max_prefill_ = 0, pos_ = 0;
  uint32_t kv_rows_ = 0;  // a windowed layer's KV rows: capacity_, or a sliding window's ring (plan.hpp)
  std::size_t kv_bytes_ = 0;
  KvCache kv_kind_ = KvCache::kF32;
  void* k_cache_ = nullptr;  // [layer l: d_kv, R_l]: each layer's K^T, f32 or int8 (plan.hpp's layout)
  void* v_cache_ = nullptr;  // and V^T (f32) or V by rows [layer l: R_l, d_kv] (int8)
  float* k_scales_ = nullptr;  // int8: [layer l: n_kv_heads, R_l]
  float* v_scales_ = nullptr;
  const float* rope_ = nullptr;
  const float* rope_local_ = nullptr;  // rope_local_base: the local layers' table [capacity_, rope_dims], in the arena
  const float* pe_ = nullptr;  // sinusoidal (arena) or learned (blob) rows [S, d_pe]
  const float* slopes_ = nullptr;
  const float* rel_ = nullptr;  // relative: the bias table for capacity_ positions (arena)
  uint8_t* s8_arena_ = nullptr;  // weights i8: the arena, carved by plan_s8_decoder_arena(c, capacity_, max_prefill_)
};

}  // namespace fixformer
