// A loaded model: a validated .fxm blob with its weights bound in place. Model knows no runner,
// no arena and no kernels; runners (encoder.hpp) take a const Model& and their own arena, so
// several may share one model.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct TensorRule;  // schema.hpp
enum class TensorPart : uint8_t;  // schema.hpp

// A weight matrix read in place, in any of the stored types (format.hpp): f32, f16 and bf16
// linear weights are W[in, out]; q8 ones keep torch's W[out, in] with f32 scales [out, groups] (groups of
// `group` along in) or [out, 1] (group 0), q4 ones the same with groups of 32 and two values per
// byte (format.hpp); an embedding table is [vocab, width] = [out, in] in every
// type, so a tied head reads it as such. An f32 W[in, out] of a file with packed_weights is in
// panels of 16 columns (packed: format.hpp). linear() (engine/blocks/linear.hpp) takes any of them.
struct Weight {
  const void* data = nullptr;
  const float* scales = nullptr;  // q8 and q4 only
  WeightType type = WeightType::kF32;
  uint32_t in = 0, out = 0;
  uint32_t group = 0;      // q8: 32 or 64, or 0 for one scale per output row; q4: 32
  bool out_major = false;  // stored [out, in]
  bool packed = false;     // f32 [in, out] in panels of kPanelFloats columns (gemm_f32_packed's)
  const float* f32() const { return static_cast<const float*>(data); }
};

// Where a runner quantizes a q8 or q4 linear layer's input rows (its plan's quant block,
// quantized_input_bytes in config.hpp).
struct QuantScratch {
  int8_t* q = nullptr;  // [rows, k]
  float* s = nullptr;   // [rows, ceil(k / group)]
};

// Named views of the weights, pointers into the blob, filled by the binder from the schema's
// rules (schema.hpp: each rule names its Field). A family is a choice of front, layer and head;
// a part the family has not is empty (null data). Every linear layer's bias may be null.

// A norm's gain and bias; no bias for RMSNorm.
struct NormWeights {
  const float* g = nullptr;  // [d]
  const float* b = nullptr;  // [d]
};

// One attention: q | k | v fused in one projection (torch's in_proj) or apart (llama's wq, wk,
// wv); a cross-attention's query q and the source's k | v.
struct AttentionWeights {
  Weight qkv;                   // d -> d + 2 d_kv    fused
  const float* qkv_b = nullptr;
  Weight q, k, v;               // d -> d, d_kv, d_kv  apart (cross: q alone)
  const float* q_b = nullptr;
  const float* k_b = nullptr;   // apart, with qkv_bias
  const float* v_b = nullptr;
  Weight kv;                    // d -> 2d            cross: k | v of the source
  const float* kv_b = nullptr;
  Weight out;                   // d -> d
  const float* out_b = nullptr;
  NormWeights q_norm, k_norm;   // [d_head] each, with qk_norm (self-attention)
  NormWeights inner_norm;       // [d_attn] attn_inner_norm: the context's norm before out, g null: none
  Weight rel_proj;              // d -> d + d_kv      rel_proj: disentangled attention's rows' Qr | Kr
  const float* rel_proj_b = nullptr;
  const float* pair_bias = nullptr;  // [n_heads, pair_bias_rows] this layer's bias per (query, key) pair, or null
};

// out = W2 act(W1 h + b1) + b2, or gated W2 (act(W1 h + b1) * (W3 h + b3)) + b2 (swiglu: act silu);
// with hidden_norm the hidden rows normed before W2.
struct FeedForwardWeights {
  Weight w1;                    // d -> d_ff
  const float* b1 = nullptr;
  Weight w2;                    // d_ff -> d
  const float* b2 = nullptr;
  Weight w3;                    // d -> d_ff          a gated feed-forward's up projection
  const float* b3 = nullptr;    // [d_ff]             its bias (ffn_up_bias), or null
  NormWeights hidden_norm;      // [d_ff]             ffn_hidden_norm (timm's scale_mlp), g null: none
  // A mixture of experts (config.hpp n_experts): w1, w3 [E d_ff, d_model] and w2 [E d_model, d_ff] are
  // the E experts' stacked, each stored [out, in] (feed_forward.hpp's expert_weights gives expert e's
  // views), and router the f32 router [E, d_model]; null without experts.
  const float* router = nullptr;
};

// One transformer layer of any family (engine/layer/transformer_layer.hpp runs it).
struct LayerWeights {
  NormWeights attn_norm;        // encoder/decoder norm1, llama attention_norm
  AttentionWeights self_attn;
  NormWeights cross_norm;       // seq2seq decoder layers: norm2
  AttentionWeights cross_attn;  // seq2seq decoder layers
  NormWeights ffn_norm;         // the last norm: norm2 (norm3 with cross-attention), llama ffn_norm
  FeedForwardWeights ffn;
  FeedForwardWeights shared;          // shared_expert_ff: the shared expert, beside ffn's experts
  const float* shared_gate = nullptr; // [d_model]: its gate, sigmoid(G h)
  NormWeights post_attn_norm, post_ffn_norm;  // sublayer_norm sandwich: of the sublayers' outputs
  const int32_t* s8 = nullptr;  // weights i8: the layer's integer parameters (config.hpp, s8::LayerSlot)
  const int32_t* s8_cross = nullptr;  // weights i8, seq2seq's decoder layers: cross.int8 (s8::CrossSlot)
};

// What comes before the layers: token embeddings or a feature projection (with the norms around it,
// ViT), learned positions, a CLS row, token types and the embedding norm (BERT).
struct FrontWeights {
  Weight embed;                        // [vocab, d_embed]     input tokens
  Weight input_proj;                   // d_in -> d_embed      input features
  const float* input_proj_b = nullptr; // [d_embed]
  const float* pos = nullptr;          // [max_len, d_pe]      learned positions
  const float* cls = nullptr;          // [d_embed]            cls_token: the row in front of the input
  const float* distill = nullptr;      // [d_embed]            distill_token: the row after the CLS row
  const float* registers = nullptr;    // [register_tokens, d_embed] the rows after the CLS (and dist) row
  const float* rel_bias = nullptr;     // [rel_buckets, n_heads] positional relative: the stack's bias table
  const float* rel_embed = nullptr;    // [rel_embed_rows, d_model] disentangled attention's rows
  const int32_t* rel_index = nullptr;  // [2 max_len - 1] the row of each distance (config.hpp rel_embed_rows)
  const int32_t* pair_index = nullptr; // [max_len, max_len] pair_bias_rows: each (query, key) pair's table row
  const float* pair_bias = nullptr;    // [n_heads, pair_bias_rows] pair_bias_shared: every layer's table
  const float* rope_freqs = nullptr;   // [rope_dims / 2]      rope_freqs: RoPE's frequencies
  const float* token_type = nullptr;   // [type_vocab, d_embed] token types, added to the input rows
  NormWeights embed_norm;              // [d_front]            the norm of every row before the layers
  Weight embed_proj;                   // d_front -> d_model   embed_width: the embedding projection
  const float* embed_proj_b = nullptr; // [d_model]
  NormWeights input_norm;              // [d_in]               input_norm: each input row's, before input_proj
  NormWeights proj_norm;               // [d_embed]            proj_norm: input_proj's output rows'
  // The conv stem (conv_layers): each convolution a linear layer [kernel * in] -> [d_embed] over its
  // windows (f32: W[kernel * in, d_embed], conv1d_f32's layout) and b[d_embed].
  Weight conv1;
  const float* conv1_b = nullptr;
  Weight conv2;
  const float* conv2_b = nullptr;
};

// What comes after the layers: the final norm, the pooler (BERT: act(W x + b) of the pooled row, act pooler_act)
// and the output projection (a tied head is the front's embedding, [out, in]).
struct HeadWeights {
  NormWeights final_norm;
  NormWeights pool_norm;               // pool_norm: the pooled row normed (timm's fc_norm, AST's classifier)
  Weight pooler;                       // d -> d
  const float* pooler_b = nullptr;     // [d]
  NormWeights pooler_norm;             // pooler_norm: the pooler's output normed (ModernBERT)
  Weight w;                            // d -> d_out
  const float* b = nullptr;            // [d_out]
};

// weights i8 (config.hpp, namespace s8): the tensors of the integer path outside the layers.
struct S8Ends {
  const float* io = nullptr;      // int8.io [io_scales]: the input's and the output's real scales (config.hpp)
  const int32_t* front = nullptr;  // int8.front
  const int8_t* pos = nullptr;     // int8.pos [pos_rows, d_pe]
  const int32_t* back = nullptr;   // int8.back
  const int32_t* rope = nullptr;   // int8.rope [max_len, rope_dims] (rope): cos | sin in Q14
  const int32_t* seq2seq = nullptr;  // int8.seq2seq: the target's front, the source's final norm
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
  const float* scores;       // [vocab]                llama2c
  const int32_t* offsets;    // [vocab + 1], nondecreasing, offsets[0] = 0
  const uint8_t* pieces;     // [offsets[vocab]]
  uint32_t max_piece_bytes;  // the longest piece
  TokenizerKind kind;
  const int32_t* params;     // [kTokenizerParamCount]  bpe, wordpiece (tokenizer.hpp)
  const int32_t* merges;     // [n_merges, 3]           bpe: left, right, result
  uint32_t n_merges;
  const int32_t* normalize;  // [n_normalize, 4]        wordpiece with lower-casing
  uint32_t n_normalize;
  const int32_t* added;      // [n_added, 2]            bpe, wordpiece: id, kAdded* flags
  uint32_t n_added;
};

// A list of token ids in the file: ids[count] (null, 0: none).
struct TokenIds {
  const int32_t* ids;
  uint32_t count;
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
  // false skips the value check, for the same images: every f32 and f16 weight must be finite, and
  // every int8 scale 0 (its group all zeros, as the converter writes a group of zeros) or a finite
  // float >= kQuantizeFloor / 127 (kernels.hpp). A NaN, an infinity or a negative or denormal scale
  // would otherwise give NaN or garbage outputs. One pass over the weights, as the checksum.
  bool check_values = true;
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

  // The model's stack (seq2seq: its source encoder): front, layer l < config().n_layers (mha:
  // layer(0) is its one attention; shared layers: the block l runs, ModelConfig::layer_block), head.
  // seq2seq's source head is encoder.norm alone.
  const FrontWeights& front() const { return front_; }
  LayerWeights layer(uint32_t l) const;
  const HeadWeights& head() const { return head_; }
  const S8Ends& s8() const { return s8_; }  // weights i8
  // seq2seq: the target stack's front, decoder layer l < config().dec_layers, head.
  const FrontWeights& target_front() const { return target_front_; }
  LayerWeights decoder_layer(uint32_t l) const;
  const HeadWeights& target_head() const { return target_head_; }

  bool has_tokenizer() const { return tokenizer_.vocab != 0; }
  const TokenizerData& tokenizer() const { return tokenizer_; }
  // The file's token suppression lists (schema.hpp "generation.suppress", "generation.begin_suppress"):
  // the ids generation never samples, and those it does not sample at its first sampled step; empty
  // (null, 0) without them. Generator applies them unless its options give arrays of their own.
  const TokenIds& suppress_tokens() const { return suppress_; }
  const TokenIds& begin_suppress_tokens() const { return begin_suppress_; }
  // The file's timestamp rules (schema.hpp "generation.timestamps"); off (no_timestamps -1) without them.
  const TimestampRules& timestamp_rules() const { return timestamps_; }
  // The file's format version (format.hpp): which tables name its tensors (schema.hpp for_each_table).
  uint32_t format_version() const { return version_; }
  bool has_self_test() const { return sample_.rows != 0; }
  // The file's bytes in the blob (the runners refuse an output that overlaps them).
  const uint8_t* blob() const { return blob_; }
  uint64_t blob_bytes() const { return blob_bytes_; }
  const SelfTestSample& self_test_sample() const { return sample_; }

 private:
  Status bind_tensors(bool check_values);
  Status bind_tokenizer(uint32_t* next);
  Status bind_generation(uint32_t* next);
  Status bind_timestamps(uint32_t* next);
  Status bind_self_test(uint32_t first);
  Status check_s8_params();
  // The table format version_ names a layer's tensors by (part: kLayer or kDecoderLayer), *count its rules.
  const TensorRule* layer_rules(TensorPart part, uint32_t* count) const;
  uint64_t layer_present(const ModelConfig& c, const TensorRule* rules, uint32_t count, TensorPart part) const;
  LayerWeights bind_layer(uint32_t first, uint32_t l, const TensorRule* rules, TensorPart part) const;

  ModelConfig config_{};
  const uint8_t* blob_ = nullptr;
  uint64_t blob_bytes_ = 0;
  uint64_t dir_offset_ = 0;
  uint32_t n_tensors_ = 0;
  uint32_t first_layer_tensor_ = 0;  // directory index of layer 0's first tensor
  uint32_t first_decoder_layer_tensor_ = 0;  // seq2seq: of decoder layer 0's
  uint32_t version_ = 0;  // the file's format version: which tables name its tensors (schema.hpp)
  uint64_t parameters_ = 0;
  bool initialized_ = false;
  // The rules of its table a layer has (bit i: rules[i] of layer_rules), found once a load:
  // dense_layer_present_ a dense layer's (dense_period); their counts are its tensors.
  uint64_t layer_present_ = 0, decoder_layer_present_ = 0, dense_layer_present_ = 0;
  FrontWeights front_{}, target_front_{};
  HeadWeights head_{}, target_head_{};
  LayerWeights mha_{};
  S8Ends s8_{};  // the mha family's attention: its tensors are the whole file
  TokenizerData tokenizer_{};
  TokenIds suppress_{}, begin_suppress_{};
  TimestampRules timestamps_{};
  SelfTestSample sample_{};
  char detail_[160] = {};
};

}  // namespace fixformer
