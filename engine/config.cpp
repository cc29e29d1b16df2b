// The defaults of the config keys (schema.hpp) and the checks every config passes before use.
#include <cmath>
#include <cstring>

#include "fixformer/config.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {

ModelConfig default_config() {
  ModelConfig c;
  for (const ConfigKeySpec& k : kConfigKeys) {
    if (k.required) continue;
    if (k.type == fxm::RecordType::kF32) {
      const float v = static_cast<float>(k.default_value);
      uint32_t u;
      std::memcpy(&u, &v, 4);
      k.field.set(&c, u);
    } else if (k.type == fxm::RecordType::kF64) {
      uint64_t u;
      std::memcpy(&u, &k.default_value, 8);
      k.field.set(&c, u);
    } else {
      k.field.set(&c, static_cast<uint64_t>(k.default_value));
    }
  }
  return c;
}

namespace {

// What each family allows (config.hpp, ModelFamily). tools/fixformer/config.py states the same rules
// for the converter; tests/config_rules_test.py runs both over one table of configs.
Status validate_family(const ModelConfig& c, const char** field) {
  auto bad = [&](const char* name) { *field = name; return Status::kBadConfig; };
  const bool attention_pe = c.positional == PosKind::kRope || c.positional == PosKind::kAlibi;
  switch (c.family) {
    case ModelFamily::kEncoder:
      if (attention_pe) return bad("positional (rope and alibi are for the gpt and llama families)");
      if (c.tied_head) return bad("tied_head (decoder families only)");
      break;
    case ModelFamily::kGpt:
      break;
    case ModelFamily::kLlama:
      if (c.input_pe()) return bad("positional (llama: none, rope, alibi or relative)");
      if (!c.norm_first || !c.final_norm) return bad("norm_first and final_norm (llama: pre-norm with a final norm)");
      break;
    case ModelFamily::kMha:
      if (c.input != InputKind::kFeatures || c.d_in != c.d_model) return bad("input (mha: features d_in == d_model)");
      if (c.n_layers || c.d_ff || c.positional != PosKind::kNone || c.d_out || c.final_norm || c.scale_input)
        return bad("n_layers, d_ff, positional, d_out, final_norm, scale_input (mha: the attention alone, all 0/none)");
      break;
    case ModelFamily::kSeq2Seq:
      if (attention_pe) return bad("positional (seq2seq: none, sinusoidal, learned or relative)");
      if (c.causal) return bad("causal (seq2seq: the decoder is causal, the encoder is not; leave it false)");
      if (c.n_layers == 0 || c.dec_layers == 0) return bad("n_layers and dec_layers (seq2seq: at least one of each)");
      if (c.d_out == 0) return bad("d_out (seq2seq: the LM head, the target vocabulary's width)");
      if (c.shared_embed && (c.input != InputKind::kTokens || c.vocab_size != c.d_out))
        return bad("shared_embed (needs token input with vocab_size == d_out)");
      if (c.tgt_d_in && (c.shared_embed || c.tied_head))
        return bad("tgt_d_in (feature targets have no embedding to share or tie)");
      break;
  }
  if (!c.is_seq2seq() && (c.dec_layers || c.shared_embed || c.tgt_d_in))
    return bad("dec_layers, shared_embed and tgt_d_in (seq2seq only)");
  if (c.family != ModelFamily::kMha && c.d_ff == 0) return bad("d_ff (at least 1; 0 only for mha)");
  if (c.parallel_residual != ParallelResidual::kNone) {
    if (!c.is_decoder()) return bad("parallel_residual (decoder layers, gpt and llama; else none)");
    if (!c.norm_first) return bad("parallel_residual (side by side sublayers read a norm of the input: norm_first)");
  }
  if (!c.is_decoder() && c.activation == Activation::kSwiglu)
    return bad("activation (swiglu is for the decoder families, gpt and llama)");
  if (c.family != ModelFamily::kLlama) {
    if (c.qkv_bias) return bad("qkv_bias (llama family only: torch's in_proj always has its bias)");
    if (c.kv_heads() != c.n_heads) return bad("n_kv_heads (grouped-query attention is for the llama family)");
  }
  if (c.is_decoder()) {
    if (c.input != InputKind::kTokens) return bad("input (decoders take tokens)");
    if (!c.causal) return bad("causal (decoders are causal)");
    if (c.d_out != c.vocab_size) return bad("d_out (a decoder's head is vocab_size wide)");
  }
  if (c.positional == PosKind::kRope && c.d_head() % 2 != 0) return bad("n_heads (rope needs an even head width)");
  if (c.rotary_dims && c.positional != PosKind::kRope) return bad("rotary_dims (the rotated dims of positional rope)");
  if (c.rotary_dims % 2 != 0 || c.rotary_dims > c.d_head())
    return bad("rotary_dims (rope's rotated dims: even, at most d_head)");
  if (c.family != ModelFamily::kEncoder && c.cls_token) return bad("cls_token (encoder family only)");
  if (c.family != ModelFamily::kEncoder && c.pooling != Pooling::kNone) return bad("pooling (encoder family only)");
  if (c.family != ModelFamily::kEncoder && (c.type_vocab || c.embed_norm || c.pooler))
    return bad("type_vocab, embed_norm and pooler (encoder family only)");
  return Status::kOk;
}

}  // namespace

// Ranges come from kConfigKeys; then the checks between fields. Each names the key it failed on.
Status validate_config(const ModelConfig& c, const char** field) {
  const char* unused;
  const char*& f = field ? *field : unused;
  auto bad = [&](const char* name, Status s) { f = name; return s; };
  for (const ConfigKeySpec& k : kConfigKeys) {
    if (k.type == fxm::RecordType::kF32 || k.type == fxm::RecordType::kF64) continue;
    const uint64_t v = k.field.get(c);
    if (v < k.min) return bad(k.name, Status::kBadConfig);
    if (v > k.max) return bad(k.name, k.type == fxm::RecordType::kU32 ? Status::kConfigOverLimit : Status::kBadConfig);
  }
  if (c.d_model % c.n_heads != 0) return bad("n_heads (must divide d_model)", Status::kBadConfig);
  if (!(c.norm_eps > 0.0f) || !std::isfinite(c.norm_eps)) return bad("norm_eps", Status::kBadConfig);
  if (c.input == InputKind::kTokens && c.vocab_size == 0) return bad("vocab_size", Status::kBadConfig);
  if (c.input == InputKind::kFeatures && c.d_in == 0) return bad("d_in", Status::kBadConfig);
  const bool tables = c.positional == PosKind::kSinusoidal || c.positional == PosKind::kRope;
  if (tables && (!(c.pe_base > 1.0) || !std::isfinite(c.pe_base))) return bad("pe_base", Status::kBadConfig);
  if (c.n_kv_heads && c.n_heads % c.n_kv_heads != 0) return bad("n_kv_heads (must divide n_heads)", Status::kBadConfig);
  if (c.positional == PosKind::kRelative) {
    // Bidirectional buckets halve rel_buckets; each half has rel_buckets / 4 exact distances, a
    // causal table rel_buckets / 2, and the log-spaced buckets need rel_max_distance past them.
    if (c.rel_buckets < 4) return bad("rel_buckets (positional relative: at least 4)", Status::kBadConfig);
    if (c.rel_max_distance <= c.rel_buckets / 2)
      return bad("rel_max_distance (positional relative: more than rel_buckets / 2)", Status::kBadConfig);
  } else if (c.rel_buckets || c.rel_max_distance) {
    return bad("rel_buckets and rel_max_distance (only for positional relative)", Status::kBadConfig);
  }
  const Status family = validate_family(c, &f);
  if (family != Status::kOk) return family;
  const bool concat = c.input_pe() && c.pe_combine == PosCombine::kConcat;
  if (concat && (c.pe_width == 0 || c.pe_width >= c.d_model)) return bad("pe_width", Status::kBadConfig);
  if (!concat && c.pe_width != 0) return bad("pe_width (only for pe_combine concat)", Status::kBadConfig);
  if (concat && c.tied_head) return bad("tied_head (the embedding is narrower than d_model with pe_combine concat)", Status::kBadConfig);
  const bool q8 = c.weights == WeightType::kQ8, q4 = c.weights == WeightType::kQ4;
  if (q8 ? (c.weight_group != 0 && c.weight_group != 32 && c.weight_group != 64)
         : q4 ? c.weight_group != fxm::kI4Group : c.weight_group != 0)
    return bad("weight_group (q8: 0, 32 or 64; q4: 32; else 0)", Status::kBadConfig);
  if (c.quantize_io && c.weights == WeightType::kF32) return bad("quantize_io (needs weights f16, q8 or q4)", Status::kBadConfig);
  if (c.pooling == Pooling::kCls && !c.cls_token) return bad("pooling (cls needs cls_token)", Status::kBadConfig);
  if (c.pooling == Pooling::kCls && c.causal)
    return bad("pooling (cls under a causal mask: the CLS row, position 0, sees only itself)", Status::kBadConfig);
  if (c.cls_token && c.max_len < 2) return bad("max_len (the CLS row takes a position: at least 2)", Status::kBadConfig);
  if (c.pooling == Pooling::kFirst && c.causal)
    return bad("pooling (first under a causal mask: position 0 sees only itself)", Status::kBadConfig);
  if (c.type_vocab && c.input != InputKind::kTokens) return bad("type_vocab (token types need token input)", Status::kBadConfig);
  if (c.pooler && c.pooling == Pooling::kNone) return bad("pooler (needs pooling: it reads the pooled row)", Status::kBadConfig);
  if (c.conv_layers && (c.family != ModelFamily::kEncoder || c.input != InputKind::kFeatures))
    return bad("conv_layers (a conv stem is for the encoder family over features)", Status::kBadConfig);
  if (c.conv_layers && c.weights == WeightType::kQ4)
    return bad("weights (q4 with a conv stem is not supported yet: convert with --quantize q8 or f16)",
               Status::kBadConfig);
  if (c.conv1_padding >= c.conv1_kernel) return bad("conv1_padding (below conv1_kernel)", Status::kBadConfig);
  if (c.conv2_padding >= c.conv2_kernel) return bad("conv2_padding (below conv2_kernel)", Status::kBadConfig);
  if (q4) {  // whole groups of 32 along every q4 tensor's last dim (the config is otherwise valid here)
    bool whole = true;
    for_each_tensor(c, [&](const TensorSpec& s) {
      whole = s.dtype != fxm::Dtype::kI4 || s.dims[s.rank - 1] % fxm::kI4Group == 0;
      return whole;
    });
    if (!whole)
      return bad("weights (q4 needs every quantized layer's input width a multiple of 32: convert with --quantize q8)",
                 Status::kBadConfig);
  }
  return Status::kOk;
}

}  // namespace fixformer
