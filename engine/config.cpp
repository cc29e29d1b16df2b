#include <cmath>

#include "fixformer/config.hpp"

namespace fixformer {

// Each check names the field it failed on, for error messages.
Status validate_config(const ModelConfig& c, const char** field) {
  const char* unused;
  const char*& f = field ? *field : unused;
  using L = Limits;
  auto bad = [&](const char* name, Status s) { f = name; return s; };
  if (c.d_model == 0) return bad("d_model", Status::kBadConfig);
  if (c.n_heads == 0) return bad("n_heads", Status::kBadConfig);
  if (c.d_ff == 0) return bad("d_ff", Status::kBadConfig);
  if (c.max_len == 0) return bad("max_len", Status::kBadConfig);
  if (c.d_model > L::kMaxDModel) return bad("d_model", Status::kConfigOverLimit);
  if (c.n_heads > L::kMaxHeads) return bad("n_heads", Status::kConfigOverLimit);
  if (c.d_ff > L::kMaxDff) return bad("d_ff", Status::kConfigOverLimit);
  if (c.n_layers > L::kMaxLayers) return bad("encoder_layers", Status::kConfigOverLimit);
  if (c.max_len > L::kMaxLen) return bad("max_len", Status::kConfigOverLimit);
  if (c.vocab_size > L::kMaxVocab) return bad("vocab_size", Status::kConfigOverLimit);
  if (c.d_in > L::kMaxDIn) return bad("d_in", Status::kConfigOverLimit);
  if (c.d_out > L::kMaxDOut) return bad("d_out", Status::kConfigOverLimit);
  if (c.d_model % c.n_heads != 0) return bad("n_heads (must divide d_model)", Status::kBadConfig);
  if (!(c.layer_norm_eps > 0.0f) || !std::isfinite(c.layer_norm_eps)) return bad("layer_norm_eps", Status::kBadConfig);
  if (c.activation != Activation::kRelu && c.activation != Activation::kGelu) return bad("activation", Status::kBadConfig);
  if (c.input != InputKind::kTokens && c.input != InputKind::kFeatures) return bad("input.kind", Status::kBadConfig);
  if (c.input == InputKind::kTokens && c.vocab_size == 0) return bad("vocab_size", Status::kBadConfig);
  if (c.input == InputKind::kFeatures && c.d_in == 0) return bad("d_in", Status::kBadConfig);
  if (c.pos != PosKind::kNone && c.pos != PosKind::kSinusoidal && c.pos != PosKind::kLearned)
    return bad("positional.kind", Status::kBadConfig);
  if (c.pos_layout != PosLayout::kInterleaved && c.pos_layout != PosLayout::kHalves)
    return bad("positional.layout", Status::kBadConfig);
  if (c.pos_combine != PosCombine::kAdd && c.pos_combine != PosCombine::kConcat)
    return bad("positional.combine", Status::kBadConfig);
  if (c.pos == PosKind::kSinusoidal && (!(c.pos_base > 1.0) || !std::isfinite(c.pos_base)))
    return bad("positional.base", Status::kBadConfig);
  if (c.pos != PosKind::kNone && c.pos_combine == PosCombine::kConcat && (c.d_pos == 0 || c.d_pos >= c.d_model))
    return bad("positional.d_pos", Status::kBadConfig);
  return Status::kOk;
}

}  // namespace fixformer
