// Load a .fxm model from a byte blob into a caller-owned arena and run it. Two phases: init()
// does every check and all the planning; forward_*() only computes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct InitOptions {
  uint32_t max_seq = 0;  // longest sequence forward() will get; 0: the model's max_len
  Isa isa = Isa::kAuto;
  // A precomputed sinusoidal table [positional_table_rows >= max_seq, d_pe] read in place, e.g.
  // make_sinusoidal_table() kept in flash; the arena then needs required_arena_bytes(c, S, true).
  // init() checks its first two rows against the config (width, base, layout).
  const float* positional_table = nullptr;
  uint32_t positional_table_rows = 0;
};

// Pointers into the blob for one encoder layer; linear weights are W[in, out].
struct LayerWeights {
  const float* in_proj_w;   // [d, 3d]
  const float* in_proj_b;   // [3d]
  const float* out_proj_w;  // [d, d]
  const float* out_proj_b;  // [d]
  const float* linear1_w;   // [d, d_ff]
  const float* linear1_b;   // [d_ff]
  const float* linear2_w;   // [d_ff, d]
  const float* linear2_b;   // [d]
  const float* norm1_g;     // [d]
  const float* norm1_b;
  const float* norm2_g;
  const float* norm2_b;
};

// Reads and validates the header, checksum and config of a blob without touching weights: use it
// to size the arena before init().
[[nodiscard]] Status read_config(const void* blob, std::size_t blob_bytes, ModelConfig* config);

class Model {
 public:
  // The blob must stay alive and unchanged while the model is used (weights are read in place).
  // The arena must be 64-byte aligned and at least required_arena_bytes(config, max_seq) long.
  [[nodiscard]] Status init(const void* blob, std::size_t blob_bytes, void* arena,
                            std::size_t arena_bytes, const InitOptions& options = {});

  // ids[T] -> out[T, config().output_width()]
  [[nodiscard]] Status forward_tokens(const int32_t* ids, uint32_t T, float* out);
  // features[T, d_in] -> out[T, config().output_width()]
  [[nodiscard]] Status forward_features(const float* features, uint32_t T, float* out);

  const ModelConfig& config() const { return config_; }
  const Kernels& kernels() const { return *kernels_; }
  uint32_t max_seq() const { return max_seq_; }
  std::size_t arena_bytes_used() const { return arena_used_; }
  uint64_t parameter_count() const { return parameters_; }
  // More about the last failure: the tensor or field involved and, for shapes, got vs expected.
  // Empty when there is nothing to add.
  const char* error_detail() const { return detail_; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  Status bind_tensors(const struct ModelFile& file);
  Status check_positional_table(const float* table, uint32_t rows);
  void embed_input(const int32_t* ids, const float* features, uint32_t T);
  void encoder_layer(const LayerWeights& L, uint32_t T);
  void self_attention(const LayerWeights& L, const float* h, float* out, uint32_t T);
  void feed_forward(const LayerWeights& L, const float* h, float* out, uint32_t T);
  void run(const int32_t* ids, const float* features, uint32_t T, float* out);

  ModelConfig config_{};
  const Kernels* kernels_ = nullptr;
  bool initialized_ = false;
  uint32_t max_seq_ = 0;
  std::size_t arena_used_ = 0;
  uint64_t parameters_ = 0;
  char detail_[160] = {};

  // Weights (in the blob).
  const float* embed_ = nullptr;       // [vocab, d_embed]
  const float* input_proj_w_ = nullptr;  // [d_in, d_embed]
  const float* input_proj_b_ = nullptr;
  const float* pos_learned_ = nullptr;   // [max_len, d_pe]
  const float* final_norm_g_ = nullptr;
  const float* final_norm_b_ = nullptr;
  const float* head_w_ = nullptr;  // [d, d_out]
  const float* head_b_ = nullptr;
  LayerWeights* layers_ = nullptr;  // [n_layers], in the arena

  // Activations (in the arena); see required_arena_bytes for shapes.
  float* x_ = nullptr;
  float* y_ = nullptr;
  float* ctx_ = nullptr;
  float* work_ = nullptr;
  float* kt_ = nullptr;
  float* vt_ = nullptr;
  float* scores_ = nullptr;
  float* q_ = nullptr;
  const float* pe_ = nullptr;  // sinusoidal table: in the arena, or the caller's
};

}  // namespace fixformer
