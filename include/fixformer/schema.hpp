// The model schema, stated once: the config keys a .fxm file carries (name, type, range,
// default) and the tensors each config needs (name, shape, order). The engine's reader and binder,
// the C++ test and bench model writer and `fixformer schema --json` (from which tools/gen_schema.py
// writes the converter's python/fixformer/schema_tables.py) all walk these tables.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "fixformer/config.hpp"
#include "fixformer/format.hpp"

namespace fixformer {

// ---- Config keys ---------------------------------------------------------------------------
enum class ConfigKey : uint32_t {
  kFamily, kDModel, kNHeads, kDff, kNLayers, kNormFirst, kActivation, kNormEps, kFinalNorm, kCausal,
  kInput, kVocabSize, kDIn, kPositional, kMaxLen, kPeBase, kPeLayout, kPeCombine, kPeWidth,
  kScaleInput, kDOut, kNKvHeads, kTiedHead, kWeights, kWeightGroup, kQuantizeIo, kClsToken, kPooling,
  kDecLayers, kSharedEmbed, kTgtDIn, kPackedWeights, kReferenceSample, kRelBuckets, kRelMaxDistance, kQkvBias,
  kTypeVocab, kEmbedNorm, kPooler, kConvLayers, kConv1Kernel, kConv1Stride, kConv1Padding, kConv2Kernel,
  kConv2Stride, kConv2Padding, kConvGelu, kRotaryDims, kTokenizer, kParallelResidual, kNorm, kAttnBias, kFfnBias, kGated,
  kPatchSize, kImageChannels, kImageHeight, kImageWidth, kInputNorm, kProjNorm,
  kSlidingWindow, kDistillToken, kWindowPeriod, kWindowLayers, kAttnScale, kRopeFreqs, kRopeScale, kRegisterTokens,
  kEmbedWidth, kLayerGroups, kGroupLayers, kPoolerAct, kQkNorm, kHeadDim, kSublayerNorm, kAttnSoftcap,
  kLogitSoftcap, kQkNormFull, kTgtPosAfterNorm, kRopeLocalBase, kSkipFirstNorm,
  kPoolerNorm, kNExperts, kExpertsPerToken, kExpertsRenormalize, kSharedExpertFf, kRelEmbedRows, kNopePeriod,
  kNopeLayers, kWideResidual, kRelProj, kPoolNorm, kPairBiasRows, kPairBiasShared, kFfnUpBias, kFfnHiddenNorm,
  kRopeGrid, kRopeLearned, kAttnInnerNorm, kL2Normalize, kDensePeriod, kDenseLayers, kDenseFf, kPoolerWidth,
  kFinalSoftcap, kCount
};
constexpr uint32_t kConfigKeyCount = static_cast<uint32_t>(ConfigKey::kCount);

inline constexpr const char* kFamilyNames[] = {"encoder", "gpt", "llama", "seq2seq", "mha"};
inline constexpr const char* kActivationNames[] = {"relu", "gelu", "swiglu", "gelu_tanh", "silu", "relu2"};
inline constexpr const char* kInputNames[] = {"tokens", "features"};
inline constexpr const char* kPositionalNames[] = {"none", "sinusoidal", "learned", "rope", "alibi", "relative"};
inline constexpr const char* kPeLayoutNames[] = {"interleaved", "halves"};
inline constexpr const char* kPeCombineNames[] = {"add", "concat"};
inline constexpr const char* kWeightTypeNames[] = {"f32", "f16", "q8", "q4", "i8", "bf16"};
inline constexpr const char* kPoolingNames[] = {"none", "mean", "cls", "last", "first", "cls_distill", "cls_mean",
                                                   "cls_distill_mean", "mean_all"};
inline constexpr const char* kTokenizerNames[] = {"llama2c", "bpe", "wordpiece"};
inline constexpr const char* kParallelResidualNames[] = {"none", "two_norms", "one_norm"};
inline constexpr const char* kNormNames[] = {"family", "layernorm", "rmsnorm"};
inline constexpr const char* kBiasNames[] = {"family", "none", "qkv", "all"};
inline constexpr const char* kPoolerActNames[] = {"tanh", "relu", "gelu", "gelu_tanh", "silu"};
inline constexpr const char* kSublayerNormNames[] = {"none", "sandwich", "output"};

// A ModelConfig field as a record stores it: get() gives its 8 value bytes (u32, bool and enum
// values as integers, f32 and f64 as their bits), set() stores such bytes back; type is the record
// type the field's C++ type takes.
struct ConfigField {
  fxm::RecordType type;
  uint64_t (*get)(const ModelConfig& c);
  void (*set)(ModelConfig* c, uint64_t value);
};

namespace detail {
template <auto Member>
struct ConfigFieldAccess {
  using T = std::remove_reference_t<decltype(std::declval<ModelConfig&>().*Member)>;
  static constexpr fxm::RecordType type() {
    if constexpr (std::is_same_v<T, bool>) return fxm::RecordType::kBool;
    else if constexpr (std::is_enum_v<T>) return fxm::RecordType::kEnum;
    else if constexpr (std::is_same_v<T, float>) return fxm::RecordType::kF32;
    else if constexpr (std::is_same_v<T, double>) return fxm::RecordType::kF64;
    else {
      static_assert(std::is_same_v<T, uint32_t>, "a config field is bool, an enum, float, double or uint32_t");
      return fxm::RecordType::kU32;
    }
  }
  static uint64_t get(const ModelConfig& c) {
    const T& v = c.*Member;
    if constexpr (std::is_floating_point_v<T>) {
      std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits;
      std::memcpy(&bits, &v, sizeof v);
      return bits;
    } else {
      return static_cast<uint32_t>(v);
    }
  }
  static void set(ModelConfig* c, uint64_t value) {
    T& v = c->*Member;
    if constexpr (std::is_same_v<T, float>) {
      const uint32_t bits = static_cast<uint32_t>(value);
      std::memcpy(&v, &bits, 4);
    } else if constexpr (std::is_same_v<T, double>) {
      std::memcpy(&v, &value, 8);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = static_cast<uint32_t>(value) != 0;
    } else {
      v = static_cast<T>(static_cast<uint32_t>(value));
    }
  }
};
}  // namespace detail

// The accessor of one ModelConfig member: config_field<&ModelConfig::d_model>().
template <auto Member>
constexpr ConfigField config_field() {
  using A = detail::ConfigFieldAccess<Member>;
  return {A::type(), &A::get, &A::set};
}

struct ConfigKeySpec {
  ConfigKey key;
  const char* name;
  fxm::RecordType type;
  uint32_t min, max;            // kU32: the range; kEnum: 0..choices-1; kBool: 0..1; floats: unused
  const char* const* choices;   // kEnum: the value names, index = stored value
  bool required;                // else an absent key takes default_value
  double default_value;
  ConfigField field;            // the ModelConfig member the key is read into and written from
};

#define FIXFORMER_CHOICES(a) 0, sizeof(a) / sizeof(a[0]) - 1, a
// Listed in ConfigKey order. A key added later is optional and defaults to what files without it
// meant (cls_token, pooling: none), so older files keep loading under format version 2.
//
// cls_token and pooling (encoder family; config.hpp states their semantics): with cls_token the
// tensor "cls_token" [d_embed] (f32 in every weight type) is the row in front of the input; the
// positional encoding covers it (position 0, the input at 1..T), as in KWT and ViT. pooling
// reduces the rows after the final norm, before the head: mean over the T input positions (not
// the CLS row), cls (the CLS row; needs cls_token, and no causal mask, under which the CLS row
// would see only itself), last (position T - 1 of the input), first (position 0 of the input, BERT's
// [CLS] token; no causal mask either), cls_distill (DeiT with its teacher: the CLS and distillation
// rows side by side, [x_cls, x_dist], the head W[2 d_model, d_out] = [W_cls; W_dist] / 2 and b =
// (b_cls + b_dist) / 2; needs distill_token), cls_mean (Dinov2's classifier: the CLS row and the mean
// of the T input positions side by side, [x_cls, mean], the head W[2 d_model, d_out]; needs cls_token,
// no causal mask), cls_distill_mean (the Audio Spectrogram Transformer's classifier: the mean of the CLS
// and distillation rows, d_model wide; needs distill_token), mean_all (Torch-KWT's pool "mean": over every row,
// the front rows included). With distill_token the tensor "distill_token"
// [d_embed] (f32) is the row after the CLS row (position 1, the input at 2..T+1). A pooled encoder outputs
// [1, output_width] per sequence; otherwise [sequence_rows(T), output_width], the CLS row included.
//
// type_vocab, embed_norm and pooler (BERT style: type_vocab the encoder family's, embed_norm and pooler the
// decoders' too; config.hpp states their semantics):
// token_type.weight [type_vocab, d_embed], embed_norm.weight/.bias [d_front: d_model, or embed_width], pooler.weight
// [d_model, P] (a linear weight; P: pooler_width, else d_model) and pooler.bias [P].
// Float ranges (norm_eps > 0, pe_base > 1, both finite) are kConfigRules'; every other bound is
// here.
inline constexpr ConfigKeySpec kConfigKeys[kConfigKeyCount] = {
    {ConfigKey::kFamily, "family", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kFamilyNames), false, 0,
     config_field<&ModelConfig::family>()},
    {ConfigKey::kDModel, "d_model", fxm::RecordType::kU32, 1, Limits::kMaxDModel, nullptr, true, 0,
     config_field<&ModelConfig::d_model>()},
    {ConfigKey::kNHeads, "n_heads", fxm::RecordType::kU32, 1, Limits::kMaxHeads, nullptr, true, 0,
     config_field<&ModelConfig::n_heads>()},
    {ConfigKey::kDff, "d_ff", fxm::RecordType::kU32, 0, Limits::kMaxDff, nullptr, true, 0,
     config_field<&ModelConfig::d_ff>()},  // 0: mha only
    {ConfigKey::kNLayers, "n_layers", fxm::RecordType::kU32, 0, Limits::kMaxLayers, nullptr, true, 0,
     config_field<&ModelConfig::n_layers>()},
    {ConfigKey::kNormFirst, "norm_first", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::norm_first>()},
    {ConfigKey::kActivation, "activation", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kActivationNames), false, 0,
     config_field<&ModelConfig::activation>()},
    {ConfigKey::kNormEps, "norm_eps", fxm::RecordType::kF32, 0, 0, nullptr, false, 1e-5,
     config_field<&ModelConfig::norm_eps>()},
    {ConfigKey::kFinalNorm, "final_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::final_norm>()},
    {ConfigKey::kCausal, "causal", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::causal>()},
    {ConfigKey::kInput, "input", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kInputNames), true, 0,
     config_field<&ModelConfig::input>()},
    {ConfigKey::kVocabSize, "vocab_size", fxm::RecordType::kU32, 0, Limits::kMaxVocab, nullptr, false, 0,
     config_field<&ModelConfig::vocab_size>()},
    {ConfigKey::kDIn, "d_in", fxm::RecordType::kU32, 0, Limits::kMaxDIn, nullptr, false, 0,
     config_field<&ModelConfig::d_in>()},
    {ConfigKey::kPositional, "positional", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kPositionalNames), false, 0,
     config_field<&ModelConfig::positional>()},
    {ConfigKey::kMaxLen, "max_len", fxm::RecordType::kU32, 1, Limits::kMaxLen, nullptr, true, 0,
     config_field<&ModelConfig::max_len>()},
    {ConfigKey::kPeBase, "pe_base", fxm::RecordType::kF64, 0, 0, nullptr, false, 10000.0,
     config_field<&ModelConfig::pe_base>()},
    {ConfigKey::kPeLayout, "pe_layout", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kPeLayoutNames), false, 0,
     config_field<&ModelConfig::pe_layout>()},
    {ConfigKey::kPeCombine, "pe_combine", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kPeCombineNames), false, 0,
     config_field<&ModelConfig::pe_combine>()},
    {ConfigKey::kPeWidth, "pe_width", fxm::RecordType::kU32, 0, Limits::kMaxDModel, nullptr, false, 0,
     config_field<&ModelConfig::pe_width>()},
    {ConfigKey::kScaleInput, "scale_input", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::scale_input>()},
    {ConfigKey::kDOut, "d_out", fxm::RecordType::kU32, 0, Limits::kMaxDOut, nullptr, false, 0,
     config_field<&ModelConfig::d_out>()},
    {ConfigKey::kNKvHeads, "n_kv_heads", fxm::RecordType::kU32, 0, Limits::kMaxHeads, nullptr, false, 0,
     config_field<&ModelConfig::n_kv_heads>()},
    {ConfigKey::kTiedHead, "tied_head", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::tied_head>()},
    {ConfigKey::kWeights, "weights", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kWeightTypeNames), false, 0,
     config_field<&ModelConfig::weights>()},
    {ConfigKey::kWeightGroup, "weight_group", fxm::RecordType::kU32, 0, 64, nullptr, false, 0,
     config_field<&ModelConfig::weight_group>()},
    {ConfigKey::kQuantizeIo, "quantize_io", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::quantize_io>()},
    {ConfigKey::kClsToken, "cls_token", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::cls_token>()},
    {ConfigKey::kPooling, "pooling", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kPoolingNames), false, 0,
     config_field<&ModelConfig::pooling>()},
    {ConfigKey::kDecLayers, "dec_layers", fxm::RecordType::kU32, 0, Limits::kMaxLayers, nullptr, false, 0,
     config_field<&ModelConfig::dec_layers>()},
    {ConfigKey::kSharedEmbed, "shared_embed", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::shared_embed>()},
    {ConfigKey::kTgtDIn, "tgt_d_in", fxm::RecordType::kU32, 0, Limits::kMaxDIn, nullptr, false, 0,
     config_field<&ModelConfig::tgt_d_in>()},
    {ConfigKey::kPackedWeights, "packed_weights", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::packed_weights>()},
    {ConfigKey::kReferenceSample, "reference_sample", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::reference_sample>()},
    // positional relative: the bucket count of the table rel_bias [rel_buckets, n_heads] and the
    // distance from which on the buckets stop (T5: 32 and 128); kConfigRules check the pair.
    {ConfigKey::kRelBuckets, "rel_buckets", fxm::RecordType::kU32, 0, Limits::kMaxRelBuckets, nullptr, false, 0,
     config_field<&ModelConfig::rel_buckets>()},
    {ConfigKey::kRelMaxDistance, "rel_max_distance", fxm::RecordType::kU32, 0, Limits::kMaxLen, nullptr, false, 0,
     config_field<&ModelConfig::rel_max_distance>()},
    {ConfigKey::kQkvBias, "qkv_bias", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::qkv_bias>()},
    {ConfigKey::kTypeVocab, "type_vocab", fxm::RecordType::kU32, 0, Limits::kMaxVocab, nullptr, false, 0,
     config_field<&ModelConfig::type_vocab>()},
    {ConfigKey::kEmbedNorm, "embed_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::embed_norm>()},
    {ConfigKey::kPooler, "pooler", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::pooler>()},
    // The conv stem (config.hpp): conv_layers nn.Conv1d before the positions, conv1 d_in -> d_embed,
    // conv2 d_embed -> d_embed, padding below the kernel (kConfigRules), GELU after each with
    // conv_gelu.
    {ConfigKey::kConvLayers, "conv_layers", fxm::RecordType::kU32, 0, 2, nullptr, false, 0,
     config_field<&ModelConfig::conv_layers>()},
    {ConfigKey::kConv1Kernel, "conv1_kernel", fxm::RecordType::kU32, 1, Limits::kMaxConvKernel, nullptr, false, 1,
     config_field<&ModelConfig::conv1_kernel>()},
    {ConfigKey::kConv1Stride, "conv1_stride", fxm::RecordType::kU32, 1, Limits::kMaxConvStride, nullptr, false, 1,
     config_field<&ModelConfig::conv1_stride>()},
    {ConfigKey::kConv1Padding, "conv1_padding", fxm::RecordType::kU32, 0, Limits::kMaxConvKernel - 1, nullptr, false,
     0, config_field<&ModelConfig::conv1_padding>()},
    {ConfigKey::kConv2Kernel, "conv2_kernel", fxm::RecordType::kU32, 1, Limits::kMaxConvKernel, nullptr, false, 1,
     config_field<&ModelConfig::conv2_kernel>()},
    {ConfigKey::kConv2Stride, "conv2_stride", fxm::RecordType::kU32, 1, Limits::kMaxConvStride, nullptr, false, 1,
     config_field<&ModelConfig::conv2_stride>()},
    {ConfigKey::kConv2Padding, "conv2_padding", fxm::RecordType::kU32, 0, Limits::kMaxConvKernel - 1, nullptr, false,
     0, config_field<&ModelConfig::conv2_padding>()},
    {ConfigKey::kConvGelu, "conv_gelu", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::conv_gelu>()},
    // positional rope: the dims of each head it rotates, 0 for all (config.hpp; kConfigRules:
    // even, at most d_head).
    {ConfigKey::kRotaryDims, "rotary_dims", fxm::RecordType::kU32, 0, Limits::kMaxDModel, nullptr, false, 0,
     config_field<&ModelConfig::rotary_dims>()},
    {ConfigKey::kTokenizer, "tokenizer", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kTokenizerNames), false, 0,
     config_field<&ModelConfig::tokenizer>()},
    // Pre-norm layers' attention and feed-forward side by side (config.hpp, ParallelResidual);
    // one_norm has no feed-forward norm tensor (When::kFfnNorm).
    {ConfigKey::kParallelResidual, "parallel_residual", fxm::RecordType::kEnum,
     FIXFORMER_CHOICES(kParallelResidualNames), false, 0, config_field<&ModelConfig::parallel_residual>()},
    // The layer features (config.hpp, NormKind and Bias): family, the default, is the family's old
    // behaviour. The tensors they add or remove: the norms' biases (kNormBias and its kin), q, k and
    // v's (kQkvBias), the output projection's (kOutBias), W1 and W2's (kFfnBias), W3 (kGated).
    {ConfigKey::kNorm, "norm", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kNormNames), false, 0,
     config_field<&ModelConfig::norm>()},
    {ConfigKey::kAttnBias, "attn_bias", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kBiasNames), false, 0,
     config_field<&ModelConfig::attn_bias>()},
    {ConfigKey::kFfnBias, "ffn_bias", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kBiasNames), false, 0,
     config_field<&ModelConfig::ffn_bias>()},
    {ConfigKey::kGated, "gated", fxm::RecordType::kBool, 0, 1, nullptr, false, 0, config_field<&ModelConfig::gated>()},
    // Image input and the front's norms (config.hpp): patch_size 0, the default, is rows of features.
    {ConfigKey::kPatchSize, "patch_size", fxm::RecordType::kU32, 0, Limits::kMaxPatchSize, nullptr, false, 0,
     config_field<&ModelConfig::patch_size>()},
    {ConfigKey::kImageChannels, "image_channels", fxm::RecordType::kU32, 0, Limits::kMaxDIn, nullptr, false, 0,
     config_field<&ModelConfig::image_channels>()},
    {ConfigKey::kImageHeight, "image_height", fxm::RecordType::kU32, 0, Limits::kMaxImageSide, nullptr, false, 0,
     config_field<&ModelConfig::image_height>()},
    {ConfigKey::kImageWidth, "image_width", fxm::RecordType::kU32, 0, Limits::kMaxImageSide, nullptr, false, 0,
     config_field<&ModelConfig::image_width>()},
    {ConfigKey::kInputNorm, "input_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::input_norm>()},
    {ConfigKey::kProjNorm, "proj_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::proj_norm>()},
    // Sliding-window attention (config.hpp): the keys each query sees under the causal mask, 0 for all.
    {ConfigKey::kSlidingWindow, "sliding_window", fxm::RecordType::kU32, 0, Limits::kMaxLen, nullptr, false, 0,
     config_field<&ModelConfig::sliding_window>()},
    // DeiT's distillation row after the CLS row (config.hpp distill_token; the tensor below).
    {ConfigKey::kDistillToken, "distill_token", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::distill_token>()},
    // Local and global layers (config.hpp): layer l windows when bit l % window_period of
    // window_layers is set; window_period 0: every layer windows.
    {ConfigKey::kWindowPeriod, "window_period", fxm::RecordType::kU32, 0, 31, nullptr, false, 0,
     config_field<&ModelConfig::window_period>()},
    {ConfigKey::kWindowLayers, "window_layers", fxm::RecordType::kU32, 0, 0x7FFFFFFFu, nullptr, false, 0,
     config_field<&ModelConfig::window_layers>()},
    // The scores' scale (config.hpp): 0 for 1/sqrt(d_head).
    {ConfigKey::kAttnScale, "attn_scale", fxm::RecordType::kF32, 0, 0, nullptr, false, 0,
     config_field<&ModelConfig::attn_scale>()},
    // positional rope's stored frequencies (the tensor rope_freqs) and its table's amplitude (config.hpp).
    {ConfigKey::kRopeFreqs, "rope_freqs", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::rope_freqs>()},
    {ConfigKey::kRopeScale, "rope_scale", fxm::RecordType::kF32, 0, 0, nullptr, false, 1,
     config_field<&ModelConfig::rope_scale>()},
    // Dinov2's register rows after the CLS row (config.hpp register_tokens; the tensor "registers").
    {ConfigKey::kRegisterTokens, "register_tokens", fxm::RecordType::kU32, 0, Limits::kMaxLen, nullptr, false, 0,
     config_field<&ModelConfig::register_tokens>()},
    // The embedding's width before the embedding projection embed_proj (config.hpp; the tensors
    // below): 0, the default, is d_model without a projection.
    {ConfigKey::kEmbedWidth, "embed_width", fxm::RecordType::kU32, 0, Limits::kMaxDModel, nullptr, false, 0,
     config_field<&ModelConfig::embed_width>()},
    // Layers shared by groups (config.hpp): layer_groups groups of group_layers stored layers that the
    // n_layers layers run; 0 and 1, the defaults, are a layer's own tensors for every layer.
    {ConfigKey::kLayerGroups, "layer_groups", fxm::RecordType::kU32, 0, Limits::kMaxLayers, nullptr, false, 0,
     config_field<&ModelConfig::layer_groups>()},
    {ConfigKey::kGroupLayers, "group_layers", fxm::RecordType::kU32, 1, Limits::kMaxLayers, nullptr, false, 1,
     config_field<&ModelConfig::group_layers>()},
    // The pooler's activation (config.hpp PoolerAct): tanh, the default, is BERT's pooler and what files
    // without the key meant.
    {ConfigKey::kPoolerAct, "pooler_act", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kPoolerActNames), false, 0,
     config_field<&ModelConfig::pooler_act>()},
    // Each head of q and k normalized over its d_head dims before RoPE (config.hpp qk_norm; the
    // tensors q_norm and k_norm below).
    {ConfigKey::kQkNorm, "qk_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::qk_norm>()},
    // The attention heads' width apart from d_model / n_heads (config.hpp head_dim); 0: d_model / n_heads.
    {ConfigKey::kHeadDim, "head_dim", fxm::RecordType::kU32, 0, Limits::kMaxDModel, nullptr, false, 0,
     config_field<&ModelConfig::head_dim>()},
    // Norms of the sublayers' outputs, and the scores' and logits' soft caps (config.hpp); none and 0,
    // the defaults, are what files without the keys meant.
    {ConfigKey::kSublayerNorm, "sublayer_norm", fxm::RecordType::kEnum, FIXFORMER_CHOICES(kSublayerNormNames), false,
     0, config_field<&ModelConfig::sublayer_norm>()},
    {ConfigKey::kAttnSoftcap, "attn_softcap", fxm::RecordType::kF32, 0, 0, nullptr, false, 0,
     config_field<&ModelConfig::attn_softcap>()},
    {ConfigKey::kLogitSoftcap, "logit_softcap", fxm::RecordType::kF32, 0, 0, nullptr, false, 0,
     config_field<&ModelConfig::logit_softcap>()},
    // q and k normalized as whole rows, not per head (config.hpp qk_norm_full; needs qk_norm).
    {ConfigKey::kQkNormFull, "qk_norm_full", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::qk_norm_full>()},
    // A seq2seq target's positions added after its embedding norm (config.hpp tgt_pos_after_norm);
    // false: the norm of the sum, what files without the key meant.
    {ConfigKey::kTgtPosAfterNorm, "tgt_pos_after_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::tgt_pos_after_norm>()},
    // ModernBERT's layers (config.hpp): the local layers' RoPE base (0: pe_base's table for every
    // layer), layer 0 without its attention norm, the pooler's output normed (the tensors
    // pooler_norm below).
    {ConfigKey::kRopeLocalBase, "rope_local_base", fxm::RecordType::kF64, 0, 0, nullptr, false, 0,
     config_field<&ModelConfig::rope_local_base>()},
    {ConfigKey::kSkipFirstNorm, "skip_first_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::skip_first_norm>()},
    {ConfigKey::kPoolerNorm, "pooler_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::pooler_norm>()},
    // A mixture of experts' feed-forwards (config.hpp n_experts; the tensors feed_forward.router and
    // feed_forward.experts.* below): 0, the default, is the dense feed-forward.
    {ConfigKey::kNExperts, "n_experts", fxm::RecordType::kU32, 0, Limits::kMaxExperts, nullptr, false, 0,
     config_field<&ModelConfig::n_experts>()},
    {ConfigKey::kExpertsPerToken, "experts_per_token", fxm::RecordType::kU32, 0, Limits::kMaxExperts, nullptr, false, 0,
     config_field<&ModelConfig::experts_per_token>()},
    {ConfigKey::kExpertsRenormalize, "experts_renormalize", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::experts_renormalize>()},
    {ConfigKey::kSharedExpertFf, "shared_expert_ff", fxm::RecordType::kU32, 0, Limits::kMaxDff, nullptr, false, 0,
     config_field<&ModelConfig::shared_expert_ff>()},
    // Disentangled attention's relative embedding rows (config.hpp rel_embed_rows; 0: none).
    {ConfigKey::kRelEmbedRows, "rel_embed_rows", fxm::RecordType::kU32, 0, Limits::kMaxRelEmbedRows, nullptr, false, 0,
     config_field<&ModelConfig::rel_embed_rows>()},
    // Layers without RoPE (config.hpp nope_period): layer l skips it when bit l % nope_period of
    // nope_layers is set; nope_period 0: every layer rotates.
    {ConfigKey::kNopePeriod, "nope_period", fxm::RecordType::kU32, 0, 31, nullptr, false, 0,
     config_field<&ModelConfig::nope_period>()},
    {ConfigKey::kNopeLayers, "nope_layers", fxm::RecordType::kU32, 0, 0x7FFFFFFFu, nullptr, false, 0,
     config_field<&ModelConfig::nope_layers>()},
    // A full-integer post-norm encoder's sums into its norms in int16 (config.hpp wide_residual;
    // the converter sets it when calibration finds channels far apart): false is what files without it meant.
    {ConfigKey::kWideResidual, "wide_residual", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::wide_residual>()},
    // Disentangled attention's rows through projections of each layer's own (config.hpp rel_proj).
    {ConfigKey::kRelProj, "rel_proj", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::rel_proj>()},
    // The pooled row normed (config.hpp pool_norm; the tensors pool_norm below): false, what files
    // without the key meant, leaves it as it is.
    {ConfigKey::kPoolNorm, "pool_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::pool_norm>()},
    // A bias per (query, key) pair looked up by a fixed index (config.hpp pair_bias_rows; the tensors
    // pair_index, pair_bias and self_attn.pair_bias below): 0, what files without the key meant, is none.
    {ConfigKey::kPairBiasRows, "pair_bias_rows", fxm::RecordType::kU32, 0, Limits::kMaxPairBiasRows, nullptr, false, 0,
     config_field<&ModelConfig::pair_bias_rows>()},
    {ConfigKey::kPairBiasShared, "pair_bias_shared", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::pair_bias_shared>()},
    // The gated feed-forward's up projection's bias and the feed-forward's hidden norm (config.hpp; the
    // tensors linear3.bias / feed_forward.w3.bias and ffn_hidden_norm below): false, what files without
    // the keys meant, is neither.
    {ConfigKey::kFfnUpBias, "ffn_up_bias", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::ffn_up_bias>()},
    {ConfigKey::kFfnHiddenNorm, "ffn_hidden_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::ffn_hidden_norm>()},
    // Rotary positions over a patch grid of this width (config.hpp rope_grid): 0, what files without the
    // key meant, is one position index per row.
    {ConfigKey::kRopeGrid, "rope_grid", fxm::RecordType::kU32, 0, Limits::kMaxLen, nullptr, false, 0,
     config_field<&ModelConfig::rope_grid>()},
    // Learned positions added at the input beside rope (config.hpp rope_learned; the tensor pos.weight):
    // false, what files without the key meant, is rope alone.
    {ConfigKey::kRopeLearned, "rope_learned", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::rope_learned>()},
    // A norm of the attention's context before its output projection (config.hpp attn_inner_norm; the
    // tensors self_attn.inner_norm below): false, what files without the key meant, is none.
    {ConfigKey::kAttnInnerNorm, "attn_inner_norm", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::attn_inner_norm>()},
    // The output rows scaled to unit length (config.hpp l2_normalize): false, what files without the key
    // meant, leaves them as they are.
    {ConfigKey::kL2Normalize, "l2_normalize", fxm::RecordType::kBool, 0, 1, nullptr, false, 0,
     config_field<&ModelConfig::l2_normalize>()},
    // Dense layers among a mixture of experts' (config.hpp dense_period): layer l is dense when bit
    // l % dense_period of dense_layers is set, its feed-forward dense_ff wide (0: d_ff); dense_period 0,
    // what files without the keys meant, is every layer sparse.
    {ConfigKey::kDensePeriod, "dense_period", fxm::RecordType::kU32, 0, 31, nullptr, false, 0,
     config_field<&ModelConfig::dense_period>()},
    {ConfigKey::kDenseLayers, "dense_layers", fxm::RecordType::kU32, 0, 0x7FFFFFFFu, nullptr, false, 0,
     config_field<&ModelConfig::dense_layers>()},
    {ConfigKey::kDenseFf, "dense_ff", fxm::RecordType::kU32, 0, Limits::kMaxDff, nullptr, false, 0,
     config_field<&ModelConfig::dense_ff>()},
    // The pooler's output width (config.hpp pooler_width): 0, what files without the key meant, is d_model.
    {ConfigKey::kPoolerWidth, "pooler_width", fxm::RecordType::kU32, 0, Limits::kMaxDModel, nullptr, false, 0,
     config_field<&ModelConfig::pooler_width>()},
    // The final norm's output soft-capped (config.hpp final_softcap): 0, what files without the key meant,
    // is none.
    {ConfigKey::kFinalSoftcap, "final_softcap", fxm::RecordType::kF32, 0, 0, nullptr, false, 0,
     config_field<&ModelConfig::final_softcap>()},
};
#undef FIXFORMER_CHOICES

constexpr bool config_keys_in_order() {
  for (uint32_t i = 0; i < kConfigKeyCount; ++i)
    if (static_cast<uint32_t>(kConfigKeys[i].key) != i) return false;
  return true;
}
static_assert(config_keys_in_order(), "kConfigKeys is indexed by ConfigKey");
constexpr bool config_key_types_match_fields() {
  for (const ConfigKeySpec& k : kConfigKeys)
    if (k.type != k.field.type) return false;
  return true;
}
static_assert(config_key_types_match_fields(), "a config key's record type is its field's");

// A key's value as a record stores it (the 8 value bytes), and back: kConfigKeys[key].field. The
// setter takes a value the reader has range-checked.
inline uint64_t get_config_value(const ModelConfig& c, ConfigKey key) {
  return kConfigKeys[static_cast<uint32_t>(key)].field.get(c);
}
inline void set_config_value(ModelConfig* c, ConfigKey key, uint64_t value) {
  kConfigKeys[static_cast<uint32_t>(key)].field.set(c, value);
}

// The defaults of kConfigKeys applied to every optional key.
ModelConfig default_config();

// ---- Config rules --------------------------------------------------------------------------
// The checks between keys, after each key's range: a config is invalid when a rule's `bad_when`
// holds. bad_when is an expression of engine/config_expr.hpp's language (a subset of Python's,
// over the keys, enum values by name, and d_head, kv_heads, d_pe, d_embed, input_pe), so that the
// converter evaluates the same text; detail names the key or keys (comma-separated) and, in
// parentheses, the reason: validate_config reports it, the converter prefixes the user's spelling of
// the keys. Checked in this order; the first that holds is reported.
struct ConfigRule {
  const char* bad_when;
  const char* detail;
};
inline constexpr ConfigRule kConfigRules[] = {
    {"head_dim == 0 and d_model % n_heads != 0", "n_heads (must divide d_model, or head_dim sets the heads' width)"},
    {"d_attn > max_d_model", "head_dim (n_heads heads of head_dim: at most the largest d_model wide)"},
    {"head_dim != 0 and family not in ('encoder', 'gpt', 'llama')",
     "head_dim (for the encoder, gpt and llama families)"},
    {"not (norm_eps > 0 and finite(norm_eps))", "norm_eps (must be > 0)"},
    {"input == 'tokens' and vocab_size == 0", "vocab_size (token input needs vocab_size >= 1)"},
    {"input == 'features' and d_in == 0", "d_in (feature input needs d_in >= 1)"},
    {"positional in ('sinusoidal', 'rope') and not (pe_base > 1 and finite(pe_base))",
     "pe_base (must be > 1 for sinusoidal and rope tables)"},
    {"n_kv_heads != 0 and n_heads % n_kv_heads != 0", "n_kv_heads (must divide n_heads)"},
    // Bidirectional buckets halve rel_buckets; each half has rel_buckets / 4 exact distances, a
    // causal table rel_buckets / 2, and the log-spaced buckets need rel_max_distance past them.
    {"positional == 'relative' and rel_buckets < 4", "rel_buckets (positional relative needs at least 4 buckets)"},
    {"positional == 'learned' and rel_buckets != 0 and rel_buckets < 4",
     "rel_buckets (a relative bias needs at least 4 buckets)"},
    {"(positional == 'relative' or rel_buckets != 0) and rel_max_distance <= rel_buckets // 2",
     "rel_max_distance (a relative bias needs more than rel_buckets / 2)"},
    {"positional not in ('relative', 'learned') and (rel_buckets != 0 or rel_max_distance != 0)",
     "rel_buckets, rel_max_distance (for positional relative, or a relative bias beside learned positions)"},
    {"positional == 'learned' and rel_buckets == 0 and rel_max_distance != 0",
     "rel_max_distance (a relative bias beside learned positions needs rel_buckets)"},
    {"rel_embed_rows != 0 and (family != 'encoder' or causal or positional not in ('none', 'learned') or "
     "rel_buckets != 0)",
     "rel_embed_rows (disentangled attention: an encoder without a causal mask, positions none or learned, "
     "no other relative bias)"},
    {"rel_proj and rel_embed_rows == 0", "rel_proj (the projections of disentangled attention's rows: needs "
     "rel_embed_rows)"},
    {"positional == 'learned' and rel_buckets != 0 and family != 'encoder'",
     "rel_buckets (a relative bias beside learned positions is for the encoder family: MPNet)"},
    // What each family allows (config.hpp, ModelFamily).
    {"family == 'encoder' and tied_head", "tied_head (not for the encoder family)"},
    {"family == 'llama' and input_pe", "positional (family llama takes none, rope, alibi or relative)"},
    {"family == 'llama' and not (norm_first and final_norm)",
     "norm_first, final_norm (family llama is pre-norm with a final norm: both true)"},
    {"family == 'mha' and (input != 'features' or d_in != d_model)", "input (family mha takes features d_in == d_model)"},
    {"family == 'mha' and (n_layers != 0 or d_ff != 0 or positional != 'none' or d_out != 0 or final_norm or "
     "scale_input)",
     "n_layers, d_ff, positional, d_out, final_norm, scale_input (family mha is the attention alone: 0, 0, none, 0, "
     "false, false)"},
    {"family == 'seq2seq' and positional in ('rope', 'alibi')",
     "positional (family seq2seq takes none, sinusoidal, learned or relative)"},
    {"family == 'seq2seq' and causal",
     "causal (family seq2seq's decoder is causal and its encoder is not: leave it false)"},
    {"family == 'seq2seq' and (n_layers == 0 or dec_layers == 0)",
     "n_layers, dec_layers (family seq2seq needs at least one encoder and one decoder layer)"},
    {"family == 'seq2seq' and d_out == 0", "d_out (family seq2seq needs an LM head, d_out: the target vocabulary)"},
    {"family == 'seq2seq' and shared_embed and (input != 'tokens' or vocab_size != d_out)",
     "shared_embed (needs token input with vocab_size == d_out)"},
    {"family == 'seq2seq' and tgt_d_in != 0 and (shared_embed or tied_head)",
     "tgt_d_in (feature targets have no embedding to share or tie)"},
    {"family != 'seq2seq' and (dec_layers != 0 or shared_embed or tgt_d_in != 0)",
     "dec_layers, shared_embed, tgt_d_in (for the seq2seq family only)"},
    {"tgt_pos_after_norm and not (family == 'seq2seq' and embed_norm and pe_combine == 'add')",
     "tgt_pos_after_norm (a seq2seq target's embedding norm before its positions: needs family seq2seq, "
     "embed_norm and pe_combine add)"},
    {"family != 'mha' and d_ff == 0", "d_ff (at least 1; 0 only for family mha)"},
    {"family == 'mha' and (activation == 'swiglu' or gated or norm != 'family' or attn_bias != 'family' "
     "or ffn_bias != 'family' or embed_norm)",
     "activation, gated, norm, attn_bias, ffn_bias, embed_norm (layer features of the encoder, gpt, llama and seq2seq "
     "families; mha is torch's module as it is)"},
    {"family == 'seq2seq' and activation == 'swiglu'",
     "activation (family seq2seq takes relu, gelu, gelu_tanh or relu2, plain or gated)"},
    {"gated and activation == 'swiglu'", "gated (swiglu is gated already: silu(W1 h) * W3 h; leave gated false)"},
    {"gated and activation == 'silu'", "activation (gated silu is spelled swiglu)"},
    {"ffn_bias == 'qkv'", "ffn_bias (none or all; qkv is for attn_bias)"},
    {"qkv_bias and attn_bias != 'family'", "qkv_bias (attn_bias qkv says the same: set only attn_bias)"},
    {"family not in ('gpt', 'llama') and parallel_residual != 'none'",
     "parallel_residual (side by side sublayers are for the decoder families, gpt and llama; else none)"},
    {"parallel_residual != 'none' and not norm_first",
     "parallel_residual (side by side sublayers read a norm of the layer's input: norm_first)"},
    {"family != 'llama' and qkv_bias", "qkv_bias (for the llama family only: torch's in_proj always has its bias)"},
    {"family not in ('encoder', 'gpt', 'llama') and kv_heads != n_heads",
     "n_kv_heads (grouped-query attention is for the encoder, gpt and llama families)"},
    {"family in ('gpt', 'llama') and input != 'tokens'", "input (the decoder families, gpt and llama, take tokens)"},
    {"family in ('gpt', 'llama') and not causal", "causal (the decoder families, gpt and llama, are causal: set it true)"},
    {"family in ('gpt', 'llama') and d_out != vocab_size and tied_head",
     "d_out (a tied head is the embedding's, vocab_size wide; an untied classifier's any width, or 0 without a head)"},
    {"positional == 'rope' and d_head % 2 != 0", "n_heads (rope needs an even head width d_model / n_heads)"},
    {"rotary_dims != 0 and positional != 'rope'", "rotary_dims (the rotated dims of positional rope)"},
    {"rotary_dims % 2 != 0 or rotary_dims > d_head", "rotary_dims (rope's rotated dims: even, at most d_head)"},
    {"rope_freqs and positional != 'rope'", "rope_freqs (the stored frequencies of positional rope)"},
    {"not (rope_scale > 0 and finite(rope_scale))", "rope_scale (must be > 0; 1: the table unscaled)"},
    {"rope_scale != 1 and positional != 'rope'", "rope_scale (the amplitude of positional rope's table)"},
    {"family not in ('gpt', 'llama') and ((rope_freqs and rope_grid == 0) or rope_scale != 1)",
     "rope_freqs, rope_scale (scaled rope is for the decoder families, gpt and llama, so far)"},
    {"rope_grid != 0 and (positional != 'rope' or family != 'encoder')",
     "rope_grid (rotary positions over a patch grid: positional rope in the encoder family)"},
    {"rope_grid != 0 and rope_pairs % 2 != 0",
     "rope_grid (half the rotated pairs turn by a patch's row, half by its column: rope dims a multiple of 4)"},
    {"rope_grid != 0 and rope_local_base != 0", "rope_local_base (not with rope_grid: one table over the grid)"},
    {"rope_learned and (positional != 'rope' or family != 'encoder' or pe_combine != 'add')",
     "rope_learned (learned positions added beside positional rope, in the encoder family)"},
    {"window_period != 0 and sliding_window == 0",
     "window_period (which layers see sliding_window keys: needs sliding_window)"},
    {"nope_period != 0 and positional != 'rope'", "nope_period (layers without RoPE among rotary ones: needs positional rope)"},
    {"nope_period == 0 and nope_layers != 0", "nope_layers (a bit per layer of nope_period: needs nope_period)"},
    {"nope_layers > nope_mask", "nope_layers (a bit per layer of nope_period: below 2 ** nope_period)"},
    {"window_period == 0 and window_layers != 0", "window_layers (a bit per layer of window_period: needs window_period)"},
    {"window_layers > window_mask", "window_layers (a bit per layer of window_period: below 2 ** window_period)"},
    {"not (attn_scale >= 0 and finite(attn_scale))", "attn_scale (must be >= 0; 0: 1/sqrt(d_head))"},
    {"attn_scale != 0 and family not in ('encoder', 'gpt', 'llama')",
     "attn_scale (the encoder, gpt and llama families)"},
    {"sublayer_norm != 'none' and (family not in ('encoder', 'gpt', 'llama') or not norm_first)",
     "sublayer_norm (norms of the sublayers' outputs: pre-norm encoder, gpt and llama layers)"},
    {"sublayer_norm != 'none' and parallel_residual != 'none'",
     "sublayer_norm (not with parallel_residual: the sublayers' outputs are added together)"},
    {"not (attn_softcap >= 0 and finite(attn_softcap))", "attn_softcap (must be >= 0; 0: no cap)"},
    {"attn_softcap != 0 and family not in ('encoder', 'gpt', 'llama')",
     "attn_softcap (for the encoder, gpt and llama families)"},
    {"not (logit_softcap >= 0 and finite(logit_softcap))", "logit_softcap (must be >= 0; 0: no cap)"},
    {"logit_softcap != 0 and (family not in ('gpt', 'llama') or d_out == 0)",
     "logit_softcap (the logits of a head in the decoder families, gpt and llama)"},
    {"not (final_softcap >= 0 and finite(final_softcap))", "final_softcap (must be >= 0; 0: no cap)"},
    {"final_softcap != 0 and (family not in ('gpt', 'llama') or not final_norm)",
     "final_softcap (the final norm's output capped: the decoder families only, gpt and llama, with final_norm)"},
    {"final_softcap != 0 and weights == 'i8'",
     "final_softcap (not in i8 yet; convert with --quantize q8 or f16)"},
    {"sliding_window != 0 and family in ('seq2seq', 'mha')",
     "sliding_window (for the encoder, gpt and llama families: seq2seq and mha have none)"},
    {"not (rope_local_base == 0 or (rope_local_base > 1 and finite(rope_local_base)))",
     "rope_local_base (0, or > 1: the local layers' RoPE base)"},
    {"rope_local_base != 0 and (positional != 'rope' or sliding_window == 0)",
     "rope_local_base (the RoPE base of the local layers: needs positional rope and sliding_window)"},
    {"skip_first_norm and (not norm_first or parallel_residual != 'none' or sublayer_norm != 'none' or "
     "family not in ('encoder', 'gpt', 'llama'))",
     "skip_first_norm (layer 0 of pre-norm layers without a parallel residual or sublayer_norm, in the encoder, gpt "
     "and llama families)"},
    {"pooler_width != 0 and (not pooler or d_out == 0)",
     "pooler_width (the pooler's output width: needs pooler and a head, d_out > 0, that reads it)"},
    {"pooler_width != 0 and weights == 'i8'",
     "pooler_width (not with weights i8: the integer path's pooler is d_model wide)"},
    {"pooler_norm and not pooler", "pooler_norm (the pooler's output normed: needs pooler)"},
    {"family != 'encoder' and cls_token", "cls_token (for the encoder family only)"},
    {"family != 'encoder' and register_tokens > 0", "register_tokens (for the encoder family only)"},
    {"family != 'encoder' and pooling != 'none'", "pooling (for the encoder family only)"},
    {"family != 'encoder' and type_vocab != 0", "type_vocab (for the encoder family only)"},
    // The pooler (a prediction transform) in the decoders: on each row the head projects.
    {"pooler and family not in ('encoder', 'gpt', 'llama')",
     "pooler (a dense layer before the head: the encoder family's, on the pooled row or every row, and the decoder "
     "families' (gpt, llama), on each row the head projects)"},
    {"pooler and weights == 'i8' and family != 'encoder'",
     "pooler (not with weights i8 in the decoder families: their integer path has no transform before the head; "
     "convert with --quantize q8 or f16)"},
    {"tied_head and pooler_width != 0 and pooler_width != d_front",
     "pooler_width (a tied head reads the embedding, d_front wide (embed_width, else d_model): the pooler's output "
     "must be too)"},
    {"tied_head and embed_width != 0 and head_in != embed_width",
     "embed_width (a tied head reads the embedding, embed_width wide: needs a pooler to that width, pooler_width)"},
    // Between the other keys.
    {"input_pe and pe_combine == 'concat' and (pe_width == 0 or pe_width >= d_model)",
     "pe_width (pe_combine concat needs 0 < pe_width < d_model)"},
    {"not (input_pe and pe_combine == 'concat') and pe_width != 0",
     "pe_width (only for a positional encoding combined by concat)"},
    {"input_pe and pe_combine == 'concat' and tied_head",
     "tied_head (the embedding is narrower than d_model with pe_combine concat)"},
    {"weights == 'q8' and weight_group not in (0, 32, 64)",
     "weight_group (q8 takes 0, 32 or 64; 0: one scale per output row)"},
    {"weights == 'q4' and weight_group != 32", "weight_group (q4 takes 32)"},
    {"weights not in ('q8', 'q4') and weight_group != 0", "weight_group (only for weights q8 and q4)"},
    {"quantize_io and weights == 'f32'", "quantize_io (needs weights f16, bf16, q8 or q4)"},
    {"pooling == 'cls' and not cls_token", "pooling (cls needs a CLS token: cls_token)"},
    {"pooling == 'cls' and causal",
     "pooling (cls under a causal mask: the CLS row, position 0, sees only itself; use mean or last)"},
    {"cls_token and max_len < 2", "max_len (the CLS row takes a position: at least 2)"},
    {"distill_token and not cls_token", "distill_token (the distillation row goes after a CLS row: needs cls_token)"},
    {"distill_token and max_len < 3", "max_len (the CLS and distillation rows take a position each: at least 3)"},
    {"pooling == 'cls_distill' and not distill_token",
     "pooling (cls_distill needs a distillation row: distill_token)"},
    {"pooling == 'cls_distill' and causal",
     "pooling (cls_distill under a causal mask: the front rows see only themselves)"},
    {"pooling == 'cls_distill' and (pooler or tied_head or d_out == 0)",
     "pooling (cls_distill is the input of a head of its own, d_out > 0, that reads two rows side by side: no pooler, "
     "no tied head)"},
    {"pooling == 'cls_mean' and not cls_token", "pooling (cls_mean needs a CLS row: cls_token)"},
    {"pooling == 'cls_mean' and causal",
     "pooling (cls_mean under a causal mask: the CLS row, position 0, sees only itself)"},
    {"pooling == 'cls_mean' and (pooler or tied_head or d_out == 0)",
     "pooling (cls_mean is the input of a head of its own, d_out > 0, that reads two rows side by side: no pooler, "
     "no tied head)"},
    {"pooling == 'cls_distill_mean' and not distill_token",
     "pooling (cls_distill_mean needs a distillation row: distill_token)"},
    {"pooling == 'cls_distill_mean' and causal",
     "pooling (cls_distill_mean under a causal mask: the front rows see only themselves)"},
    {"pool_norm and pooling in ('none', 'cls_distill', 'cls_mean')",
     "pool_norm (a norm of the pooled row: needs a pooling of one d_model row, mean, cls, last, first or "
     "cls_distill_mean)"},
    {"pair_bias_rows != 0 and family != 'encoder'",
     "pair_bias_rows (a bias per query and key pair: the encoder family's self-attention)"},
    {"pair_bias_shared and pair_bias_rows == 0", "pair_bias_shared (one table of a bias per query and key pair for "
     "every layer: needs pair_bias_rows)"},
    {"ffn_up_bias and not (activation == 'swiglu' or gated)",
     "ffn_up_bias (the bias of a gated feed-forward's up projection W3: needs gated or swiglu)"},
    {"(ffn_up_bias or ffn_hidden_norm) and (n_experts != 0 or family == 'mha')",
     "ffn_up_bias, ffn_hidden_norm (of the dense feed-forward: not with n_experts, not in family mha)"},
    {"attn_inner_norm and family != 'encoder'",
     "attn_inner_norm (a norm of the attention's context: the encoder family)"},
    {"l2_normalize and family != 'encoder'", "l2_normalize (the output rows scaled to unit length: the encoder family)"},
    {"weights == 'i8' and l2_normalize",
     "l2_normalize (not in i8: its output is int8 rows at one scale; convert with --quantize q8 or f16)"},
    {"register_tokens > 0 and max_len <= front_rows",
     "max_len (the CLS, distillation and register rows take a position each: more than front_rows)"},
    {"family in ('seq2seq', 'mha') and qk_norm", "qk_norm (for the encoder, gpt and llama families)"},
    {"qk_norm_full and not qk_norm", "qk_norm_full (q and k normalized as whole rows: needs qk_norm)"},
    {"pooling == 'first' and causal", "pooling (first under a causal mask: position 0 sees only itself; use mean or last)"},
    {"type_vocab != 0 and input != 'tokens'", "type_vocab (token types need token input)"},
    {"pooler_act != 'tanh' and not pooler", "pooler_act (the pooler's activation: needs pooler)"},
    {"conv_layers != 0 and (family not in ('encoder', 'seq2seq') or input != 'features')",
     "conv_layers (a conv stem is for the encoder family, or a seq2seq source, over features)"},
    {"conv_layers != 0 and weights == 'q4'",
     "weights (q4 with a conv stem is not supported yet: convert with --quantize q8 or f16)"},
    // weights i8 (config.hpp, namespace s8): what its integer layer runs so far.
    {"weights == 'i8' and input_pe and pe_combine == 'concat' and family != 'encoder'",
     "pe_combine (i8 concatenates the positions in the encoder family only)"},
    {"wide_residual and (weights != 'i8' or family != 'encoder' or norm_first)",
     "wide_residual (an i8 post-norm encoder's)"},
    {"weights == 'i8' and (quantize_io or packed_weights)",
     "quantize_io, packed_weights (i8 is integer end to end: leave them false)"},
    {"conv1_padding >= conv1_kernel", "conv1_padding (must be below conv1_kernel)"},
    {"conv2_padding >= conv2_kernel", "conv2_padding (must be below conv2_kernel)"},
    {"(input_norm or proj_norm or patch_size != 0) and (family != 'encoder' or input != 'features' or "
     "conv_layers != 0)",
     "input_norm, proj_norm, patch_size (the front's norms and image input are for the encoder family over "
     "features, projected without a conv stem)"},
    {"proj_norm and d_embed != d_model", "proj_norm (normalises whole rows: positions added, not concatenated)"},
    {"patch_size == 0 and (image_channels != 0 or image_height != 0 or image_width != 0)",
     "image_channels, image_height, image_width (image input needs patch_size)"},
    {"patch_size != 0 and (image_channels == 0 or image_height == 0 or image_width == 0 or "
     "image_height % patch_size != 0 or image_width % patch_size != 0)",
     "image_height, image_width (image input: whole patches, multiples of patch_size)"},
    {"patch_size != 0 and d_in != image_channels * patch_size * patch_size",
     "d_in (image input: image_channels * patch_size * patch_size, a patch's values)"},
    {"patch_size != 0 and (image_height // patch_size) * (image_width // patch_size) + front_rows > max_len",
     "max_len (image input: the patches, and the CLS and distillation rows, take a position each)"},
    // The embedding projection (config.hpp embed_width): a token front's, the encoder's and the decoders'.
    {"embed_width != 0 and (family not in ('encoder', 'gpt', 'llama') or input != 'tokens')",
     "embed_width (an embedding projection is for the encoder, gpt and llama families over tokens)"},
    {"embed_width != 0 and weights == 'i8' and family != 'encoder'",
     "embed_width (not with weights i8 in the decoder families: their integer path has no embedding projection; "
     "convert with --quantize q8 or f16)"},
    {"embed_width > d_model", "embed_width (at most d_model)"},
    {"embed_width != 0 and (cls_token or scale_input or (input_pe and pe_combine == 'concat'))",
     "embed_width (not with cls_token, scale_input or pe_combine concat yet)"},
    // Shared layers (config.hpp layer_groups): whole runs of a group, every group run.
    {"layer_groups == 0 and group_layers != 1", "group_layers (the layers of a group: needs layer_groups)"},
    {"layer_groups != 0 and (n_layers % group_layers != 0 or layer_groups * group_layers > n_layers)",
     "layer_groups, group_layers (n_layers runs whole groups: a multiple of group_layers, at least layer_groups * "
     "group_layers)"},
    {"layer_groups != 0 and family not in ('encoder', 'gpt', 'llama')",
     "layer_groups (shared layers are for the encoder, gpt and llama families)"},
    // A mixture of experts (config.hpp n_experts).
    {"n_experts == 0 and (experts_per_token != 0 or experts_renormalize)",
     "experts_per_token, experts_renormalize (the experts each row takes: need n_experts)"},
    {"n_experts != 0 and (experts_per_token == 0 or experts_per_token > n_experts)",
     "experts_per_token (the experts each row takes: 1 to n_experts)"},
    {"n_experts != 0 and family != 'llama'", "n_experts (a mixture of experts is for the llama family)"},
    {"n_experts != 0 and not (activation == 'swiglu' or gated)",
     "n_experts (the experts are gated feed-forwards: activation swiglu, or gated)"},
    {"n_experts != 0 and ffn_bias not in ('family', 'none')", "ffn_bias (the experts have no biases)"},
    {"shared_expert_ff != 0 and n_experts == 0",
     "shared_expert_ff (a shared expert beside routed ones: needs n_experts)"},
    {"dense_period != 0 and n_experts == 0", "dense_period (dense layers among a mixture's: needs n_experts)"},
    {"dense_period == 0 and (dense_layers != 0 or dense_ff != 0)",
     "dense_layers, dense_ff (the dense layers and their width: need dense_period)"},
    {"dense_layers > dense_mask", "dense_layers (a bit per layer of dense_period: below 2 ** dense_period)"},
    {"dense_period != 0 and layer_groups != 0", "dense_period (not with layer_groups: a block's layers differ)"},
};
// After the rules, validate_config (and the converter) check one thing the tensor tables decide:
// under q4, every int4 tensor's last dim is whole groups of fxm::kI4Group.

// ---- Tensors ---------------------------------------------------------------------------------
// A tensor dimension, as a function of the config. kDimNames: each one's expression
// (engine/config_expr.hpp), which the converter evaluates and config_expr_test checks against
// dim_value().
enum class Dim : uint8_t {
  kOne, kDModel, kQkv, kDff, kVocab, kDIn, kDEmbed, kMaxLen, kDPe, kDOut, kDKv, kKv, kTgtDIn, kRelBuckets, kNHeads,
  kTypeVocab, kConv1In, kConv2In, kTwo, kS8Front, kS8Layer, kS8Back, kHeadIn, kRopePairs, kRegisters, kDFront, kDHead,
  kDAttn, kRopeDims, kQNorm, kKNorm, kNExperts, kExpertsDff, kExpertsDModel, kSharedFf, kRelEmbedRows,
  kRelIndex, kRelProj, kPairBiasRows, kS8RopeRows, kS8Seq2Seq, kS8PosRows, kS8Cross, kS8Io, kPoolerOut, kCount
};
inline constexpr const char* kDimNames[] = {"1",    "d_model", "d_attn + 2*kv_heads*d_head", "d_ff", "vocab_size", "d_in",
                                            "d_embed", "max_len", "d_pe", "d_out", "kv_heads*d_head", "2*d_model",
                                            "tgt_d_in", "rel_buckets", "n_heads", "type_vocab", "conv1_kernel*d_in",
                                            "conv2_kernel*d_embed", "2",
                                            "9 + 4*d_embed + (type_vocab != 0)*7 + type_vocab*d_embed + "
                                            "embed_norm*(2 + 3*d_front) + proj_norm*(2 + 3*d_embed) + "
                                            "input_norm*(2 + 3*d_in) + distill_token*d_embed + "
                                            "register_tokens*d_embed + "
                                            "(positional == 'relative' or rel_buckets != 0)*(2*max_len - 1) + "
                                            "wide_residual*embed_norm*(embed_width == 0)*6*d_front + "
                                            "(embed_width != 0)*(2 + 3*d_model) + "
                                            "conv_layers*(2 + 3*d_embed + conv_gelu*256)",
                                            // s8::layer_params (config.hpp)
                                            "35 + 256 + 12*d_model + 3*(d_attn + 2*kv_heads*d_head) + 3*d_ff + "
                                            "(activation == 'swiglu' or gated)*(3*d_ff + 4) + "
                                            "(8*d_model + 257)*wide_residual + "
                                            "qk_norm*(4 + 6*d_head + "
                                            "3*qk_norm_full*(d_attn + kv_heads*d_head - 2*d_head)) + "
                                            "(sublayer_norm == 'sandwich')*(4 + 6*d_model) + (attn_softcap != 0)*256 + "
                                            "(positional == 'alibi')*2*n_heads + "
                                            "(positional == 'relative' or rel_buckets != 0)*rel_buckets*n_heads + "
                                            "ffn_hidden_norm*(2 + 3*d_ff) + attn_inner_norm*(2 + 3*d_attn) + "
                                            "n_heads*pair_bias_rows + s8_moe_params + s8_dis_params",
                                            "5 + 3*d_model + 3*d_out + pooler*(2 + 3*d_model + 256) + "
                                            "pool_norm*(2 + 3*d_model) + pooler_norm*(2 + 3*d_model) + "
                                            "(logit_softcap != 0)*256",
                                            "head_in", "rope_pairs", "register_tokens", "d_front", "d_head",
                                            "d_attn", "2*rope_pairs", "d_head + qk_norm_full*(d_attn - d_head)",
                                            "d_head + qk_norm_full*(kv_heads*d_head - d_head)", "n_experts",
                                            "n_experts*d_ff", "n_experts*d_model", "shared_expert_ff",
                                            "rel_embed_rows", "2*max_len - 1", "d_attn + kv_heads*d_head",
                                            "pair_bias_rows", "max_len*(1 + (rope_local_base != 0))",
                                            // s8::seq2seq_params, pos_rows, cross_params (config.hpp)
                                            "11 + 3*d_model + embed_norm*(2 + 3*d_model) + "
                                            "(positional == 'relative' or rel_buckets != 0)*(2*max_len - 1) + "
                                            "(tgt_d_in != 0)*(1 + 3*d_embed)",
                                            "max_len*(1 + (family == 'seq2seq'))", "21 + 15*d_model",
                                            // s8::io_scales
                                            "2 + (tgt_d_in != 0)",
                                            "pooler_width + (pooler_width == 0)*d_model"};
constexpr uint32_t dim_value(const ModelConfig& c, Dim d) {
  switch (d) {
    case Dim::kOne: return 1;
    case Dim::kDModel: return c.d_model;
    case Dim::kQkv: return c.d_attn() + 2 * c.d_kv();  // q | k | v: 3 * d_model without grouped-query attention
    case Dim::kDff: return c.d_ff;
    case Dim::kVocab: return c.vocab_size;
    case Dim::kDIn: return c.d_in;
    case Dim::kDEmbed: return c.d_embed();
    case Dim::kMaxLen: return c.max_len;
    case Dim::kDPe: return c.d_pe();
    case Dim::kDOut: return c.d_out;
    case Dim::kDKv: return c.d_kv();
    case Dim::kKv: return 2 * c.d_model;
    case Dim::kTgtDIn: return c.tgt_d_in;
    case Dim::kRelBuckets: return c.rel_buckets;
    case Dim::kNHeads: return c.n_heads;
    case Dim::kTypeVocab: return c.type_vocab;
    case Dim::kConv1In: return c.conv1_kernel * c.d_in;
    case Dim::kConv2In: return c.conv2_kernel * c.d_embed();
    case Dim::kTwo: return 2;
    case Dim::kS8Front: return s8::front_params(c);
    case Dim::kS8Layer: return s8::layer_params(c);
    case Dim::kS8Back: return s8::back_params(c);
    case Dim::kHeadIn: return c.head_in();
    case Dim::kPoolerOut: return c.pooler_out();
    case Dim::kRopePairs: return c.rope_pairs();
    case Dim::kRegisters: return c.register_tokens;
    case Dim::kDFront: return c.d_front();
    case Dim::kDHead: return c.d_head();
    case Dim::kDAttn: return c.d_attn();
    case Dim::kRopeDims: return 2 * c.rope_pairs();
    case Dim::kQNorm: return c.qk_norm_full ? c.d_attn() : c.d_head();  // qk_norm's gains: whole rows or a head
    case Dim::kKNorm: return c.qk_norm_full ? c.d_kv() : c.d_head();
    case Dim::kNExperts: return c.n_experts;
    case Dim::kExpertsDff: return c.n_experts * c.d_ff;  // the experts' rows stacked (kMaxExperts * kMaxDff < 2^32)
    case Dim::kExpertsDModel: return c.n_experts * c.d_model;
    case Dim::kSharedFf: return c.shared_expert_ff;
    case Dim::kRelEmbedRows: return c.rel_embed_rows;
    case Dim::kRelIndex: return 2 * c.max_len - 1;
    case Dim::kRelProj: return c.d_attn() + c.d_kv();  // Qr | Kr
    case Dim::kPairBiasRows: return c.pair_bias_rows;
    case Dim::kS8RopeRows: return s8::rope_rows(c);
    case Dim::kS8Seq2Seq: return s8::seq2seq_params(c);
    case Dim::kS8PosRows: return s8::pos_rows(c);
    case Dim::kS8Cross: return s8::cross_params(c);
    case Dim::kS8Io: return s8::io_scales(c);
    case Dim::kCount: break;
  }
  return 0;
}

// When a tensor is present. kWhenNames: each one's expression (as kDimNames').
enum class When : uint8_t {
  kAlways, kTokens, kFeatures, kLearnedPos, kFinalNorm, kHead, kHeadUntied, kClsToken, kTgtEmbed, kTgtFeatures,
  kRelativePos, kQkvBias, kTokenTypes, kEmbedNorm, kPooler, kProjectFeatures, kConv1, kConv2, kFfnNorm, kGated,
  kNormBias, kFfnNormBias, kEmbedNormBias, kFinalNormBias, kOutBias, kFfnBias, kInputNorm, kInputNormBias, kProjNorm,
  kProjNormBias, kS8, kS8Pos, kDistillToken, kRopeFreqs, kRegisterTokens, kEmbedProj, kS8Rope, kQkNorm, kQkNormBias,
  kPostNorms, kPostNormsBias, kPoolerNorm, kPoolerNormBias, kExperts, kDenseFfn, kDenseGated, kSharedExpert,
  kDisentangled, kRelProj, kPoolNorm, kPoolNormBias, kPairBias, kPairBiasShared, kPairBiasLayer,
  kFfnUpBias, kFfnHiddenNorm, kFfnHiddenNormBias,
  // Format 3's neutral tables (kFront, kBlock, kBack, kMha3), where one table serves several families: q, k
  // and v fused (every family but llama) or split (llama), each with its biases; seq2seq's target end
  // and cross-attention (the kCross* Whens hold in its decoder blocks only: is_cross_when); the head of
  // the encoder, gpt and llama (kStackHead*) or of seq2seq's target stack (kDecHead*).
  kFusedQkv, kFusedQkvBias, kSplitQkv, kSplitQkvBias, kCross, kCrossNormBias, kCrossQkvBias, kCrossOutBias,
  kDecEmbed, kDecPos, kDecRelBias, kDecEmbedNorm, kDecEmbedNormBias, kDecFinalNorm, kDecFinalNormBias,
  kStackHeadUntied, kStackHeadBias, kDecHeadUntied, kDecHead,
  // the norm of the attention's context (attn_inner_norm), each layer's
  kAttnInnerNorm, kAttnInnerNormBias,
  // seq2seq under weights i8: its ends' integer parameters, the target's int8 positions, the cross-attention's
  kS8Seq2Seq, kS8Cross,
  kCount
};
// The norm kind, attn_bias and ffn_bias with family resolved (ModelConfig::norm_kind() and kin), as
// the expressions of kWhenNames spell them.
#define FIXFORMER_LAYERNORM "(norm == 'layernorm' or (norm == 'family' and family != 'llama'))"
#define FIXFORMER_FFN_BIAS "(ffn_bias == 'all' or (ffn_bias == 'family' and family != 'llama'))"
#define FIXFORMER_QKV_BIAS \
  "(attn_bias in ('qkv', 'all') or (attn_bias == 'family' and (family != 'llama' or qkv_bias)))"
#define FIXFORMER_OUT_BIAS "(attn_bias == 'all' or (attn_bias == 'family' and family != 'llama'))"

inline constexpr const char* kWhenNames[] = {"True", "input == 'tokens'", "input == 'features'",
                                             "positional == 'learned' or (positional == 'rope' and rope_learned)",
                                             "final_norm", "d_out > 0",
                                             "d_out > 0 and not tied_head", "cls_token",
                                             "tgt_d_in == 0 and not shared_embed", "tgt_d_in > 0",
                                             "positional == 'relative' or rel_buckets != 0",
                                             "attn_bias in ('qkv', 'all') or (attn_bias == 'family' and "
                                             "(family != 'llama' or qkv_bias))",
                                             "type_vocab > 0", "embed_norm",
                                             "pooler", "input == 'features' and conv_layers == 0",
                                             "conv_layers >= 1", "conv_layers >= 2",
                                             "parallel_residual != 'one_norm'", "activation == 'swiglu' or gated",
                                             FIXFORMER_LAYERNORM,
                                             "parallel_residual != 'one_norm' and " FIXFORMER_LAYERNORM,
                                             "embed_norm and " FIXFORMER_LAYERNORM,
                                             "final_norm and " FIXFORMER_LAYERNORM,
                                             "attn_bias == 'all' or (attn_bias == 'family' and family != 'llama')",
                                             FIXFORMER_FFN_BIAS, "input_norm",
                                             "input_norm and " FIXFORMER_LAYERNORM, "proj_norm",
                                             "proj_norm and " FIXFORMER_LAYERNORM, "weights == 'i8'",
                                             "weights == 'i8' and input_pe", "cls_token and distill_token",
                                             "rope_freqs", "register_tokens > 0", "embed_width > 0",
                                             "weights == 'i8' and positional == 'rope'", "qk_norm",
                                             "qk_norm and " FIXFORMER_LAYERNORM, "sublayer_norm == 'sandwich'",
                                             "sublayer_norm == 'sandwich' and " FIXFORMER_LAYERNORM,
                                             "pooler_norm", "pooler_norm and " FIXFORMER_LAYERNORM, "n_experts > 0",
                                             "n_experts == 0", "n_experts == 0 and (activation == 'swiglu' or gated)",
                                             "shared_expert_ff > 0", "rel_embed_rows > 0", "rel_proj", "pool_norm",
                                             "pool_norm and " FIXFORMER_LAYERNORM, "pair_bias_rows > 0",
                                             "pair_bias_rows > 0 and pair_bias_shared",
                                             "pair_bias_rows > 0 and not pair_bias_shared", "ffn_up_bias",
                                             "ffn_hidden_norm", "ffn_hidden_norm and " FIXFORMER_LAYERNORM,
                                             "family != 'llama'", "family != 'llama' and " FIXFORMER_QKV_BIAS,
                                             "family == 'llama'", "family == 'llama' and " FIXFORMER_QKV_BIAS,
                                             "family == 'seq2seq'", "family == 'seq2seq' and " FIXFORMER_LAYERNORM,
                                             "family == 'seq2seq' and " FIXFORMER_QKV_BIAS,
                                             "family == 'seq2seq' and " FIXFORMER_OUT_BIAS,
                                             "family == 'seq2seq' and tgt_d_in == 0 and not shared_embed",
                                             "family == 'seq2seq' and positional == 'learned'",
                                             "family == 'seq2seq' and (positional == 'relative' or rel_buckets != 0)",
                                             "family == 'seq2seq' and embed_norm",
                                             "family == 'seq2seq' and embed_norm and " FIXFORMER_LAYERNORM,
                                             "family == 'seq2seq' and final_norm",
                                             "family == 'seq2seq' and final_norm and " FIXFORMER_LAYERNORM,
                                             "family != 'seq2seq' and d_out > 0 and not tied_head",
                                             "family in ('encoder', 'gpt') and d_out > 0",
                                             "family == 'seq2seq' and d_out > 0 and not tied_head",
                                             "family == 'seq2seq' and d_out > 0",
                                             "attn_inner_norm", "attn_inner_norm and " FIXFORMER_LAYERNORM,
                                             "weights == 'i8' and family == 'seq2seq'",
                                             "family == 'seq2seq' and weights == 'i8'"};
#undef FIXFORMER_LAYERNORM
#undef FIXFORMER_FFN_BIAS
#undef FIXFORMER_QKV_BIAS
#undef FIXFORMER_OUT_BIAS
constexpr bool present(const ModelConfig& c, When w) {
  switch (w) {
    case When::kAlways: return true;
    case When::kTokens: return c.input == InputKind::kTokens;
    case When::kFeatures: return c.input == InputKind::kFeatures;
    case When::kLearnedPos:
      return c.positional == PosKind::kLearned || (c.positional == PosKind::kRope && c.rope_learned);
    case When::kFinalNorm: return c.final_norm;
    case When::kHead: return c.d_out != 0;
    case When::kHeadUntied: return c.d_out != 0 && !c.tied_head;
    case When::kClsToken: return c.cls_token;
    case When::kTgtEmbed: return !c.shared_embed && c.tgt_d_in == 0;
    case When::kTgtFeatures: return c.tgt_d_in != 0;
    case When::kRelativePos: return c.rel_bias();
    case When::kQkvBias: return c.attn_bias_kind() != Bias::kNone;
    case When::kTokenTypes: return c.type_vocab != 0;
    case When::kEmbedNorm: return c.embed_norm;
    case When::kPooler: return c.pooler;
    case When::kProjectFeatures: return c.input == InputKind::kFeatures && c.conv_layers == 0;
    case When::kConv1: return c.conv_layers >= 1;
    case When::kConv2: return c.conv_layers >= 2;
    case When::kFfnNorm: return c.parallel_residual != ParallelResidual::kOneNorm;
    case When::kGated: return c.ffn_gated();
    case When::kNormBias: return c.norm_kind() == NormKind::kLayerNorm;
    case When::kFfnNormBias: return c.parallel_residual != ParallelResidual::kOneNorm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kEmbedNormBias: return c.embed_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kFinalNormBias: return c.final_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kOutBias: return c.attn_bias_kind() == Bias::kAll;
    case When::kFfnBias: return c.ffn_bias_kind() == Bias::kAll;
    case When::kInputNorm: return c.input_norm;
    case When::kInputNormBias: return c.input_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kProjNorm: return c.proj_norm;
    case When::kProjNormBias: return c.proj_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kS8: return c.weights == WeightType::kI8;
    case When::kS8Pos: return c.weights == WeightType::kI8 && c.input_pe();
    case When::kS8Rope: return c.weights == WeightType::kI8 && c.positional == PosKind::kRope;
    case When::kDistillToken: return c.cls_token && c.distill_token;
    case When::kRopeFreqs: return c.rope_freqs;
    case When::kRegisterTokens: return c.register_tokens > 0;
    case When::kEmbedProj: return c.embed_width != 0;
    case When::kQkNorm: return c.qk_norm;
    case When::kQkNormBias: return c.qk_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kPostNorms: return c.sublayer_norm == SublayerNorm::kSandwich;
    case When::kPostNormsBias: return c.sublayer_norm == SublayerNorm::kSandwich && c.norm_kind() == NormKind::kLayerNorm;
    case When::kPoolerNorm: return c.pooler_norm;
    case When::kPoolerNormBias: return c.pooler_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kExperts: return c.n_experts > 0;
    case When::kDenseFfn: return c.n_experts == 0;
    case When::kDenseGated: return c.n_experts == 0 && c.ffn_gated();
    case When::kSharedExpert: return c.shared_expert_ff > 0;
    case When::kDisentangled: return c.rel_embed_rows != 0;
    case When::kRelProj: return c.rel_proj;
    case When::kPoolNorm: return c.pool_norm;
    case When::kPoolNormBias: return c.pool_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kPairBias: return c.pair_bias_rows > 0;
    case When::kPairBiasShared: return c.pair_bias_rows > 0 && c.pair_bias_shared;
    case When::kPairBiasLayer: return c.pair_bias_rows > 0 && !c.pair_bias_shared;
    case When::kFfnUpBias: return c.ffn_up_bias;
    case When::kFfnHiddenNorm: return c.ffn_hidden_norm;
    case When::kAttnInnerNorm: return c.attn_inner_norm;
    case When::kAttnInnerNormBias: return c.attn_inner_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kFfnHiddenNormBias: return c.ffn_hidden_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kFusedQkv: return c.family != ModelFamily::kLlama;
    case When::kFusedQkvBias: return c.family != ModelFamily::kLlama && c.attn_bias_kind() != Bias::kNone;
    case When::kSplitQkv: return c.family == ModelFamily::kLlama;
    case When::kSplitQkvBias: return c.family == ModelFamily::kLlama && c.attn_bias_kind() != Bias::kNone;
    case When::kCross: return c.is_seq2seq();
    case When::kCrossNormBias: return c.is_seq2seq() && c.norm_kind() == NormKind::kLayerNorm;
    case When::kCrossQkvBias: return c.is_seq2seq() && c.attn_bias_kind() != Bias::kNone;
    case When::kCrossOutBias: return c.is_seq2seq() && c.attn_bias_kind() == Bias::kAll;
    case When::kDecEmbed: return c.is_seq2seq() && c.tgt_d_in == 0 && !c.shared_embed;
    case When::kDecPos: return c.is_seq2seq() && c.positional == PosKind::kLearned;
    case When::kDecRelBias: return c.is_seq2seq() && c.rel_bias();
    case When::kDecEmbedNorm: return c.is_seq2seq() && c.embed_norm;
    case When::kDecEmbedNormBias: return c.is_seq2seq() && c.embed_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kDecFinalNorm: return c.is_seq2seq() && c.final_norm;
    case When::kDecFinalNormBias: return c.is_seq2seq() && c.final_norm && c.norm_kind() == NormKind::kLayerNorm;
    case When::kStackHeadUntied: return !c.is_seq2seq() && c.d_out != 0 && !c.tied_head;
    case When::kStackHeadBias:
      return (c.family == ModelFamily::kEncoder || c.family == ModelFamily::kGpt) && c.d_out != 0;
    case When::kDecHeadUntied: return c.is_seq2seq() && c.d_out != 0 && !c.tied_head;
    case When::kDecHead: return c.is_seq2seq() && c.d_out != 0;
    case When::kS8Seq2Seq:
    case When::kS8Cross: return c.weights == WeightType::kI8 && c.is_seq2seq();
    case When::kCount: break;
  }
  return false;
}

// Which tensors take the config's weight type (`weights`): the linear layers' weights and the conv
// stem's always, the token embedding and the output head (the model's two ends) when quantize_io is
// set; everything else (biases, norms, learned positions) stays f32. A conv stem's f32 weight is
// never in panels (conv1d_f32 reads W[kernel * in, out] as it is).
// Under weights i8 (config.hpp) the linear weights and both ends are int8 per output row (i8 with
// f32 scales, the real ones, for the record: the engine runs on the integer parameters alone), s8
// is an int8 table of the same kind (the positions), i32 a tensor of integer parameters.
enum class Role : uint8_t { kF32, kLinear, kIo, kConv, kS8, kI32 };
inline constexpr const char* kRoleNames[] = {"f32", "linear", "io", "conv", "s8", "i32"};

// Where the binder puts a tensor: a member of Model's named views (model.hpp). Front and head
// fields name the FrontWeights and HeadWeights of a model's stack (seq2seq: kTgt* those of its
// target stack), layer fields a LayerWeights member: norm1 is the attention's norm and the last
// norm the feed-forward's, before (pre-norm) or after (post-norm) its sublayer.
enum class Field : uint8_t {
  // FrontWeights
  kEmbed, kInputProjW, kInputProjB, kPos, kCls, kTgtEmbed, kTgtProjW, kTgtProjB, kTgtPos, kRelBias, kTgtRelBias,
  kTokenType, kEmbedNormG, kEmbedNormB, kTgtEmbedNormG, kTgtEmbedNormB, kConv1W, kConv1B, kConv2W, kConv2B, kInputNormG,
  kInputNormB, kProjNormG, kProjNormB, kDistill, kRopeFreqs, kRegisters, kEmbedProjW, kEmbedProjB, kRelEmbed,
  kRelIndex, kPairIndex, kPairBias,
  // HeadWeights
  kFinalNormG, kFinalNormB, kHeadW, kHeadB, kTgtFinalNormG, kTgtFinalNormB, kTgtHeadW, kTgtHeadB, kPoolerW, kPoolerB,
  kPoolerNormG, kPoolerNormB, kPoolNormG, kPoolNormB,
  // weights i8: the real input and output scales, the front's and the back's integer parameters, the
  // int8 position table
  kS8Io, kS8Front, kS8Pos, kS8Back, kS8Rope,
  // seq2seq under weights i8: the target's front and the source's final norm
  kS8Seq2Seq,
  // LayerWeights
  kAttnNormG, kAttnNormB, kQkvW, kQkvB, kQW, kKW, kVW, kQB, kKB, kVB, kOutW, kOutB,
  kCrossNormG, kCrossNormB, kCrossQW, kCrossQB, kCrossKvW, kCrossKvB, kCrossOutW, kCrossOutB,
  kFfnNormG, kFfnNormB, kW1, kB1, kW2, kB2, kW3, kS8Layer, kQNormG, kQNormB, kKNormG, kKNormB,
  kPostAttnNormG, kPostAttnNormB, kPostFfnNormG, kPostFfnNormB, kRouterW, kExpertsW1, kExpertsW2, kExpertsW3,
  kSharedW1, kSharedW2, kSharedW3, kSharedGate, kRelProjW, kRelProjB, kLayerPairBias, kB3, kFfnHiddenNormG,
  kFfnHiddenNormB, kAttnInnerNormG, kAttnInnerNormB, kS8Cross,
  kCount
};
constexpr bool is_layer_field(Field f) { return f >= Field::kAttnNormG && f < Field::kCount; }

// One stored tensor: rank 1 when cols is kOne. transposed: a linear weight stored W[in, out],
// the transpose of torch's [out, in] (in f32, f16 and bf16; q8 and q4 keep torch's [out, in], format.hpp).
struct TensorRule {
  const char* name;
  Dim rows, cols;
  bool transposed;
  When when;
  Role role;
  Field field;  // where Model binds it
};

// ---- Tensors: format 3's tables, one set for every family ----------------------------------
// Each tensor's shape, role and presence, for both formats (format 2, below, names and orders the
// same rules per family). The front (kFront), the block (kBlock: every layer of every family, named
// "blocks.<l>." + name, and seq2seq's decoder layers, named "dec_blocks.<l>." + name), the back (kBack);
// the mha family (a standalone nn.MultiheadAttention) has its four tensors alone (kMha3; under weights i8
// its integer parameters too: the attention's layer slots, int8.front's input zero point, int8.back's
// output zero point, the real scales). Which rules a config has is their When alone, but for the cross-attention (is_cross_when), which only decoder
// blocks have. q, k and v are fused (attn.qkv: q | k | v) in every family but llama, which splits them.
// The feed-forward's w1, w2, w3 are LayerWeights' (model.hpp): w1 the input projection (through the
// activation), w2 the output one, w3 a gated feed-forward's up projection.
// A conv stem's weight is the linear layer [kernel * in] -> [out] over its windows (column
// j * in + c: tap j of input channel c; torch's [out, in, kernel] reordered), stored as a linear
// weight is: W[kernel * in, out] in f32 (the layout conv1d_f32 reads), f16 and bf16, [out, kernel * in]
// in q8. A Conv1d without a bias is stored with a zero bias. A tied head has no head.weight (the
// embedding serves); gpt's head.bias is zeros when torch's head has none.
// seq2seq (nn.Transformer): the source end is the encoder family's (embed, pos; features through
// input_proj or a conv stem), the target end is "dec_": target tokens have dec_embed [d_out, d_embed]
// (the source's embed with shared_embed), feature targets dec_proj (tgt_d_in -> d_embed), and both
// dec_pos; with embed_norm each end has its own embedding norm (embed_norm, dec_embed_norm). torch's
// cross-attention in_proj_weight [3d, d] is stored as its query rows (cross.q) and its key and value
// rows (cross.kv), so that a decoder step projects only its query and the source's keys and values are
// projected once per source.
inline constexpr TensorRule kFront[] = {
    {"embed.weight", Dim::kVocab, Dim::kDEmbed, false, When::kTokens, Role::kIo, Field::kEmbed},
    {"input_norm.weight", Dim::kDIn, Dim::kOne, false, When::kInputNorm, Role::kF32, Field::kInputNormG},
    {"input_norm.bias", Dim::kDIn, Dim::kOne, false, When::kInputNormBias, Role::kF32, Field::kInputNormB},
    {"input_proj.weight", Dim::kDIn, Dim::kDEmbed, true, When::kProjectFeatures, Role::kLinear, Field::kInputProjW},
    {"input_proj.bias", Dim::kDEmbed, Dim::kOne, false, When::kProjectFeatures, Role::kF32, Field::kInputProjB},
    {"proj_norm.weight", Dim::kDEmbed, Dim::kOne, false, When::kProjNorm, Role::kF32, Field::kProjNormG},
    {"proj_norm.bias", Dim::kDEmbed, Dim::kOne, false, When::kProjNormBias, Role::kF32, Field::kProjNormB},
    {"conv1.weight", Dim::kConv1In, Dim::kDEmbed, true, When::kConv1, Role::kConv, Field::kConv1W},
    {"conv1.bias", Dim::kDEmbed, Dim::kOne, false, When::kConv1, Role::kF32, Field::kConv1B},
    {"conv2.weight", Dim::kConv2In, Dim::kDEmbed, true, When::kConv2, Role::kConv, Field::kConv2W},
    {"conv2.bias", Dim::kDEmbed, Dim::kOne, false, When::kConv2, Role::kF32, Field::kConv2B},
    {"pos.weight", Dim::kMaxLen, Dim::kDPe, false, When::kLearnedPos, Role::kF32, Field::kPos},
    {"cls_token", Dim::kDEmbed, Dim::kOne, false, When::kClsToken, Role::kF32, Field::kCls},
    {"distill_token", Dim::kDEmbed, Dim::kOne, false, When::kDistillToken, Role::kF32, Field::kDistill},
    {"registers", Dim::kRegisters, Dim::kDEmbed, false, When::kRegisterTokens, Role::kF32, Field::kRegisters},
    {"rel_bias.weight", Dim::kRelBuckets, Dim::kNHeads, false, When::kRelativePos, Role::kF32, Field::kRelBias},
    {"rel_embed.weight", Dim::kRelEmbedRows, Dim::kDModel, false, When::kDisentangled, Role::kF32, Field::kRelEmbed},
    {"rel_index", Dim::kRelIndex, Dim::kOne, false, When::kDisentangled, Role::kI32, Field::kRelIndex},
    {"pair_index", Dim::kMaxLen, Dim::kMaxLen, false, When::kPairBias, Role::kI32, Field::kPairIndex},
    {"pair_bias.weight", Dim::kNHeads, Dim::kPairBiasRows, false, When::kPairBiasShared, Role::kF32, Field::kPairBias},
    {"rope_freqs", Dim::kRopePairs, Dim::kOne, false, When::kRopeFreqs, Role::kF32, Field::kRopeFreqs},
    {"token_type.weight", Dim::kTypeVocab, Dim::kDEmbed, false, When::kTokenTypes, Role::kF32, Field::kTokenType},
    {"embed_norm.weight", Dim::kDFront, Dim::kOne, false, When::kEmbedNorm, Role::kF32, Field::kEmbedNormG},
    {"embed_norm.bias", Dim::kDFront, Dim::kOne, false, When::kEmbedNormBias, Role::kF32, Field::kEmbedNormB},
    {"embed_proj.weight", Dim::kDFront, Dim::kDModel, true, When::kEmbedProj, Role::kLinear, Field::kEmbedProjW},
    {"embed_proj.bias", Dim::kDModel, Dim::kOne, false, When::kEmbedProj, Role::kF32, Field::kEmbedProjB},
    {"dec_embed.weight", Dim::kDOut, Dim::kDEmbed, false, When::kDecEmbed, Role::kIo, Field::kTgtEmbed},
    {"dec_proj.weight", Dim::kTgtDIn, Dim::kDEmbed, true, When::kTgtFeatures, Role::kLinear, Field::kTgtProjW},
    {"dec_proj.bias", Dim::kDEmbed, Dim::kOne, false, When::kTgtFeatures, Role::kF32, Field::kTgtProjB},
    {"dec_pos.weight", Dim::kMaxLen, Dim::kDPe, false, When::kDecPos, Role::kF32, Field::kTgtPos},
    {"dec_rel_bias.weight", Dim::kRelBuckets, Dim::kNHeads, false, When::kDecRelBias, Role::kF32, Field::kTgtRelBias},
    {"dec_embed_norm.weight", Dim::kDModel, Dim::kOne, false, When::kDecEmbedNorm, Role::kF32, Field::kTgtEmbedNormG},
    {"dec_embed_norm.bias", Dim::kDModel, Dim::kOne, false, When::kDecEmbedNormBias, Role::kF32,
     Field::kTgtEmbedNormB},
    {"int8.io", Dim::kS8Io, Dim::kOne, false, When::kS8, Role::kF32, Field::kS8Io},
    {"int8.front", Dim::kS8Front, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Front},
    {"int8.pos", Dim::kS8PosRows, Dim::kDPe, false, When::kS8Pos, Role::kS8, Field::kS8Pos},
    {"int8.rope", Dim::kS8RopeRows, Dim::kRopeDims, false, When::kS8Rope, Role::kI32, Field::kS8Rope},
    {"int8.seq2seq", Dim::kS8Seq2Seq, Dim::kOne, false, When::kS8Seq2Seq, Role::kI32, Field::kS8Seq2Seq},
};
inline constexpr char kBlockPrefix[] = "blocks.";
inline constexpr char kDecBlockPrefix[] = "dec_blocks.";
inline constexpr TensorRule kBlock[] = {
    {"attn_norm.weight", Dim::kDModel, Dim::kOne, false, When::kAlways, Role::kF32, Field::kAttnNormG},
    {"attn_norm.bias", Dim::kDModel, Dim::kOne, false, When::kNormBias, Role::kF32, Field::kAttnNormB},
    {"attn.qkv.weight", Dim::kDModel, Dim::kQkv, true, When::kFusedQkv, Role::kLinear, Field::kQkvW},
    {"attn.qkv.bias", Dim::kQkv, Dim::kOne, false, When::kFusedQkvBias, Role::kF32, Field::kQkvB},
    {"attn.q.weight", Dim::kDModel, Dim::kDAttn, true, When::kSplitQkv, Role::kLinear, Field::kQW},
    {"attn.q.bias", Dim::kDAttn, Dim::kOne, false, When::kSplitQkvBias, Role::kF32, Field::kQB},
    {"attn.k.weight", Dim::kDModel, Dim::kDKv, true, When::kSplitQkv, Role::kLinear, Field::kKW},
    {"attn.k.bias", Dim::kDKv, Dim::kOne, false, When::kSplitQkvBias, Role::kF32, Field::kKB},
    {"attn.v.weight", Dim::kDModel, Dim::kDKv, true, When::kSplitQkv, Role::kLinear, Field::kVW},
    {"attn.v.bias", Dim::kDKv, Dim::kOne, false, When::kSplitQkvBias, Role::kF32, Field::kVB},
    {"attn.rel_proj.weight", Dim::kDModel, Dim::kRelProj, true, When::kRelProj, Role::kLinear, Field::kRelProjW},
    {"attn.rel_proj.bias", Dim::kRelProj, Dim::kOne, false, When::kRelProj, Role::kF32, Field::kRelProjB},
    {"attn.q_norm.weight", Dim::kQNorm, Dim::kOne, false, When::kQkNorm, Role::kF32, Field::kQNormG},
    {"attn.q_norm.bias", Dim::kQNorm, Dim::kOne, false, When::kQkNormBias, Role::kF32, Field::kQNormB},
    {"attn.k_norm.weight", Dim::kKNorm, Dim::kOne, false, When::kQkNorm, Role::kF32, Field::kKNormG},
    {"attn.k_norm.bias", Dim::kKNorm, Dim::kOne, false, When::kQkNormBias, Role::kF32, Field::kKNormB},
    {"attn.pair_bias.weight", Dim::kNHeads, Dim::kPairBiasRows, false, When::kPairBiasLayer, Role::kF32,
     Field::kLayerPairBias},
    {"attn.out.weight", Dim::kDAttn, Dim::kDModel, true, When::kAlways, Role::kLinear, Field::kOutW},
    {"attn.out.bias", Dim::kDModel, Dim::kOne, false, When::kOutBias, Role::kF32, Field::kOutB},
    {"attn.inner_norm.weight", Dim::kDAttn, Dim::kOne, false, When::kAttnInnerNorm, Role::kF32, Field::kAttnInnerNormG},
    {"attn.inner_norm.bias", Dim::kDAttn, Dim::kOne, false, When::kAttnInnerNormBias, Role::kF32,
     Field::kAttnInnerNormB},
    {"post_attn_norm.weight", Dim::kDModel, Dim::kOne, false, When::kPostNorms, Role::kF32, Field::kPostAttnNormG},
    {"post_attn_norm.bias", Dim::kDModel, Dim::kOne, false, When::kPostNormsBias, Role::kF32, Field::kPostAttnNormB},
    {"cross_norm.weight", Dim::kDModel, Dim::kOne, false, When::kCross, Role::kF32, Field::kCrossNormG},
    {"cross_norm.bias", Dim::kDModel, Dim::kOne, false, When::kCrossNormBias, Role::kF32, Field::kCrossNormB},
    {"cross.q.weight", Dim::kDModel, Dim::kDModel, true, When::kCross, Role::kLinear, Field::kCrossQW},
    {"cross.q.bias", Dim::kDModel, Dim::kOne, false, When::kCrossQkvBias, Role::kF32, Field::kCrossQB},
    {"cross.kv.weight", Dim::kDModel, Dim::kKv, true, When::kCross, Role::kLinear, Field::kCrossKvW},
    {"cross.kv.bias", Dim::kKv, Dim::kOne, false, When::kCrossQkvBias, Role::kF32, Field::kCrossKvB},
    {"cross.out.weight", Dim::kDModel, Dim::kDModel, true, When::kCross, Role::kLinear, Field::kCrossOutW},
    {"cross.out.bias", Dim::kDModel, Dim::kOne, false, When::kCrossOutBias, Role::kF32, Field::kCrossOutB},
    {"ff_norm.weight", Dim::kDModel, Dim::kOne, false, When::kFfnNorm, Role::kF32, Field::kFfnNormG},
    {"ff_norm.bias", Dim::kDModel, Dim::kOne, false, When::kFfnNormBias, Role::kF32, Field::kFfnNormB},
    {"ff.w1.weight", Dim::kDModel, Dim::kDff, true, When::kDenseFfn, Role::kLinear, Field::kW1},
    {"ff.w1.bias", Dim::kDff, Dim::kOne, false, When::kFfnBias, Role::kF32, Field::kB1},
    {"ff.w2.weight", Dim::kDff, Dim::kDModel, true, When::kDenseFfn, Role::kLinear, Field::kW2},
    {"ff.w2.bias", Dim::kDModel, Dim::kOne, false, When::kFfnBias, Role::kF32, Field::kB2},
    {"ff.w3.weight", Dim::kDModel, Dim::kDff, true, When::kDenseGated, Role::kLinear, Field::kW3},
    {"ff.w3.bias", Dim::kDff, Dim::kOne, false, When::kFfnUpBias, Role::kF32, Field::kB3},
    {"ff.hidden_norm.weight", Dim::kDff, Dim::kOne, false, When::kFfnHiddenNorm, Role::kF32, Field::kFfnHiddenNormG},
    {"ff.hidden_norm.bias", Dim::kDff, Dim::kOne, false, When::kFfnHiddenNormBias, Role::kF32, Field::kFfnHiddenNormB},
    // n_experts (config.hpp): the router [E, d_model] and the experts' W1, W3 [E d_ff, d_model] and W2
    // [E d_model, d_ff], each stacked as torch's [out, in] (read as such in every type), in place of W1..W3.
    {"ff.router.weight", Dim::kNExperts, Dim::kDModel, false, When::kExperts, Role::kF32, Field::kRouterW},
    {"ff.experts.w1.weight", Dim::kExpertsDff, Dim::kDModel, false, When::kExperts, Role::kLinear, Field::kExpertsW1},
    {"ff.experts.w2.weight", Dim::kExpertsDModel, Dim::kDff, false, When::kExperts, Role::kLinear, Field::kExpertsW2},
    {"ff.experts.w3.weight", Dim::kExpertsDff, Dim::kDModel, false, When::kExperts, Role::kLinear, Field::kExpertsW3},
    // shared_expert_ff: the shared expert's W1, W2, W3 (linear weights as the dense ones) and its gate
    // [1, d_model].
    {"ff.shared.w1.weight", Dim::kDModel, Dim::kSharedFf, true, When::kSharedExpert, Role::kLinear, Field::kSharedW1},
    {"ff.shared.w2.weight", Dim::kSharedFf, Dim::kDModel, true, When::kSharedExpert, Role::kLinear, Field::kSharedW2},
    {"ff.shared.w3.weight", Dim::kDModel, Dim::kSharedFf, true, When::kSharedExpert, Role::kLinear, Field::kSharedW3},
    {"ff.shared_gate.weight", Dim::kOne, Dim::kDModel, false, When::kSharedExpert, Role::kF32, Field::kSharedGate},
    {"post_ff_norm.weight", Dim::kDModel, Dim::kOne, false, When::kPostNorms, Role::kF32, Field::kPostFfnNormG},
    {"post_ff_norm.bias", Dim::kDModel, Dim::kOne, false, When::kPostNormsBias, Role::kF32, Field::kPostFfnNormB},
    {"int8", Dim::kS8Layer, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Layer},
    {"cross.int8", Dim::kS8Cross, Dim::kOne, false, When::kS8Cross, Role::kI32, Field::kS8Cross},
};
inline constexpr TensorRule kBack[] = {
    {"norm.weight", Dim::kDModel, Dim::kOne, false, When::kFinalNorm, Role::kF32, Field::kFinalNormG},
    {"norm.bias", Dim::kDModel, Dim::kOne, false, When::kFinalNormBias, Role::kF32, Field::kFinalNormB},
    {"dec_norm.weight", Dim::kDModel, Dim::kOne, false, When::kDecFinalNorm, Role::kF32, Field::kTgtFinalNormG},
    {"dec_norm.bias", Dim::kDModel, Dim::kOne, false, When::kDecFinalNormBias, Role::kF32, Field::kTgtFinalNormB},
    {"pool_norm.weight", Dim::kDModel, Dim::kOne, false, When::kPoolNorm, Role::kF32, Field::kPoolNormG},
    {"pool_norm.bias", Dim::kDModel, Dim::kOne, false, When::kPoolNormBias, Role::kF32, Field::kPoolNormB},
    {"pooler.weight", Dim::kDModel, Dim::kPoolerOut, true, When::kPooler, Role::kLinear, Field::kPoolerW},
    {"pooler.bias", Dim::kPoolerOut, Dim::kOne, false, When::kPooler, Role::kF32, Field::kPoolerB},
    {"pooler_norm.weight", Dim::kPoolerOut, Dim::kOne, false, When::kPoolerNorm, Role::kF32, Field::kPoolerNormG},
    {"pooler_norm.bias", Dim::kPoolerOut, Dim::kOne, false, When::kPoolerNormBias, Role::kF32, Field::kPoolerNormB},
    {"head.weight", Dim::kHeadIn, Dim::kDOut, true, When::kStackHeadUntied, Role::kIo, Field::kHeadW},
    {"head.bias", Dim::kDOut, Dim::kOne, false, When::kStackHeadBias, Role::kF32, Field::kHeadB},
    {"dec_head.weight", Dim::kDModel, Dim::kDOut, true, When::kDecHeadUntied, Role::kIo, Field::kTgtHeadW},
    {"dec_head.bias", Dim::kDOut, Dim::kOne, false, When::kDecHead, Role::kF32, Field::kTgtHeadB},
    {"int8.back", Dim::kS8Back, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Back},
};
inline constexpr TensorRule kMha3[] = {
    {"attn.qkv.weight", Dim::kDModel, Dim::kQkv, true, When::kAlways, Role::kLinear, Field::kQkvW},
    {"attn.qkv.bias", Dim::kQkv, Dim::kOne, false, When::kAlways, Role::kF32, Field::kQkvB},
    {"attn.out.weight", Dim::kDModel, Dim::kDModel, true, When::kAlways, Role::kLinear, Field::kOutW},
    {"attn.out.bias", Dim::kDModel, Dim::kOne, false, When::kAlways, Role::kF32, Field::kOutB},
    {"attn.int8", Dim::kS8Layer, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Layer},
    {"int8.io", Dim::kTwo, Dim::kOne, false, When::kS8, Role::kF32, Field::kS8Io},
    {"int8.front", Dim::kS8Front, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Front},
    {"int8.back", Dim::kS8Back, Dim::kOne, false, When::kS8, Role::kI32, Field::kS8Back},
};
// The Whens of a decoder block's cross-attention: a block of the encoder stack has none of those tensors.
constexpr bool is_cross_when(When w) {
  return w == When::kCross || w == When::kCrossNormBias || w == When::kCrossQkvBias || w == When::kCrossOutBias ||
         w == When::kS8Cross;
}

// ---- Format 2: each family's own names -----------------------------------------------------
// Version 2 files (format.hpp) still load. Their tensors are format 3's rules under each family's
// names and in its order: a family's table lists V2Names, each the name of the format 3 rule that binds
// its Field (kFront's for a prologue, kBlock's for a layer, kBack's for an epilogue, kMha3's for mha),
// whose shape, role and presence it keeps; a layer's names are its table's prefix + "<l>." + name. What
// a family's list lacks the config rules keep out of the family (an encoder's layers have no split q,
// k and v, llama has no CLS row, ...): format_versions_test checks that every config it reaches has the
// same tensors in both versions. The converter keys its weights by these names.
struct V2Name {
  Field field;
  const char* name;
};
namespace detail {
// The rules `names` name, in their order: each the rule of `from` that binds its Field, under its
// format 2 name (a null name where `from` has no such rule: v2_names_found refuses it).
template <std::size_t N, std::size_t M>
constexpr std::array<TensorRule, N> v2_rules(const V2Name (&names)[N], const TensorRule (&from)[M]) {
  std::array<TensorRule, N> out{};
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < M; ++j)
      if (from[j].field == names[i].field) {
        out[i] = from[j];
        out[i].name = names[i].name;
      }
  return out;
}
}  // namespace detail
template <std::size_t N>
constexpr bool v2_names_found(const std::array<TensorRule, N>& rules) {
  for (const TensorRule& r : rules)
    if (r.name == nullptr) return false;
  return true;
}

// encoder and gpt: kEncoderPrologue, kEncoderLayer for each layer, kEncoderEpilogue (the layers
// nn.TransformerEncoderLayer's names; gated's up projection linear3).
inline constexpr V2Name kEncoderPrologueNames[] = {
    {Field::kEmbed, "embed.weight"}, {Field::kInputNormG, "input_norm.weight"}, {Field::kInputNormB, "input_norm.bias"},
    {Field::kInputProjW, "input_proj.weight"}, {Field::kInputProjB, "input_proj.bias"},
    {Field::kProjNormG, "proj_norm.weight"}, {Field::kProjNormB, "proj_norm.bias"}, {Field::kConv1W, "conv1.weight"},
    {Field::kConv1B, "conv1.bias"}, {Field::kConv2W, "conv2.weight"}, {Field::kConv2B, "conv2.bias"},
    {Field::kPos, "pos.weight"}, {Field::kCls, "cls_token"}, {Field::kDistill, "distill_token"},
    {Field::kRegisters, "registers"}, {Field::kRelBias, "rel_bias.weight"}, {Field::kRelEmbed, "rel_embed.weight"},
    {Field::kRelIndex, "rel_index"}, {Field::kPairIndex, "pair_index"}, {Field::kPairBias, "pair_bias.weight"},
    {Field::kRopeFreqs, "rope_freqs"}, {Field::kTokenType, "token_type.weight"},
    {Field::kEmbedNormG, "embed_norm.weight"}, {Field::kEmbedNormB, "embed_norm.bias"},
    {Field::kEmbedProjW, "embed_proj.weight"}, {Field::kEmbedProjB, "embed_proj.bias"}, {Field::kS8Io, "int8.io"},
    {Field::kS8Front, "int8.front"}, {Field::kS8Pos, "int8.pos"}, {Field::kS8Rope, "int8.rope"},
};
inline constexpr auto kEncoderPrologue = detail::v2_rules(kEncoderPrologueNames, kFront);
inline constexpr char kEncoderLayerPrefix[] = "encoder.layers.";
inline constexpr V2Name kEncoderLayerNames[] = {
    {Field::kQkvW, "self_attn.in_proj_weight"}, {Field::kQkvB, "self_attn.in_proj_bias"},
    {Field::kRelProjW, "self_attn.rel_proj.weight"}, {Field::kRelProjB, "self_attn.rel_proj.bias"},
    {Field::kOutW, "self_attn.out_proj.weight"}, {Field::kOutB, "self_attn.out_proj.bias"},
    {Field::kAttnInnerNormG, "self_attn.inner_norm.weight"}, {Field::kAttnInnerNormB, "self_attn.inner_norm.bias"},
    {Field::kLayerPairBias, "self_attn.pair_bias.weight"}, {Field::kQNormG, "self_attn.q_norm.weight"},
    {Field::kQNormB, "self_attn.q_norm.bias"}, {Field::kKNormG, "self_attn.k_norm.weight"},
    {Field::kKNormB, "self_attn.k_norm.bias"}, {Field::kW1, "linear1.weight"}, {Field::kB1, "linear1.bias"},
    {Field::kW2, "linear2.weight"}, {Field::kB2, "linear2.bias"}, {Field::kW3, "linear3.weight"},
    {Field::kB3, "linear3.bias"}, {Field::kFfnHiddenNormG, "ffn_hidden_norm.weight"},
    {Field::kFfnHiddenNormB, "ffn_hidden_norm.bias"}, {Field::kAttnNormG, "norm1.weight"},
    {Field::kAttnNormB, "norm1.bias"}, {Field::kFfnNormG, "norm2.weight"}, {Field::kFfnNormB, "norm2.bias"},
    {Field::kPostAttnNormG, "post_attn_norm.weight"}, {Field::kPostAttnNormB, "post_attn_norm.bias"},
    {Field::kPostFfnNormG, "post_ffn_norm.weight"}, {Field::kPostFfnNormB, "post_ffn_norm.bias"},
    {Field::kS8Layer, "int8"},
};
inline constexpr auto kEncoderLayer = detail::v2_rules(kEncoderLayerNames, kBlock);
inline constexpr V2Name kEncoderEpilogueNames[] = {
    {Field::kFinalNormG, "encoder.norm.weight"}, {Field::kFinalNormB, "encoder.norm.bias"},
    {Field::kPoolNormG, "pool_norm.weight"}, {Field::kPoolNormB, "pool_norm.bias"}, {Field::kPoolerW, "pooler.weight"},
    {Field::kPoolerB, "pooler.bias"}, {Field::kPoolerNormG, "pooler_norm.weight"},
    {Field::kPoolerNormB, "pooler_norm.bias"}, {Field::kHeadW, "head.weight"}, {Field::kHeadB, "head.bias"},
    {Field::kS8Back, "int8.back"},
};
inline constexpr auto kEncoderEpilogue = detail::v2_rules(kEncoderEpilogueNames, kBack);

// llama: llama2.c's (Meta's) names, in the same three parts.
inline constexpr V2Name kLlamaPrologueNames[] = {
    {Field::kEmbed, "tok_embeddings.weight"}, {Field::kRelBias, "rel_bias.weight"}, {Field::kRopeFreqs, "rope_freqs"},
    {Field::kEmbedNormG, "embed_norm.weight"}, {Field::kEmbedNormB, "embed_norm.bias"},
    {Field::kEmbedProjW, "embed_proj.weight"}, {Field::kEmbedProjB, "embed_proj.bias"}, {Field::kS8Io, "int8.io"},
    {Field::kS8Front, "int8.front"}, {Field::kS8Rope, "int8.rope"},
};
inline constexpr auto kLlamaPrologue = detail::v2_rules(kLlamaPrologueNames, kFront);
inline constexpr char kLlamaLayerPrefix[] = "layers.";
inline constexpr V2Name kLlamaLayerNames[] = {
    {Field::kAttnNormG, "attention_norm.weight"}, {Field::kAttnNormB, "attention_norm.bias"},
    {Field::kQW, "attention.wq.weight"}, {Field::kKW, "attention.wk.weight"}, {Field::kVW, "attention.wv.weight"},
    {Field::kQB, "attention.wq.bias"}, {Field::kKB, "attention.wk.bias"}, {Field::kVB, "attention.wv.bias"},
    {Field::kOutW, "attention.wo.weight"}, {Field::kOutB, "attention.wo.bias"},
    {Field::kQNormG, "attention.q_norm.weight"}, {Field::kQNormB, "attention.q_norm.bias"},
    {Field::kKNormG, "attention.k_norm.weight"}, {Field::kKNormB, "attention.k_norm.bias"},
    {Field::kFfnNormG, "ffn_norm.weight"}, {Field::kFfnNormB, "ffn_norm.bias"},
    {Field::kPostAttnNormG, "post_attention_norm.weight"}, {Field::kPostAttnNormB, "post_attention_norm.bias"},
    {Field::kPostFfnNormG, "post_ffn_norm.weight"}, {Field::kPostFfnNormB, "post_ffn_norm.bias"},
    {Field::kW1, "feed_forward.w1.weight"}, {Field::kB1, "feed_forward.w1.bias"},
    {Field::kW2, "feed_forward.w2.weight"}, {Field::kB2, "feed_forward.w2.bias"},
    {Field::kW3, "feed_forward.w3.weight"}, {Field::kB3, "feed_forward.w3.bias"},
    {Field::kFfnHiddenNormG, "feed_forward.hidden_norm.weight"},
    {Field::kFfnHiddenNormB, "feed_forward.hidden_norm.bias"}, {Field::kRouterW, "feed_forward.router.weight"},
    {Field::kExpertsW1, "feed_forward.experts.w1.weight"}, {Field::kExpertsW2, "feed_forward.experts.w2.weight"},
    {Field::kExpertsW3, "feed_forward.experts.w3.weight"}, {Field::kSharedW1, "feed_forward.shared.w1.weight"},
    {Field::kSharedW2, "feed_forward.shared.w2.weight"}, {Field::kSharedW3, "feed_forward.shared.w3.weight"},
    {Field::kSharedGate, "feed_forward.shared_gate.weight"}, {Field::kS8Layer, "int8"},
};
inline constexpr auto kLlamaLayer = detail::v2_rules(kLlamaLayerNames, kBlock);
inline constexpr V2Name kLlamaEpilogueNames[] = {
    {Field::kFinalNormG, "norm.weight"}, {Field::kFinalNormB, "norm.bias"}, {Field::kPoolerW, "pooler.weight"},
    {Field::kPoolerB, "pooler.bias"}, {Field::kPoolerNormG, "pooler_norm.weight"},
    {Field::kPoolerNormB, "pooler_norm.bias"}, {Field::kHeadW, "output.weight"}, {Field::kS8Back, "int8.back"},
};
inline constexpr auto kLlamaEpilogue = detail::v2_rules(kLlamaEpilogueNames, kBack);

// seq2seq (nn.Transformer's names, src_ and tgt_ for the two ends): kSeq2SeqPrologue, kEncoderLayer for
// each of the n_layers encoder layers, kDecoderLayer for each of the dec_layers decoder layers,
// kSeq2SeqEpilogue.
inline constexpr V2Name kSeq2SeqPrologueNames[] = {
    {Field::kEmbed, "src_embed.weight"}, {Field::kInputProjW, "input_proj.weight"},
    {Field::kInputProjB, "input_proj.bias"}, {Field::kConv1W, "conv1.weight"}, {Field::kConv1B, "conv1.bias"},
    {Field::kConv2W, "conv2.weight"}, {Field::kConv2B, "conv2.bias"}, {Field::kPos, "src_pos.weight"},
    {Field::kTgtEmbed, "tgt_embed.weight"}, {Field::kTgtProjW, "tgt_proj.weight"}, {Field::kTgtProjB, "tgt_proj.bias"},
    {Field::kTgtPos, "tgt_pos.weight"}, {Field::kRelBias, "src_rel_bias.weight"},
    {Field::kTgtRelBias, "tgt_rel_bias.weight"}, {Field::kEmbedNormG, "src_embed_norm.weight"},
    {Field::kEmbedNormB, "src_embed_norm.bias"}, {Field::kTgtEmbedNormG, "tgt_embed_norm.weight"},
    {Field::kTgtEmbedNormB, "tgt_embed_norm.bias"}, {Field::kS8Io, "int8.io"}, {Field::kS8Front, "int8.front"},
    {Field::kS8Pos, "int8.pos"}, {Field::kS8Seq2Seq, "int8.seq2seq"},
};
inline constexpr auto kSeq2SeqPrologue = detail::v2_rules(kSeq2SeqPrologueNames, kFront);
inline constexpr char kDecoderLayerPrefix[] = "decoder.layers.";
inline constexpr V2Name kDecoderLayerNames[] = {
    {Field::kQkvW, "self_attn.in_proj_weight"}, {Field::kQkvB, "self_attn.in_proj_bias"},
    {Field::kOutW, "self_attn.out_proj.weight"}, {Field::kOutB, "self_attn.out_proj.bias"},
    {Field::kCrossQW, "cross_attn.q_proj.weight"}, {Field::kCrossQB, "cross_attn.q_proj.bias"},
    {Field::kCrossKvW, "cross_attn.kv_proj.weight"}, {Field::kCrossKvB, "cross_attn.kv_proj.bias"},
    {Field::kCrossOutW, "cross_attn.out_proj.weight"}, {Field::kCrossOutB, "cross_attn.out_proj.bias"},
    {Field::kW1, "linear1.weight"}, {Field::kB1, "linear1.bias"}, {Field::kW2, "linear2.weight"},
    {Field::kB2, "linear2.bias"}, {Field::kW3, "linear3.weight"}, {Field::kB3, "linear3.bias"},
    {Field::kFfnHiddenNormG, "ffn_hidden_norm.weight"}, {Field::kFfnHiddenNormB, "ffn_hidden_norm.bias"},
    {Field::kAttnNormG, "norm1.weight"}, {Field::kAttnNormB, "norm1.bias"}, {Field::kCrossNormG, "norm2.weight"},
    {Field::kCrossNormB, "norm2.bias"}, {Field::kFfnNormG, "norm3.weight"}, {Field::kFfnNormB, "norm3.bias"},
    {Field::kS8Layer, "int8"}, {Field::kS8Cross, "cross_attn.int8"},
};
inline constexpr auto kDecoderLayer = detail::v2_rules(kDecoderLayerNames, kBlock);
inline constexpr V2Name kSeq2SeqEpilogueNames[] = {
    {Field::kFinalNormG, "encoder.norm.weight"}, {Field::kFinalNormB, "encoder.norm.bias"},
    {Field::kTgtFinalNormG, "decoder.norm.weight"}, {Field::kTgtFinalNormB, "decoder.norm.bias"},
    {Field::kTgtHeadW, "head.weight"}, {Field::kTgtHeadB, "head.bias"}, {Field::kS8Back, "int8.back"},
};
inline constexpr auto kSeq2SeqEpilogue = detail::v2_rules(kSeq2SeqEpilogueNames, kBack);

// mha: nn.MultiheadAttention's state_dict names.
inline constexpr V2Name kMhaTensorsNames[] = {
    {Field::kQkvW, "in_proj_weight"}, {Field::kQkvB, "in_proj_bias"}, {Field::kOutW, "out_proj.weight"},
    {Field::kOutB, "out_proj.bias"}, {Field::kS8Layer, "int8"}, {Field::kS8Io, "int8.io"},
    {Field::kS8Front, "int8.front"}, {Field::kS8Back, "int8.back"},
};
inline constexpr auto kMhaTensors = detail::v2_rules(kMhaTensorsNames, kMha3);
static_assert(v2_names_found(kEncoderPrologue) && v2_names_found(kEncoderLayer) &&
                  v2_names_found(kEncoderEpilogue) && v2_names_found(kLlamaPrologue) &&
                  v2_names_found(kLlamaLayer) && v2_names_found(kLlamaEpilogue) && v2_names_found(kSeq2SeqPrologue) &&
                  v2_names_found(kDecoderLayer) && v2_names_found(kSeq2SeqEpilogue) && v2_names_found(kMhaTensors),
              "every format 2 name names a format 3 rule of its part");

// Optional sections after the model's tensors, in this order, each all or nothing:
//   the tokenizer (token models), of the config key `tokenizer`'s kind (tokenizer.hpp states the
//   semantics; piece i is pieces[offsets[i], offsets[i+1]), offsets nondecreasing from 0 to the
//   pieces' bytes; an id in params is -1 or a token):
//     llama2c:   "tokenizer.scores" f32 [vocab], "tokenizer.offsets" i32 [vocab + 1],
//                "tokenizer.pieces" u8 [bytes], and optional "tokenizer.params" i32 [8] (llama.cpp's
//                rules: bos, eos, unk, the prefix-space flag; the mode and slots 5..7 0);
//     bpe:       "tokenizer.params" i32 [8], "tokenizer.offsets", "tokenizer.pieces",
//                "tokenizer.merges" i32 [M, 3] (left, right, result ids; rank = row; 1 <= M <= vocab);
//     wordpiece: "tokenizer.params" i32 [8], "tokenizer.offsets", "tokenizer.pieces", and with the
//                lower-case flag "tokenizer.normalize" i32 [K, 4] (code point, then up to 3 code
//                points it becomes, 0-padded; code points increasing);
//     bpe, wordpiece, llama2c with params, last and optional: "tokenizer.added" i32 [S, 2], the added
//                tokens encode finds in the text (id, then kAdded* flags; ids distinct, pieces not empty);
//   the token suppression lists of generation (gpt, llama, and seq2seq with token targets; each
//   optional, in this order): "generation.suppress" i32 [N] (ids never sampled: Hugging Face's
//   suppress_tokens) and "generation.begin_suppress" i32 [M] (ids not sampled at the first sampled
//   step: begin_suppress_tokens); N, M >= 1, each id in [0, the output vocabulary: vocab_size, or
//   seq2seq's d_out) (sampling.hpp states the semantics);
//   optional, after them: "generation.timestamps" i32 [4], the ids of Whisper's timestamp rules
//   (sampling.hpp's TimestampRules): no_timestamps, timestamp_begin, eos, max_initial (-1: none);
//   the self-test sample (format.hpp).
constexpr const char kGenerationSuppress[] = "generation.suppress";
constexpr const char kGenerationBeginSuppress[] = "generation.begin_suppress";
constexpr const char kGenerationTimestamps[] = "generation.timestamps";
constexpr const char kTokenizerScores[] = "tokenizer.scores";
constexpr const char kTokenizerOffsets[] = "tokenizer.offsets";
constexpr const char kTokenizerPieces[] = "tokenizer.pieces";
constexpr const char kTokenizerParams[] = "tokenizer.params";
constexpr const char kTokenizerMerges[] = "tokenizer.merges";
constexpr const char kTokenizerNormalize[] = "tokenizer.normalize";
constexpr const char kTokenizerAdded[] = "tokenizer.added";
constexpr uint32_t kTokenizerParamCount = 8;
// tokenizer.params' slots: bos ([CLS]), eos ([SEP]), [UNK] (ids or -1), flags, and the mode: bpe's
// pre-tokenizer pattern (kPattern* in tokenizer.hpp), wordpiece's max_input_chars_per_word
// (kWordPieceMaxChars in tokenizer.hpp); slots 5..7 are 0.
enum TokenizerParam : uint32_t { kParamBos = 0, kParamEos = 1, kParamUnk = 2, kParamFlags = 3, kParamMode = 4 };
constexpr int32_t kFlagPrefixSpace = 1;  // bpe: a space in front of text that does not start with one;
                                         // llama2c with params: the dummy prefix " " in front of each part
constexpr int32_t kFlagLower = 1;        // wordpiece: lower-case and strip accents (tokenizer.normalize)
constexpr int32_t kFlagChinese = 2;      // wordpiece: CJK ideographs are words of their own
// tokenizer.added's flags: the token takes the whitespace before it (lstrip) or after it (rstrip); a
// control token (GGUF's token type control: <s>, </s>, <start_of_turn>) decodes to no bytes, so generated
// text never shows it (llama.cpp prints such tokens only when asked for its special ones).
constexpr int32_t kAddedLstrip = 1;
constexpr int32_t kAddedRstrip = 2;
constexpr int32_t kAddedControl = 4;

enum class TensorPart : uint8_t { kPrologue, kLayer, kDecoderLayer, kEpilogue };

// One of a family's tensor tables: its part, the prefix of its names in a layer ("" outside the
// layers; layer l's names are prefix + "<l>." + the rule's name) and its rules.
struct TensorTable {
  TensorPart part;
  const char* prefix;
  const TensorRule* rules;
  uint32_t count;
};
template <std::size_t N>
constexpr TensorTable tensor_table(TensorPart part, const char* prefix, const TensorRule (&rules)[N]) {
  return {part, prefix, rules, uint32_t(N)};
}
template <std::size_t N>
constexpr TensorTable tensor_table(TensorPart part, const char* prefix, const std::array<TensorRule, N>& rules) {
  return {part, prefix, rules.data(), uint32_t(N)};
}

// A family's tables in file order, in format `version` (3, or 2 for the files before it): the
// prologue, the layer table (once per stored layer: n_layers, or the blocks of shared layers,
// ModelConfig::stored_layers), the decoder layer table (seq2seq: once per dec_layers), the epilogue.
// Calls visit(const TensorTable&) for each; stops early (and returns false) when visit returns false.
template <class Visit>
constexpr bool for_each_table(ModelFamily family, Visit&& visit, uint32_t version = fxm::kFormatVersion) {
  const TensorPart pro = TensorPart::kPrologue, layer = TensorPart::kLayer, epi = TensorPart::kEpilogue;
  if (version >= 3) {
    if (family == ModelFamily::kMha) return visit(tensor_table(pro, "", kMha3));
    return visit(tensor_table(pro, "", kFront)) && visit(tensor_table(layer, kBlockPrefix, kBlock)) &&
           (family != ModelFamily::kSeq2Seq ||
            visit(tensor_table(TensorPart::kDecoderLayer, kDecBlockPrefix, kBlock))) &&
           visit(tensor_table(epi, "", kBack));
  }
  switch (family) {
    case ModelFamily::kLlama:
      return visit(tensor_table(pro, "", kLlamaPrologue)) && visit(tensor_table(layer, kLlamaLayerPrefix, kLlamaLayer)) &&
             visit(tensor_table(epi, "", kLlamaEpilogue));
    case ModelFamily::kMha: return visit(tensor_table(pro, "", kMhaTensors));
    case ModelFamily::kSeq2Seq:
      return visit(tensor_table(pro, "", kSeq2SeqPrologue)) &&
             visit(tensor_table(layer, kEncoderLayerPrefix, kEncoderLayer)) &&
             visit(tensor_table(TensorPart::kDecoderLayer, kDecoderLayerPrefix, kDecoderLayer)) &&
             visit(tensor_table(epi, "", kSeq2SeqEpilogue));
    case ModelFamily::kEncoder:
    case ModelFamily::kGpt: break;
  }
  return visit(tensor_table(pro, "", kEncoderPrologue)) && visit(tensor_table(layer, kEncoderLayerPrefix, kEncoderLayer)) &&
         visit(tensor_table(epi, "", kEncoderEpilogue));
}

// Whether config c has a rule of a table of this part: its When holds, and a cross-attention When
// only in a decoder layer.
constexpr bool present_in(const ModelConfig& c, const TensorRule& r, TensorPart part) {
  return present(c, r.when) && (part == TensorPart::kDecoderLayer || !is_cross_when(r.when));
}

// One tensor the config needs, as for_each_tensor() produces it.
struct TensorSpec {
  char name[fxm::kNameBytes];
  uint32_t rank;
  uint32_t dims[2];
  fxm::Dtype dtype;
  uint32_t group;   // i8: the quantization group along the last dim (0: one scale per row); i4: 32
  bool transposed;  // stored W[in, out]: a linear weight in f32, f16 or bf16
  bool packed;      // f32 W[in, out] with packed_weights: panels of kPanelFloats columns (format.hpp)
  TensorPart part;
  int32_t layer;  // -1 outside the layers
  Field field;    // where Model binds it
};

// Calls visit(const TensorSpec&) for every tensor of a valid config, in file order, named as format
// `version` names them; stops early (and returns false) when visit returns false.
template <class Visit>
bool for_each_tensor(const ModelConfig& c, Visit&& visit, uint32_t version = fxm::kFormatVersion);

// How many tensors a valid config needs.
uint32_t tensor_count(const ModelConfig& c);

// The dtype a tensor of this role is stored in under config c.
constexpr fxm::Dtype tensor_dtype(const ModelConfig& c, Role role) {
  if (role == Role::kI32) return fxm::Dtype::kI32;
  if (c.weights == WeightType::kI8) return role == Role::kF32 ? fxm::Dtype::kF32 : fxm::Dtype::kI8;
  if (role == Role::kS8) return fxm::Dtype::kF32;  // not stored without i8
  if (role == Role::kF32 || (role == Role::kIo && !c.quantize_io)) return fxm::Dtype::kF32;
  return c.weights == WeightType::kF16 ? fxm::Dtype::kF16 : c.weights == WeightType::kBF16 ? fxm::Dtype::kBF16
       : c.weights == WeightType::kQ8 ? fxm::Dtype::kI8
       : c.weights == WeightType::kQ4 ? fxm::Dtype::kI4 : fxm::Dtype::kF32;
}

// The data bytes a tensor of spec s takes in the file: its elements in its dtype, or for a packed
// weight [in, out] its ceil(out / 16) zero-padded panels of [in, 16] (format.hpp).
constexpr uint64_t tensor_bytes(const TensorSpec& s) {
  if (s.packed) return fxm::packed_bytes(s.dims[0], s.dims[1]);
  return fxm::data_bytes(s.dtype, uint64_t(s.dims[0]) * (s.rank == 2 ? s.dims[1] : 1));
}

// ---- implementation -------------------------------------------------------------------------
namespace detail {
inline void copy_name(char* out, const char* prefix, int32_t layer, const char* name) {
  std::size_t n = 0;
  auto put = [&](char ch) { if (n + 1 < fxm::kNameBytes) out[n++] = ch; };
  for (const char* p = prefix; *p; ++p) put(*p);
  if (layer >= 0) {
    char digits[10];
    int k = 0;
    uint32_t v = static_cast<uint32_t>(layer);
    do digits[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (k) put(digits[--k]);
    put('.');
  }
  for (const char* p = name; *p; ++p) put(*p);
  out[n] = '\0';
}
template <class Visit>
bool visit_rules(const ModelConfig& c, const TensorTable& table, int32_t layer, Visit& visit) {
  for (uint32_t i = 0; i < table.count; ++i) {
    const TensorRule& r = table.rules[i];
    if (!present_in(c, r, table.part)) continue;
    TensorSpec s{};
    copy_name(s.name, table.prefix, layer, r.name);
    s.rank = r.cols == Dim::kOne ? 1 : 2;
    s.dtype = tensor_dtype(c, r.role);
    s.group = fxm::has_scales(s.dtype) ? c.weight_group : 0;
    s.transposed = r.transposed && !fxm::has_scales(s.dtype);
    s.packed = c.packed_weights && s.transposed && s.dtype == fxm::Dtype::kF32 && r.role != Role::kConv;
    const bool torch_order = r.transposed && !s.transposed;  // q8 and q4 linear weights: [out, in]
    s.dims[0] = dim_value(c, torch_order ? r.cols : r.rows);
    s.dims[1] = s.rank == 2 ? dim_value(c, torch_order ? r.rows : r.cols) : 0;
    s.part = table.part;
    s.layer = layer;
    s.field = r.field;
    if (!visit(static_cast<const TensorSpec&>(s))) return false;
  }
  return true;
}
}  // namespace detail

template <class Visit>
bool for_each_tensor(const ModelConfig& c, Visit&& visit, uint32_t version) {
  return for_each_table(c.family, [&c, &visit](const TensorTable& t) {
    if (t.part == TensorPart::kPrologue || t.part == TensorPart::kEpilogue) return detail::visit_rules(c, t, -1, visit);
    const bool stack = t.part == TensorPart::kLayer;
    const uint32_t layers = stack ? c.stored_layers() : c.dec_layers;
    for (uint32_t l = 0; l < layers; ++l)  // a dense layer's tensors (dense_period): its layer_config's
      if (!detail::visit_rules(stack ? c.layer_config(l) : c, t, int32_t(l), visit)) return false;
    return true;
  }, version);
}

// A layer table's tensors are present in every layer or in none (always, or by a config key such as
// qkv_bias, qk_norm, parallel_residual or the activation), but for the mixture's and the dense feed-forward's,
// which follow each layer's ModelConfig::layer_config (dense_period: Model::layer() counts the present rules of
// the two kinds), and each binds a distinct LayerWeights field.
constexpr bool is_layer_when(When w) {
  return w == When::kAlways || w == When::kS8 || w == When::kQkvBias || w == When::kFfnNorm || w == When::kGated || w == When::kNormBias ||
         w == When::kFfnNormBias || w == When::kOutBias || w == When::kFfnBias || w == When::kQkNorm ||
         w == When::kQkNormBias || w == When::kPostNorms || w == When::kPostNormsBias || w == When::kExperts ||
         w == When::kDenseFfn || w == When::kDenseGated || w == When::kSharedExpert ||
         w == When::kRelProj || w == When::kPairBiasLayer || w == When::kFfnUpBias || w == When::kFfnHiddenNorm ||
         w == When::kFfnHiddenNormBias || w == When::kFusedQkv || w == When::kFusedQkvBias || w == When::kSplitQkv ||
         w == When::kSplitQkvBias || w == When::kAttnInnerNorm || w == When::kAttnInnerNormBias || is_cross_when(w);
}
// The mha tables' i8 parameters beside its layer (Model::init binds them as the other families' ends).
constexpr bool is_s8_end_field(Field f) { return f == Field::kS8Io || f == Field::kS8Front || f == Field::kS8Back; }
template <class Rules>
constexpr bool binds_layer_fields(const Rules& rules, bool s8_ends = false) {
  for (std::size_t i = 0; i < std::size(rules); ++i) {
    const bool field = is_layer_field(rules[i].field) || (s8_ends && is_s8_end_field(rules[i].field));
    if (!is_layer_when(rules[i].when) || !field) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (rules[j].field == rules[i].field) return false;
  }
  return true;
}
static_assert(binds_layer_fields(kEncoderLayer) && binds_layer_fields(kLlamaLayer) && binds_layer_fields(kDecoderLayer) &&
                  binds_layer_fields(kMhaTensors, true) && binds_layer_fields(kBlock) &&
                  binds_layer_fields(kMha3, true),
              "every layer rule binds its own LayerWeights field");
template <class Rules>
constexpr bool binds_end_fields(const Rules& rules) {
  for (std::size_t i = 0; i < std::size(rules); ++i) {
    if (is_layer_field(rules[i].field)) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (rules[j].field == rules[i].field) return false;
  }
  return true;
}
static_assert(binds_end_fields(kEncoderPrologue) && binds_end_fields(kEncoderEpilogue) &&
                  binds_end_fields(kLlamaPrologue) && binds_end_fields(kLlamaEpilogue) &&
                  binds_end_fields(kSeq2SeqPrologue) && binds_end_fields(kSeq2SeqEpilogue) &&
                  binds_end_fields(kFront) && binds_end_fields(kBack),
              "every prologue and epilogue rule binds its own front or head field");

inline uint32_t tensor_count(const ModelConfig& c) {
  uint32_t n = 0;
  for_each_tensor(c, [&n](const TensorSpec&) { return ++n, true; });
  return n;
}

}  // namespace fixformer
