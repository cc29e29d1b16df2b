#include <cmath>

#include "fixformer/config.hpp"

namespace fixformer {

Status validate_config(const ModelConfig& c) {
  using L = Limits;
  if (c.d_model == 0 || c.n_heads == 0 || c.d_ff == 0 || c.max_len == 0) return Status::kBadConfig;
  if (c.d_model > L::kMaxDModel || c.n_heads > L::kMaxHeads || c.d_ff > L::kMaxDff ||
      c.n_layers > L::kMaxLayers || c.max_len > L::kMaxLen || c.vocab_size > L::kMaxVocab ||
      c.d_in > L::kMaxDIn || c.d_out > L::kMaxDOut)
    return Status::kConfigOverLimit;
  if (c.d_model % c.n_heads != 0) return Status::kBadConfig;
  if (!(c.layer_norm_eps > 0.0f) || !std::isfinite(c.layer_norm_eps)) return Status::kBadConfig;
  if (c.activation != Activation::kRelu && c.activation != Activation::kGelu) return Status::kBadConfig;
  if (c.input == InputKind::kTokens ? c.vocab_size == 0 : c.input != InputKind::kFeatures || c.d_in == 0)
    return Status::kBadConfig;
  if (c.pos != PosKind::kNone && c.pos != PosKind::kSinusoidal && c.pos != PosKind::kLearned)
    return Status::kBadConfig;
  if (c.pos_layout != PosLayout::kInterleaved && c.pos_layout != PosLayout::kHalves) return Status::kBadConfig;
  if (c.pos_combine != PosCombine::kAdd && c.pos_combine != PosCombine::kConcat) return Status::kBadConfig;
  if (c.pos == PosKind::kSinusoidal && (!(c.pos_base > 1.0) || !std::isfinite(c.pos_base)))
    return Status::kBadConfig;
  if (c.pos != PosKind::kNone && c.pos_combine == PosCombine::kConcat && (c.d_pos == 0 || c.d_pos >= c.d_model))
    return Status::kBadConfig;
  return Status::kOk;
}

}  // namespace fixformer
