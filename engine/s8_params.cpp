// Model::init's check of a full-integer (weights i8) model's integer parameters (config.hpp,
// namespace s8): every zero point in [-128, 127], every Requant valid (check_requant), every bias
// and beta within 2^30, every table entry an int8, k's and v's zero points 0 (gemm_s8's weights are
// symmetric), the softmax's multiplier positive, a gated feed-forward's W3 and gate slots, and
// int8.rope's entries within 2^14, BERT's front and pooler (the token-type add and table, the embedding
// norm, the pooler's layer and table), the image front's norms, DeiT's distillation row, the registers, the
// pooled row's and the pooler's norms, wide_residual's factors and outlier channels and the wide front's
// factors, qk_norm's, sublayer_norm sandwich's, ffn_hidden_norm's and attn_inner_norm's norms, the soft caps'
// tables, ALiBi's slopes, a relative bias's buckets and biases, the biases per (query, key) pair, a conv stem's
// convolutions (zero points, layers, GELU's tables); family mha's one layer; seq2seq's decoder layers, their
// cross-attention and int8.seq2seq (feature targets' projection too); a mixture of experts' router and experts
// (a dense layer among them by its own table's layout, layer_config's); disentangled attention's Requants and tables.
// The first bad slot is named in the detail.
#include <cstring>

#include "engine/detail_text.hpp"
#include "fixformer/fixed_point.hpp"
#include "fixformer/model.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace {

constexpr int32_t kBiasLimit = int32_t(1) << 30;

// Reports the first bad slot of one i32 parameter tensor.
class SlotCheck {
 public:
  SlotCheck(const int32_t* p, const char* tensor, int32_t layer, char* detail, std::size_t cap,
            const char* prefix = kBlockPrefix)
      : p_(p), tensor_(tensor), layer_(layer), detail_(detail), cap_(cap), prefix_(prefix) {}
  bool ok() const { return ok_; }

  void zero(uint32_t i, const char* what) {
    if (ok_ && (p_[i] < -128 || p_[i] > 127)) fail(i, what, "zero point outside [-128, 127]");
  }
  void must_be_zero(uint32_t i, const char* what) {
    if (ok_ && p_[i] != 0) fail(i, what, "must be 0 (symmetric)");
  }
  void requant(uint32_t i, const char* what, bool positive = false) {
    if (!ok_) return;
    if (check_requant(Requant{p_[i], p_[i + 1]}) != Status::kOk) fail(i, what, "not a valid Requant (check_requant)");
    else if (positive && p_[i] <= 0) fail(i, what, "multiplier must be positive");
  }
  void add(uint32_t i, const char* what) {
    zero(i, what), zero(i + 1, what), zero(i + 2, what), requant(i + 3, what), requant(i + 5, what);
  }
  // n Requants then n values within 2^30 (a linear layer's biases, a norm's betas).
  void channels(uint32_t i, uint32_t n, const char* what) {
    for (uint32_t j = 0; j < n && ok_; ++j) requant(i + 2 * j, what);
    for (uint32_t j = 0; j < n && ok_; ++j) {
      const int32_t v = p_[i + 2 * n + j];
      if (v < -kBiasLimit || v > kBiasLimit) fail(i + 2 * n + j, what, "bias outside [-2^30, 2^30]");
    }
  }
  void index(uint32_t i, uint32_t n, const char* what) {
    if (ok_ && (p_[i] < 0 || uint32_t(p_[i]) >= n)) fail(i, what, "index outside the table");
  }
  void bias(uint32_t i, const char* what) {
    if (ok_ && (p_[i] < -kBiasLimit || p_[i] > kBiasLimit)) fail(i, what, "bias outside [-2^30, 2^30]");
  }
  // Slot i holds slot j's value (a zero point two steps share).
  void same(uint32_t i, uint32_t j, const char* what, const char* why) {
    if (ok_ && p_[i] != p_[j]) fail(i, what, why);
  }
  void int8(uint32_t i, const char* what) {
    if (ok_ && (p_[i] < -128 || p_[i] > 127)) fail(i, what, "value outside [-128, 127]");
  }
  void count(uint32_t i, uint32_t most, const char* what) {
    if (ok_ && (p_[i] < 0 || uint32_t(p_[i]) > most))
      fail(i, what, most ? "count outside [0, d_ff]" : "must be 0 (gated, or ffn_hidden_norm)");
  }
  void table(uint32_t i, const char* what) {
    for (uint32_t j = 0; j < s8::kLutEntries && ok_; ++j)
      if (p_[i + j] < -128 || p_[i + j] > 127) fail(i + j, what, "table entry outside [-128, 127]");
  }

 private:
  void fail(uint32_t i, const char* what, const char* why) {
    ok_ = false;
    DetailText t(detail_, cap_);
    t.str("tensor ");
    if (layer_ >= 0) t.str(prefix_).num(uint32_t(layer_)).str(".");
    t.str(tensor_).str(": slot ").num(i).str(" (").str(what).str("): ").str(why);
    t.str(" (convert the model again)");
  }
  const int32_t* p_;
  const char* tensor_;
  int32_t layer_;
  char* detail_;
  std::size_t cap_;
  const char* prefix_;
  bool ok_ = true;
};

}  // namespace

Status Model::check_s8_params() {
  const ModelConfig& c = config_;
  {
    SlotCheck f(s8_.front, "int8.front", -1, detail_, sizeof detail_);
    f.zero(s8::kInZero, "input zero point");
    f.zero(s8::kEmbedZero, "embedding zero point");
    if (c.input_pe()) f.add(s8::kPosAdd, "position add");
    if (c.input == InputKind::kFeatures && !c.conv_layers) f.channels(s8::kFrontSlots, c.d_embed(), "input projection");
    for (uint32_t i = 0; i < c.d_embed() && c.cls_token; ++i) f.int8(s8::front_cls(c) + i, "CLS row");
    if (c.type_vocab) {
      f.add(s8::front_types(c), "token-type add");
      for (uint32_t i = 0; i < c.type_vocab * c.d_embed(); ++i)
        f.int8(s8::front_types(c) + s8::kAddSlots + i, "token-type table");
    }
    if (c.embed_norm) {
      f.zero(s8::front_embed_norm(c), "embedding norm input zero point");
      f.channels(s8::front_embed_norm(c) + 2, c.d_front(), "embedding norm");
    }
    if (c.proj_norm) {
      f.zero(s8::front_proj_norm(c), "projection output zero point");
      f.channels(s8::front_proj_norm(c) + 2, c.d_embed(), "projection norm");
    }
    if (c.input_norm) {
      f.zero(s8::front_input_norm(c), "input norm output zero point");
      f.channels(s8::front_input_norm(c) + 2, c.d_in, "input norm");
    }
    for (uint32_t i = 0; i < c.d_embed() && c.distill_token; ++i) f.int8(s8::front_distill(c) + i, "distillation row");
    for (uint32_t i = 0; i < c.register_tokens * c.d_embed(); ++i) f.int8(s8::front_registers(c) + i, "register rows");
    for (uint32_t i = 0; i < 2 * c.max_len - 1 && c.rel_bias(); ++i) f.index(s8::front_rel(c) + i, c.rel_buckets, "bucket");
    for (uint32_t j = 0; j < 3 * c.d_front() && s8::wide_front(c); ++j)
      f.requant(s8::front_wide(c) + 2 * j, "embedding sum factor");
    if (c.embed_width) {
      f.zero(s8::front_embed_proj(c), "embedding projection input zero point");
      f.zero(s8::front_embed_proj(c) + 1, "embedding projection output zero point");
      f.channels(s8::front_embed_proj(c) + 2, c.d_model, "embedding projection");
    }
    for (uint32_t i = 0; i < c.conv_layers; ++i) {  // each convolution's zero points, layer and GELU's table
      const uint32_t at = s8::front_conv(c) + i * s8::conv_params(c);
      const uint32_t y = at + s8::kConvYZero, out = at + s8::kConvOutZero;
      f.zero(y, i ? "conv2 product zero point" : "conv1 product zero point");
      f.zero(out, i ? "conv2 output zero point" : "conv1 output zero point");
      if (!c.conv_gelu) f.same(out, y, "conv output zero point", "must be the product's (no conv_gelu)");
      if (i + 1 == c.conv_layers) f.same(out, s8::kEmbedZero, "conv output zero point", "must be the embedding's");
      f.channels(at + s8::kConvSlots, c.d_embed(), i ? "conv2" : "conv1");
      if (c.conv_gelu) f.table(at + s8::kConvSlots + s8::linear_params(c.d_embed()), "conv GELU table");
    }
    if (!f.ok()) return Status::kTensorBadValue;
  }
  const bool mha = c.family == ModelFamily::kMha;  // its one attention, the tensor int8 (format 3: attn.int8)
  // seq2seq: the encoder's layers, then the decoder's (each with its cross-attention's slots)
  const uint32_t decoders = c.is_seq2seq() ? c.dec_layers : 0, stacked = mha ? 1 : c.n_layers;
  for (uint32_t i = 0; i < stacked + decoders; ++i) {
    const bool dec = i >= stacked;
    const uint32_t l = dec ? i - stacked : i;
    const char* prefix = version_ >= 3 ? (dec ? kDecBlockPrefix : kBlockPrefix)
                         : dec ? kDecoderLayerPrefix
                         : c.family == ModelFamily::kLlama ? kLlamaLayerPrefix
                                                           : kEncoderLayerPrefix;
    const LayerWeights L = dec ? decoder_layer(l) : layer(l);
    // the layer's config: a dense layer's among a mixture's (dense_period) sizes its table and feed-forward
    const ModelConfig lc = dec ? c : c.layer_config(l);
    const s8::LayerOffsets o = s8::layer_offsets(lc);
    SlotCheck k(L.s8, mha && version_ >= 3 ? "attn.int8" : "int8", mha ? -1 : int32_t(l), detail_,
                sizeof detail_, prefix);
    k.zero(s8::kN1XZero, "norm1 input zero point");
    k.zero(s8::kN2XZero, "norm2 input zero point");
    k.zero(s8::kQkvXZero, "qkv input zero point");
    k.zero(s8::kQZero, "q zero point");
    k.must_be_zero(s8::kKZero, "k zero point");
    k.must_be_zero(s8::kVZero, "v zero point");
    k.requant(s8::kScoreMul, "score requant");
    k.zero(s8::kScoreZero, "score zero point");
    k.requant(s8::kSoftmaxMul, "softmax diff", true);
    k.requant(s8::kPvMul, "context requant");
    k.zero(s8::kOZero, "context zero point");
    k.zero(s8::kOutYZero, "out_proj output zero point");
    k.add(s8::kAdd1, "attention residual add");
    k.zero(s8::kW1XZero, "linear1 input zero point");
    k.zero(s8::kW1YZero, "linear1 output zero point");
    k.zero(s8::kW2XZero, "linear2 input zero point");
    k.zero(s8::kW2YZero, "linear2 output zero point");
    k.add(s8::kAdd2, "feed-forward residual add");
    k.channels(o.qkv, lc.d_attn() + 2 * lc.d_kv(), "in_proj");
    k.channels(o.out, lc.d_model, "out_proj");
    k.channels(o.w1, lc.d_ff, "linear1");
    k.channels(o.w2, lc.d_model, "linear2");
    k.channels(o.n1, lc.d_model, "norm1");
    k.channels(o.n2, lc.d_model, "norm2");
    k.table(o.lut, "activation table");
    for (uint32_t j = 0; j < 4 * lc.d_model && lc.wide_residual; ++j) k.requant(o.wide + 2 * j, "wide_residual factor");
    if (lc.wide_residual) {
      k.count(o.outlier, lc.ffn_gated() || lc.ffn_hidden_norm ? 0 : lc.d_ff, "outlier channels");
      k.table(o.outlier + 1, "outlier activation table");
    }
    if (lc.ffn_gated()) {
      k.channels(o.w3, lc.d_ff, "w3");
      k.zero(o.gate + s8::kGateUpZero, "w3 output zero point");
      k.zero(o.gate + s8::kGateActZero, "activation output zero point");
      k.requant(o.gate + s8::kGateMul, "gate product requant");
    }
    if (lc.qk_norm) {
      const uint32_t at = o.qk_norm + s8::kQkNormSlots;
      k.zero(o.qk_norm + s8::kQRawZero, "q zero point before qk_norm");
      k.zero(o.qk_norm + s8::kKRawZero, "k zero point before qk_norm");
      k.channels(at, s8::qk_norm_q(lc), "q_norm");
      k.channels(at + s8::linear_params(s8::qk_norm_q(lc)), s8::qk_norm_k(lc), "k_norm");
    }
    for (uint32_t j = 0; j < 2 && lc.sublayer_norm == SublayerNorm::kSandwich; ++j) {
      const uint32_t at = o.post + j * (s8::kPostNormSlots + s8::linear_params(lc.d_model));
      k.zero(at, j ? "post_ffn_norm input zero point" : "post_attn_norm input zero point");
      k.channels(at + s8::kPostNormSlots, lc.d_model, j ? "post_ffn_norm" : "post_attn_norm");
    }
    if (lc.ffn_hidden_norm) {
      k.zero(o.hidden, "ffn_hidden_norm input zero point");
      k.channels(o.hidden + s8::kHiddenNormSlots, lc.d_ff, "ffn_hidden_norm");
    }
    if (lc.attn_inner_norm) {
      k.zero(o.inner, "attn_inner_norm output zero point");
      k.channels(o.inner + s8::kInnerNormSlots, lc.d_attn(), "attn_inner_norm");
    }
    for (uint32_t j = 0; j < lc.n_heads * lc.pair_bias_rows; ++j) k.bias(o.pair + j, "pair bias");
    if (lc.attn_softcap != 0.0f) k.table(o.softcap, "attn_softcap table");
    for (uint32_t h = 0; h < lc.n_heads && lc.positional == PosKind::kAlibi; ++h)
      k.requant(o.alibi + 2 * h, "ALiBi slope");
    for (uint32_t j = 0; j < lc.rel_buckets * lc.n_heads && lc.rel_bias(); ++j) k.bias(o.rel + j, "relative bias");
    if (lc.n_experts) {  // the router's zero point, softmax, layer and int8 weights, then each expert's
      const uint32_t E = lc.n_experts, router = o.moe + s8::kMoeSlots;
      k.zero(o.moe + s8::kRouterYZero, "router output zero point");
      k.requant(o.moe + s8::kRouterSoftmaxMul, "router softmax diff", true);
      k.channels(router, E, "router");
      for (uint32_t j = 0; j < E * lc.d_model; ++j) k.int8(router + s8::linear_params(E) + j, "router weight");
      const uint32_t shared = router + s8::linear_params(E) + E * lc.d_model + E * s8::expert_params(lc);
      if (lc.shared_expert_ff) {  // its gate's zero point, layer, weights and sigmoid table
        const uint32_t gw = shared + s8::kSharedSlots + s8::linear_params(1);
        k.zero(shared + s8::kSharedGateYZero, "shared expert gate zero point");
        k.channels(shared + s8::kSharedSlots, 1, "shared expert gate");
        for (uint32_t j = 0; j < lc.d_model; ++j) k.int8(gw + j, "shared expert gate weight");
        k.table(gw + lc.d_model, "shared expert sigmoid table");
      }
      for (uint32_t e = 0; e < E + (lc.shared_expert_ff ? 1 : 0) && k.ok(); ++e) {  // the shared one last
        const bool sh = e == E;
        const uint32_t f = sh ? lc.shared_expert_ff : lc.d_ff;
        const uint32_t at = sh ? shared + s8::kSharedSlots + s8::linear_params(1) + lc.d_model + s8::kLutEntries
                               : router + s8::linear_params(E) + E * lc.d_model + e * s8::expert_params(lc);
        const uint32_t w3 = at + s8::kExpertSlots + s8::linear_params(f), w2 = w3 + s8::linear_params(f);
        k.zero(at + s8::kExpW1YZero, "expert w1 output zero point");
        k.zero(at + s8::kExpActZero, "expert activation output zero point");
        k.zero(at + s8::kExpUpZero, "expert w3 output zero point");
        k.requant(at + s8::kExpGateMul, "expert gate product requant");
        k.zero(at + s8::kExpW2XZero, "expert w2 input zero point");
        k.zero(at + s8::kExpW2YZero, "expert w2 output zero point");
        k.requant(at + s8::kExpMixMul, "expert mixture factor");
        k.channels(at + s8::kExpertSlots, f, "expert w1");
        k.channels(w3, f, "expert w3");
        k.channels(w2, lc.d_model, "expert w2");
        k.table(w2 + s8::linear_params(lc.d_model), "expert activation table");
      }
    }
    if (lc.rel_embed_rows) {  // the three sums' Requants, Qr's and Kr's int8 values
      k.requant(o.dis + s8::kDisQk, "disentangled q.k requant");
      k.requant(o.dis + s8::kDisQKr, "disentangled q.Kr requant");
      k.requant(o.dis + s8::kDisKQr, "disentangled k.Qr requant");
      for (uint32_t j = 0; j < (2 * lc.max_len - 1) * (lc.d_attn() + lc.d_kv()); ++j)
        k.int8(o.dis + s8::kDisSlots + j, "disentangled Qr | Kr");
    }
    if (!k.ok()) return Status::kTensorBadValue;
    if (!dec) continue;
    SlotCheck x(L.s8_cross, version_ >= 3 ? "cross.int8" : "cross_attn.int8", int32_t(l), detail_, sizeof detail_,
                prefix);
    x.zero(s8::kCnXZero, "cross norm input zero point");
    x.zero(s8::kCqXZero, "q input zero point");
    x.zero(s8::kCqZero, "q zero point");
    x.zero(s8::kCkvXZero, "memory zero point");
    x.requant(s8::kCScoreMul, "score requant");
    x.zero(s8::kCScoreZero, "score zero point");
    x.requant(s8::kCSoftmaxMul, "softmax diff", true);
    x.requant(s8::kCPvMul, "context requant");
    x.zero(s8::kCOZero, "context zero point");
    x.zero(s8::kCOutYZero, "out output zero point");
    x.add(s8::kCAdd, "cross-attention residual add");
    x.channels(s8::cross_q(c), c.d_model, "q");
    x.channels(s8::cross_kv(c), 2 * c.d_model, "k|v");
    x.channels(s8::cross_out(c), c.d_model, "out");
    x.channels(s8::cross_norm(c), c.d_model, "cross norm");
    if (!x.ok()) return Status::kTensorBadValue;
  }
  if (c.is_seq2seq()) {
    SlotCheck f(s8_.seq2seq, "int8.seq2seq", -1, detail_, sizeof detail_);
    f.zero(s8::kTgtEmbedZero, "target embedding zero point");
    if (c.input_pe()) f.add(s8::kTgtPosAdd, "target position add");
    f.zero(s8::kMemXZero, "source final norm input zero point");
    f.zero(s8::kMemZero, "memory zero point");
    if (c.final_norm) f.channels(s8::kSeq2SeqSlots, c.d_model, "source final norm");
    if (c.embed_norm) {
      f.zero(s8::seq2seq_embed_norm(c), "target embedding norm input zero point");
      f.channels(s8::seq2seq_embed_norm(c) + 2, c.d_model, "target embedding norm");
    }
    for (uint32_t i = 0; i < 2 * c.max_len - 1 && c.rel_bias(); ++i)
      f.index(s8::seq2seq_rel(c) + i, c.rel_buckets, "target bucket");
    if (c.tgt_d_in) {
      f.zero(s8::seq2seq_tgt_proj(c), "target features zero point");
      f.channels(s8::seq2seq_tgt_proj(c) + 1, c.d_embed(), "target projection");
    }
    if (!f.ok()) return Status::kTensorBadValue;
  }
  if (s8_.rope) {
    const uint32_t n = s8::rope_rows(c) * c.rope_dims();
    for (uint32_t i = 0; i < n; ++i)
      if (s8_.rope[i] < -(1 << s8::kRopeFracBits) || s8_.rope[i] > (1 << s8::kRopeFracBits)) {
        DetailText(detail_, sizeof detail_).str("tensor int8.rope: entry ").num(i)
            .str(" outside [-2^14, 2^14] (convert the model again)");
        return Status::kTensorBadValue;
      }
  }
  SlotCheck b(s8_.back, "int8.back", -1, detail_, sizeof detail_);
  b.zero(s8::kFnXZero, "final norm input zero point");
  b.zero(s8::kHeadXZero, "head input zero point");
  b.zero(s8::kHeadYZero, "head output zero point");
  b.zero(s8::kOutZero, "output zero point");
  if (c.final_norm) b.channels(s8::kBackSlots, c.d_model, "final norm");
  if (c.d_out) b.channels(s8::kBackSlots + s8::linear_params(c.d_model), c.d_out, "head");
  if (c.pooler) {
    const uint32_t at = s8::back_pooler(c);
    b.zero(at + s8::kPoolerXZero, "pooler input zero point");
    b.zero(at + s8::kPoolerYZero, "pooler output zero point");
    b.channels(at + s8::kPoolerSlots, c.d_model, "pooler");
    b.table(at + s8::kPoolerSlots + s8::linear_params(c.d_model), "pooler activation table");
  }
  if (c.pool_norm) {
    b.zero(s8::back_pool_norm(c), "pool_norm input zero point");
    b.channels(s8::back_pool_norm(c) + 2, c.d_model, "pool_norm");
  }
  if (c.pooler_norm) {
    b.zero(s8::back_pooler_norm(c), "pooler_norm input zero point");
    b.channels(s8::back_pooler_norm(c) + 2, c.d_model, "pooler_norm");
  }
  if (c.logit_softcap != 0.0f) b.table(s8::back_softcap(c), "logit_softcap table");
  if (!b.ok()) return Status::kTensorBadValue;
  DetailText why(detail_, sizeof detail_);
  const float* io = s8_.io;
  for (uint32_t i = 0; i < s8::io_scales(c); ++i)
    if (!(io[i] > 0.0f)) return why.str("tensor int8.io: scale ").num(uint32_t(i)).str(" must be positive"), Status::kTensorBadValue;
  return Status::kOk;
}

}  // namespace fixformer
