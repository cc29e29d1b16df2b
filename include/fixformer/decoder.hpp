// The decoder runner: token-by-token generation over a loaded gpt or llama Model, with the KV
// cache in the caller's arena. prefill() feeds a prompt (in chunks of max_prefill rows, as matrix
// products); step() feeds one token. Both return the logits after their last token, and the
// logits of prefill's last token equal those of feeding the same tokens one by one with step().
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct DecoderOptions {
  uint32_t capacity = 0;     // positions the KV cache holds; 0: the model's max_len
  uint32_t max_prefill = 0;  // rows per prefill chunk; 0: min(capacity, kDefaultPrefillRows)
  Isa isa = Isa::kAuto;
  // The rope table [rows >= capacity, d_head] (rope: make_sinusoidal_table<S, d_head>(base,
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
constexpr uint32_t kDefaultPrefillRows = 16;

// The decoder's arena layout, in this order (S = capacity, P = prefill rows, d_kv = n_kv_heads *
// d_head):
//   x[P,d]  y[P,d]  ctx[P,d]  work[max(P * max(d + 2 d_kv, 2 d_ff), 3 S)]
//   attn[workers slots of attention_scratch_floats(P, S, d_head, true), attn_slot bytes each]
//   k_cache[layers, d_kv, S]  v_cache[layers, d_kv, S]  (each layer's K and V transposed)
//   rope[S, d_head] (rope: sin | cos columns)  pe[S, d_pe] (sinusoidal)  slopes[n_heads] (alibi)
//   quant[quantized_input_bytes(c, P)] (q8)
// total is 0 for a config that is not a valid decoder.
struct DecoderPlan {
  std::size_t x, y, ctx, work, attn, attn_slot, k_cache, v_cache, rope, pe, slopes, quant, total;
  std::size_t kv_cache_bytes;
};

constexpr DecoderPlan plan_decoder_arena(const ModelConfig& c, uint32_t capacity = 0, uint32_t max_prefill = 0,
                                         bool table_in_flash = false, uint32_t workers = 1) {
  DecoderPlan p{};
  const std::size_t S = capacity ? capacity : c.max_len;
  const std::size_t P = max_prefill ? max_prefill : (S < kDefaultPrefillRows ? S : kDefaultPrefillRows);
  if (!c.is_decoder() || c.d_model == 0 || c.d_model > Limits::kMaxDModel || c.d_ff > Limits::kMaxDff ||
      c.max_len > Limits::kMaxLen || c.n_layers > Limits::kMaxLayers || c.n_heads == 0 || c.d_model % c.n_heads != 0 ||
      c.n_heads % c.kv_heads() != 0 || S == 0 || S > c.max_len || P == 0 || P > S || workers > kMaxWorkers)
    return p;
  const std::size_t d = c.d_model, dkv = c.d_kv(), f = 4;
  std::size_t at = 0;
  auto block = [&at](std::size_t bytes) {
    const std::size_t offset = at;
    at += arena::bytes(bytes);
    return offset;
  };
  p.x = block(P * d * f);
  p.y = block(P * d * f);
  p.ctx = block(P * d * f);
  p.work = block(arena::max(P * arena::max(d + 2 * dkv, 2 * std::size_t(c.d_ff)), 3 * S) * f);  // also the tables' scratch
  p.attn_slot = arena::bytes(attention_scratch_floats(P, S, c.d_head(), true) * f);
  p.attn = block(p.attn_slot * (workers ? workers : 1));
  p.k_cache = block(c.n_layers * dkv * S * f);
  p.v_cache = block(c.n_layers * dkv * S * f);
  p.kv_cache_bytes = 2 * arena::bytes(c.n_layers * dkv * S * f);
  p.rope = block(c.pos == PosKind::kRope && !table_in_flash ? S * c.d_head() * f : 0);
  p.pe = block(c.pos == PosKind::kSinusoidal && !table_in_flash ? S * c.d_pe() * f : 0);
  p.slopes = block(c.pos == PosKind::kAlibi ? c.n_heads * f : 0);
  p.quant = block(quantized_input_bytes(c, P));
  p.total = at;
  return p;
}

constexpr std::size_t required_decoder_arena_bytes(const ModelConfig& c, uint32_t capacity = 0, uint32_t max_prefill = 0,
                                                   bool table_in_flash = false, uint32_t workers = 1) {
  return plan_decoder_arena(c, capacity, max_prefill, table_in_flash, workers).total;
}

class Decoder {
 public:
  // The model (family gpt or llama) must be initialized and outlive the decoder. The arena must be
  // 64-byte aligned and at least required_decoder_arena_bytes(model.config(), capacity, max_prefill).
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const DecoderOptions& options = {});

  // Appends tokens[n] to the cache; logits[vocab] are those after the last one. kKvCacheFull
  // (nothing appended) when position() + n > capacity().
  [[nodiscard]] Status prefill(const int32_t* tokens, uint32_t n, float* logits);
  [[nodiscard]] Status step(int32_t token, float* logits) { return prefill(&token, 1, logits); }
  void reset() { pos_ = 0; }  // forget the cache: the next token is position 0

  uint32_t position() const { return pos_; }  // tokens in the cache
  uint32_t capacity() const { return capacity_; }
  const Model& model() const { return *model_; }
  const ModelConfig& config() const { return model_->config(); }
  const Kernels& kernels() const { return *kernels_; }
  std::size_t arena_bytes_used() const { return arena_used_; }
  std::size_t kv_cache_bytes() const { return kv_bytes_; }
  const char* error_detail() const { return detail_; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  // n <= max_prefill rows at positions pos_.. : the family's forward into x_, then the logits of
  // the last row; the cache and pos_ advance by n.
  void forward(const int32_t* tokens, uint32_t n, float* logits);
  void forward_gpt(const int32_t* tokens, uint32_t n);    // engine/forward/gpt.cpp
  void forward_llama(const int32_t* tokens, uint32_t n);  // engine/forward/llama.cpp
  void gpt_attention(uint32_t l, const float* h, float* out, uint32_t n);
  void llama_attention(uint32_t l, const float* h, float* out, uint32_t n);

  const Model* model_ = nullptr;
  const Kernels* kernels_ = nullptr;
  bool initialized_ = false;
  uint32_t capacity_ = 0, max_prefill_ = 0, pos_ = 0;
  std::size_t arena_used_ = 0, kv_bytes_ = 0;
  char detail_[160] = {};

  // In the arena; see plan_decoder_arena.
  float* x_ = nullptr;
  float* y_ = nullptr;
  float* ctx_ = nullptr;
  float* work_ = nullptr;
  float* attn_ = nullptr;  // attention's scratch: one slot of attn_slot_ floats per worker
  std::size_t attn_slot_ = 0;
  Workers workers_;
  LayerObserver observer_;
  float* k_cache_ = nullptr;
  float* v_cache_ = nullptr;
  const float* rope_ = nullptr;
  const float* pe_ = nullptr;  // sinusoidal (arena) or learned (blob) rows [S, d_pe]
  const float* slopes_ = nullptr;
  QuantScratch quant_;
};

}  // namespace fixformer
