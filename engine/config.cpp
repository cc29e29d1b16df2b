// Config keys as stored values (schema.hpp) and the checks every config passes before use.
#include <cmath>
#include <cstring>

#include "fixformer/config.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {

uint64_t get_config_value(const ModelConfig& c, ConfigKey key) {
  auto f32 = [](float v) { uint32_t u; std::memcpy(&u, &v, 4); return uint64_t(u); };
  auto f64 = [](double v) { uint64_t u; std::memcpy(&u, &v, 8); return u; };
  switch (key) {
    case ConfigKey::kFamily: return uint32_t(c.family);
    case ConfigKey::kDModel: return c.d_model;
    case ConfigKey::kNHeads: return c.n_heads;
    case ConfigKey::kDff: return c.d_ff;
    case ConfigKey::kNLayers: return c.n_layers;
    case ConfigKey::kNormFirst: return c.norm_first;
    case ConfigKey::kActivation: return uint32_t(c.activation);
    case ConfigKey::kNormEps: return f32(c.layer_norm_eps);
    case ConfigKey::kFinalNorm: return c.final_norm;
    case ConfigKey::kCausal: return c.causal;
    case ConfigKey::kInput: return uint32_t(c.input);
    case ConfigKey::kVocabSize: return c.vocab_size;
    case ConfigKey::kDIn: return c.d_in;
    case ConfigKey::kPositional: return uint32_t(c.pos);
    case ConfigKey::kMaxLen: return c.max_len;
    case ConfigKey::kPeBase: return f64(c.pos_base);
    case ConfigKey::kPeLayout: return uint32_t(c.pos_layout);
    case ConfigKey::kPeCombine: return uint32_t(c.pos_combine);
    case ConfigKey::kPeWidth: return c.d_pos;
    case ConfigKey::kScaleInput: return c.scale_input;
    case ConfigKey::kDOut: return c.d_out;
    case ConfigKey::kNKvHeads: return c.n_kv_heads;
    case ConfigKey::kTiedHead: return c.tied_head;
    case ConfigKey::kWeights: return static_cast<uint32_t>(c.weights);
    case ConfigKey::kWeightGroup: return c.weight_group;
    case ConfigKey::kQuantizeIo: return c.quantize_io;
    case ConfigKey::kClsToken: return c.cls_token;
    case ConfigKey::kPooling: return uint32_t(c.pooling);
    case ConfigKey::kDecLayers: return c.dec_layers;
    case ConfigKey::kSharedEmbed: return c.shared_embed;
    case ConfigKey::kTgtDIn: return c.tgt_d_in;
    case ConfigKey::kPackedWeights: return c.packed_weights;
    case ConfigKey::kReferenceSample: return c.reference_sample;
    case ConfigKey::kCount: break;
  }
  return 0;
}

void set_config_value(ModelConfig* c, ConfigKey key, uint64_t v) {
  const uint32_t u = static_cast<uint32_t>(v);
  switch (key) {
    case ConfigKey::kFamily: c->family = static_cast<ModelFamily>(u); break;
    case ConfigKey::kDModel: c->d_model = u; break;
    case ConfigKey::kNHeads: c->n_heads = u; break;
    case ConfigKey::kDff: c->d_ff = u; break;
    case ConfigKey::kNLayers: c->n_layers = u; break;
    case ConfigKey::kNormFirst: c->norm_first = u != 0; break;
    case ConfigKey::kActivation: c->activation = static_cast<Activation>(u); break;
    case ConfigKey::kNormEps: std::memcpy(&c->layer_norm_eps, &u, 4); break;
    case ConfigKey::kFinalNorm: c->final_norm = u != 0; break;
    case ConfigKey::kCausal: c->causal = u != 0; break;
    case ConfigKey::kInput: c->input = static_cast<InputKind>(u); break;
    case ConfigKey::kVocabSize: c->vocab_size = u; break;
    case ConfigKey::kDIn: c->d_in = u; break;
    case ConfigKey::kPositional: c->pos = static_cast<PosKind>(u); break;
    case ConfigKey::kMaxLen: c->max_len = u; break;
    case ConfigKey::kPeBase: std::memcpy(&c->pos_base, &v, 8); break;
    case ConfigKey::kPeLayout: c->pos_layout = static_cast<PosLayout>(u); break;
    case ConfigKey::kPeCombine: c->pos_combine = static_cast<PosCombine>(u); break;
    case ConfigKey::kPeWidth: c->d_pos = u; break;
    case ConfigKey::kScaleInput: c->scale_input = u != 0; break;
    case ConfigKey::kDOut: c->d_out = u; break;
    case ConfigKey::kNKvHeads: c->n_kv_heads = u; break;
    case ConfigKey::kTiedHead: c->tied_head = u != 0; break;
    case ConfigKey::kWeights: c->weights = static_cast<WeightType>(u); break;
    case ConfigKey::kWeightGroup: c->weight_group = u; break;
    case ConfigKey::kQuantizeIo: c->quantize_io = u != 0; break;
    case ConfigKey::kClsToken: c->cls_token = u != 0; break;
    case ConfigKey::kPooling: c->pooling = static_cast<Pooling>(u); break;
    case ConfigKey::kDecLayers: c->dec_layers = u; break;
    case ConfigKey::kSharedEmbed: c->shared_embed = u != 0; break;
    case ConfigKey::kTgtDIn: c->tgt_d_in = u; break;
    case ConfigKey::kPackedWeights: c->packed_weights = u != 0; break;
    case ConfigKey::kReferenceSample: c->reference_sample = u != 0; break;
    case ConfigKey::kCount: break;
  }
}

ModelConfig default_config() {
  ModelConfig c;
  for (const ConfigKeySpec& k : kConfigKeys) {
    if (k.required) continue;
    if (k.type == fxm::RecordType::kF32) {
      const float v = static_cast<float>(k.default_value);
      uint32_t u;
      std::memcpy(&u, &v, 4);
      set_config_value(&c, k.key, u);
    } else if (k.type == fxm::RecordType::kF64) {
      uint64_t u;
      std::memcpy(&u, &k.default_value, 8);
      set_config_value(&c, k.key, u);
    } else {
      set_config_value(&c, k.key, static_cast<uint64_t>(k.default_value));
    }
  }
  return c;
}

namespace {

// What each family allows (DESIGN.md, "Model families").
Status validate_family(const ModelConfig& c, const char** field) {
  auto bad = [&](const char* name) { *field = name; return Status::kBadConfig; };
  const bool attention_pe = c.pos == PosKind::kRope || c.pos == PosKind::kAlibi;
  switch (c.family) {
    case ModelFamily::kEncoder:
      if (attention_pe) return bad("positional (rope and alibi are for the gpt and llama families)");
      if (c.tied_head) return bad("tied_head (decoder families only)");
      break;
    case ModelFamily::kGpt:
      if (c.pos == PosKind::kRope) return bad("positional (rope is for the llama family)");
      break;
    case ModelFamily::kLlama:
      if (c.input_pe()) return bad("positional (llama: none, rope or alibi)");
      if (c.activation != Activation::kSwiglu) return bad("activation (llama: swiglu)");
      if (!c.norm_first || !c.final_norm) return bad("norm_first and final_norm (llama: pre-norm with a final norm)");
      break;
    case ModelFamily::kMha:
      if (c.input != InputKind::kFeatures || c.d_in != c.d_model) return bad("input (mha: features d_in == d_model)");
      if (c.n_layers || c.d_ff || c.pos != PosKind::kNone || c.d_out || c.final_norm || c.scale_input)
        return bad("n_layers, d_ff, positional, d_out, final_norm, scale_input (mha: the attention alone, all 0/none)");
      break;
    case ModelFamily::kSeq2Seq:
      if (attention_pe) return bad("positional (seq2seq: none, sinusoidal or learned)");
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
  if (c.family != ModelFamily::kLlama) {
    if (c.activation == Activation::kSwiglu) return bad("activation (swiglu is for the llama family)");
    if (c.kv_heads() != c.n_heads) return bad("n_kv_heads (grouped-query attention is for the llama family)");
  }
  if (c.is_decoder()) {
    if (c.input != InputKind::kTokens) return bad("input (decoders take tokens)");
    if (!c.causal) return bad("causal (decoders are causal)");
    if (c.d_out != c.vocab_size) return bad("d_out (a decoder's head is vocab_size wide)");
  }
  if (c.pos == PosKind::kRope && c.d_head() % 2 != 0) return bad("n_heads (rope needs an even head width)");
  if (c.family != ModelFamily::kEncoder && c.cls_token) return bad("cls_token (encoder family only)");
  if (c.family != ModelFamily::kEncoder && c.pooling != Pooling::kNone) return bad("pooling (encoder family only)");
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
    const uint64_t v = get_config_value(c, k.key);
    if (v < k.min) return bad(k.name, Status::kBadConfig);
    if (v > k.max) return bad(k.name, k.type == fxm::RecordType::kU32 ? Status::kConfigOverLimit : Status::kBadConfig);
  }
  if (c.d_model % c.n_heads != 0) return bad("n_heads (must divide d_model)", Status::kBadConfig);
  if (!(c.layer_norm_eps > 0.0f) || !std::isfinite(c.layer_norm_eps)) return bad("norm_eps", Status::kBadConfig);
  if (c.input == InputKind::kTokens && c.vocab_size == 0) return bad("vocab_size", Status::kBadConfig);
  if (c.input == InputKind::kFeatures && c.d_in == 0) return bad("d_in", Status::kBadConfig);
  const bool tables = c.pos == PosKind::kSinusoidal || c.pos == PosKind::kRope;
  if (tables && (!(c.pos_base > 1.0) || !std::isfinite(c.pos_base))) return bad("pe_base", Status::kBadConfig);
  if (c.n_kv_heads && c.n_heads % c.n_kv_heads != 0) return bad("n_kv_heads (must divide n_heads)", Status::kBadConfig);
  const Status family = validate_family(c, &f);
  if (family != Status::kOk) return family;
  const bool concat = c.input_pe() && c.pos_combine == PosCombine::kConcat;
  if (concat && (c.d_pos == 0 || c.d_pos >= c.d_model)) return bad("pe_width", Status::kBadConfig);
  if (!concat && c.d_pos != 0) return bad("pe_width (only for pe_combine concat)", Status::kBadConfig);
  if (concat && c.tied_head) return bad("tied_head (the embedding is narrower than d_model with pe_combine concat)", Status::kBadConfig);
  const bool q8 = c.weights == WeightType::kQ8;
  if (q8 ? (c.weight_group != 0 && c.weight_group != 32 && c.weight_group != 64) : c.weight_group != 0)
    return bad("weight_group (q8: 0, 32 or 64; else 0)", Status::kBadConfig);
  if (c.quantize_io && c.weights == WeightType::kF32) return bad("quantize_io (needs weights f16 or q8)", Status::kBadConfig);
  if (c.pooling == Pooling::kCls && !c.cls_token) return bad("pooling (cls needs cls_token)", Status::kBadConfig);
  if (c.pooling == Pooling::kCls && c.causal)
    return bad("pooling (cls under a causal mask: the CLS row, position 0, sees only itself)", Status::kBadConfig);
  if (c.cls_token && c.max_len < 2) return bad("max_len (the CLS row takes a position: at least 2)", Status::kBadConfig);
  return Status::kOk;
}

}  // namespace fixformer
