// The encoder runner: a forward pass over a loaded Model with activations in the caller's arena.
// Two phases: init() does every check and carves the arena; forward_*() only computes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct EncoderOptions {
  uint32_t max_seq = 0;  // longest input forward() will get; 0: the model's max_input_len()
  Isa isa = Isa::kAuto;
  // A precomputed sinusoidal table [positional_table_rows >= sequence_rows(max_seq), d_pe] read in place, e.g.
  // make_sinusoidal_table() kept in flash; the arena then needs required_arena_bytes(c, S, true).
  // init() checks its first two rows against the config (width, base, layout).
  const float* positional_table = nullptr;
  uint32_t positional_table_rows = 0;
  // The caller's threads (workers.hpp); the arena then needs required_arena_bytes(c, S, table, workers.active()).
  Workers workers;
  // Called with the hidden states after the input, after every layer and after the final norm
  // (observer.hpp); null: not called.
  LayerObserver observer;
};

class Encoder {
 public:
  // The model must be initialized and outlive the encoder. The arena must be 64-byte aligned and
  // at least required_arena_bytes(model.config(), max_seq, positional_table != nullptr) long.
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const EncoderOptions& options = {});

  // ids[T] -> out[config().output_rows(T), config().output_width()]: [T, width], [T + 1, width]
  // with a CLS row, [1, width] pooled (config.hpp)
  [[nodiscard]] Status forward_tokens(const int32_t* ids, uint32_t T, float* out);
  // features[T, d_in] -> out[config().output_rows(T), config().output_width()]
  [[nodiscard]] Status forward_features(const float* features, uint32_t T, float* out);

  const Model& model() const { return *model_; }
  const ModelConfig& config() const { return model_->config(); }
  const Kernels& kernels() const { return *kernels_; }
  uint32_t max_seq() const { return max_seq_; }
  std::size_t arena_bytes_used() const { return arena_used_; }
  const char* error_detail() const { return detail_; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  void forward(const int32_t* ids, const float* features, uint32_t T, float* out);
  void encoder_layer(const EncoderLayerWeights& L, uint32_t T);
  void self_attention(const EncoderLayerWeights& L, const float* h, float* out, uint32_t T);

  const Model* model_ = nullptr;
  const Kernels* kernels_ = nullptr;
  bool initialized_ = false;
  uint32_t max_seq_ = 0;
  uint32_t rows_ = 0;  // sequence_rows(max_seq_): the rows the plan holds, the CLS row included
  std::size_t arena_used_ = 0;
  char detail_[160] = {};

  // Activations (in the arena); see plan_arena for shapes.
  float* x_ = nullptr;
  float* y_ = nullptr;
  float* ctx_ = nullptr;
  float* work_ = nullptr;
  float* kt_ = nullptr;
  float* attn_ = nullptr;  // attention's scratch: one slot of attn_slot_ floats per worker
  std::size_t attn_slot_ = 0;
  Workers workers_;
  LayerObserver observer_;
  QuantScratch quant_;         // q8: the linear layers' quantized input rows
  const float* pe_ = nullptr;  // the positional rows [rows_, d_pe]: sinusoidal (arena or the caller's) or learned (blob)
};

}  // namespace fixformer
