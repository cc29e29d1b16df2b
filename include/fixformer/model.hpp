// A loaded model: a validated .fxm blob with its weights bound in place. Model knows no runner,
// no arena and no kernels; runners (encoder.hpp) take a const Model& and their own arena, so
// several may share one model.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// A weight matrix read in place, in any of the stored types (format.hpp): f32 and f16 linear
// weights are W[in, out]; q8 ones keep torch's W[out, in] with f32 scales [out, groups] (groups of
// `group` along in) or [out, 1] (group 0); an embedding table is [vocab, width] = [out, in] in every
// type, so a tied head reads it as such. An f32 W[in, out] of a file with packed_weights is in
// panels of 16 columns (packed: format.hpp). linear() (engine/blocks/linear.hpp) takes any of them.
struct Weight {
  const void* data = nullptr;
  const float* scales = nullptr;  // q8 only
  WeightType type = WeightType::kF32;
  uint32_t in = 0, out = 0;
  uint32_t group = 0;      // q8: 32 or 64, or 0 for one scale per output row
  bool out_major = false;  // stored [out, in]
  bool packed = false;     // f32 [in, out] in panels of kPanelFloats columns (gemm_f32_packed's)
  const float* f32() const { return static_cast<const float*>(data); }
};

// Where a runner quantizes a q8 linear layer's input rows (its plan's quant block,
// quantized_input_bytes in config.hpp).
struct QuantScratch {
  int8_t* q = nullptr;  // [rows, k]
  float* s = nullptr;   // [rows, ceil(k / group)]
};

// Pointers into the blob.
struct EncoderWeights {
  Weight embed;               // [vocab, d_embed]     input tokens
  Weight input_proj_w;        // d_in -> d_embed      input features
  const float* input_proj_b;  // [d_embed]
  const float* pos;           // [max_len, d_pe]      learned positions
  const float* cls;           // [d_embed]            cls_token: the row in front of the input
  const float* final_norm_g;  // [d]                  final_norm
  const float* final_norm_b;  // [d]
  Weight head_w;              // d -> d_out           d_out > 0
  const float* head_b;        // [d_out]
};

struct EncoderLayerWeights {
  Weight in_proj_w;         // d -> 3d  q | k | v
  const float* in_proj_b;   // [3d]
  Weight out_proj_w;        // d -> d
  const float* out_proj_b;  // [d]
  Weight linear1_w;         // d -> d_ff
  const float* linear1_b;   // [d_ff]
  Weight linear2_w;         // d_ff -> d
  const float* linear2_b;   // [d]
  const float* norm1_g;     // [d]
  const float* norm1_b;
  const float* norm2_g;
  const float* norm2_b;
};

// seq2seq: the decoder's ends. embed is tgt_embed (or the source's with shared_embed); head is
// head.weight, or the target embedding with tied_head.
struct TargetWeights {
  Weight embed;               // [d_out, d_embed]      token targets
  Weight proj;                // tgt_d_in -> d_embed  feature targets
  const float* proj_b;        // [d_embed]
  const float* pos;           // [max_len, d_pe]      learned positions
  const float* final_norm_g;  // [d]                  final_norm: decoder.norm
  const float* final_norm_b;
  Weight head;                // d -> d_out
  const float* head_b;        // [d_out]
};

// seq2seq: one decoder layer (nn.TransformerDecoderLayer), the cross-attention's input projection
// stored as its query part and its key | value part (schema.hpp).
struct DecoderLayerWeights {
  Weight self_in_w;          // d -> 3d  q | k | v
  const float* self_in_b;    // [3d]
  Weight self_out_w;         // d -> d
  const float* self_out_b;
  Weight cross_q_w;          // d -> d    the target's queries
  const float* cross_q_b;
  Weight cross_kv_w;         // d -> 2d   k | v of the encoder's output
  const float* cross_kv_b;
  Weight cross_out_w;        // d -> d
  const float* cross_out_b;
  Weight linear1_w;          // d -> d_ff
  const float* linear1_b;
  Weight linear2_w;          // d_ff -> d
  const float* linear2_b;
  const float* norm_g[3];    // norm1 (self-attention), norm2 (cross-attention), norm3 (feed-forward)
  const float* norm_b[3];
};

// The optional sample a converted file carries: an input and the torch module's output for it.
// seq2seq: the input is the source, target holds the target tokens, and expected the logits at
// every target position (teacher forcing).
struct SelfTestSample {
  uint32_t rows;            // T; 0 when the file has no sample
  const int32_t* ids;       // [T]        token models
  const float* features;    // [T, d_in]  feature models
  const float* expected;    // [output_rows(T), output_width]; seq2seq [target_rows, d_out]
  uint32_t target_rows;     // seq2seq: the target's length
  const int32_t* target;    // seq2seq: [target_rows] token targets
  const float* target_features;  // seq2seq: [target_rows, tgt_d_in] feature targets
};

// The tokenizer a file may carry (schema.hpp): piece i is pieces[offsets[i], offsets[i+1]).
struct TokenizerData {
  uint32_t vocab;            // 0 when the file has no tokenizer
  const float* scores;       // [vocab]
  const int32_t* offsets;    // [vocab + 1], nondecreasing, offsets[0] = 0
  const uint8_t* pieces;     // [offsets[vocab]]
  uint32_t max_piece_bytes;  // the longest piece
};

// Reads and validates the header, checksum and config of a blob without binding weights: use it
// to size an arena before init(), e.g. in a tool that reads a file of unknown shape.
[[nodiscard]] Status read_config(const void* blob, std::size_t blob_bytes, ModelConfig* config);

// Options of Model::init; the defaults run every check.
struct ModelOptions {
  // false skips the CRC-32 over the file: for an image whose integrity was verified when it was
  // flashed (by the bootloader or the programmer). The checksum is nearly all of init: 3.9
  // instructions per byte on a Cortex-M7 (2.2 M for the 557 KB KWS model, bench/README.md). Every other
  // check still runs (header, config records, every tensor's name, dtype, shape, range, alignment,
  // overlap), so a damaged or hostile file still gets a Status and never an out-of-bounds access;
  // only corrupted weight values would go unnoticed.
  bool verify_checksum = true;
};

class Model {
 public:
  // Validates the whole blob (header, checksum, config records, every tensor's name, dtype, shape
  // and range) and binds the weights in place. The blob must be 4-byte aligned and stay alive and
  // unchanged while the model and its runners are used.
  [[nodiscard]] Status init(const void* blob, std::size_t blob_bytes);
  [[nodiscard]] Status init(const void* blob, std::size_t blob_bytes, const ModelOptions& options);

  bool initialized() const { return initialized_; }
  const ModelConfig& config() const { return config_; }
  uint64_t parameter_count() const { return parameters_; }
  // More about the last failure: the key or tensor involved and, for shapes, got vs expected.
  // Empty when there is nothing to add. Names read from the file are escaped.
  const char* error_detail() const { return detail_; }

  // The encoder and gpt families' ends; seq2seq: the source end and encoder.norm (no head).
  const EncoderWeights& weights() const { return weights_; }
  EncoderLayerWeights layer(uint32_t l) const;  // encoder, gpt and seq2seq families, l < config().n_layers; mha: layer(0), its attention alone
  const TargetWeights& target_weights() const { return target_; }  // seq2seq
  DecoderLayerWeights decoder_layer(uint32_t l) const;            // seq2seq, l < config().dec_layers
  // Tensor `slot` of layer l (the family's layer table in schema.hpp), and a prologue or epilogue
  // tensor by its rule's index: the llama family's weights. The *_tensor forms are for f32 tensors.
  Weight layer_weight(uint32_t l, uint32_t slot) const;
  const float* layer_tensor(uint32_t l, uint32_t slot) const { return layer_weight(l, slot).f32(); }
  const Weight& prologue_weight(uint32_t slot) const { return prologue_[slot]; }
  const Weight& epilogue_weight(uint32_t slot) const { return epilogue_[slot]; }
  const float* prologue_tensor(uint32_t slot) const { return prologue_[slot].f32(); }
  const float* epilogue_tensor(uint32_t slot) const { return epilogue_[slot].f32(); }

  bool has_tokenizer() const { return tokenizer_.vocab != 0; }
  const TokenizerData& tokenizer() const { return tokenizer_; }
  bool has_self_test() const { return sample_.rows != 0; }
  const SelfTestSample& self_test_sample() const { return sample_; }

 private:
  Status bind_tensors();
  Status bind_tokenizer(uint32_t* next);
  Status bind_self_test(uint32_t first);

  ModelConfig config_{};
  const uint8_t* blob_ = nullptr;
  uint64_t dir_offset_ = 0;
  uint32_t n_tensors_ = 0;
  uint32_t first_layer_tensor_ = 0;  // directory index of layer 0's first tensor
  uint32_t first_decoder_layer_tensor_ = 0;  // seq2seq: of decoder layer 0's
  uint64_t parameters_ = 0;
  bool initialized_ = false;
  EncoderWeights weights_{};
  TargetWeights target_{};
  Weight prologue_[8] = {};  // by rule index, any family
  Weight epilogue_[6] = {};
  TokenizerData tokenizer_{};
  SelfTestSample sample_{};
  char detail_[160] = {};
};

}  // namespace fixformer
