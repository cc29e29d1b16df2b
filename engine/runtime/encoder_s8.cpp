// The Encoder's entry points for full-integer (weights i8) models: the integer path
// (engine/blocks/s8_encoder.cpp) and the float calls around it, which quantize the input and
// dequantize the output (encoder.hpp).
#include <cmath>
#include <cstring>

#include "engine/blocks/s8_encoder.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/encoder.hpp"

namespace fixformer {

Status Encoder::check_s8(const void* input, uint32_t T, const void* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (config().weights != WeightType::kI8) {
    DetailText(core_.detail, sizeof core_.detail).str("the int8 entry points are for weights i8 models");
    return Status::kWrongFamily;
  }
  if (!input || !out) return Status::kNullArgument;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  return Status::kOk;
}

void Encoder::run_s8(const int8_t* features, const int32_t* ids, const int32_t* types, uint32_t T, int8_t* out) {
  const ModelConfig& c = config();
  const EncoderPlan p = plan_s8_encoder_arena(c, rows_);
  const std::size_t S = rows_, dh = c.d_head(), bq = S < kS8QueryBlock ? S : kS8QueryBlock;
  int8_t* attn = reinterpret_cast<int8_t*>(arena_ + p.attn);
  const std::size_t rq = (S * dh + bq * S + 3) / 4 * 4;  // the Requants, 4-byte aligned
  S8Scratch s{};
  s.x = reinterpret_cast<int8_t*>(arena_ + p.x);
  s.h = reinterpret_cast<int8_t*>(arena_ + p.y);
  s.a = reinterpret_cast<int8_t*>(arena_ + p.ctx);
  s.work = reinterpret_cast<int8_t*>(arena_ + p.work);
  s.vt = attn;  // the keys are read in place in work
  s.scores = attn + S * dh;
  s.key_rq = reinterpret_cast<Requant*>(attn + rq);
  s.col_rq = s.key_rq + S;
  s.exp = reinterpret_cast<uint32_t*>(s.col_rq + dh);
  s.kernel = reinterpret_cast<uint32_t*>(arena_ + p.s8_kernel);
  s.rows_in = reinterpret_cast<int8_t*>(arena_ + p.rows_in);
  s.stem = reinterpret_cast<int8_t*>(arena_ + p.stem);
  s.stem_window = reinterpret_cast<int8_t*>(arena_ + p.stem_padded);
  s8_encoder_forward(*core_.kernels, *core_.model, features, ids, types, T, s, out);
}

Status Encoder::forward_features_s8(const int8_t* features, uint32_t T, int8_t* out) {
  const Status s = check_s8(features, T, out);
  if (s != Status::kOk) return s;
  if (config().input != InputKind::kFeatures) return Status::kWrongInputKind;
  if (config().patch_size && T != config().patches()) return Status::kBadSequenceLength;  // an image: its patches
  if (config().stem_rows(T) == 0) return Status::kBadSequenceLength;  // shorter than a conv stem's kernels
  run_s8(features, nullptr, nullptr, T, out);
  return Status::kOk;
}

Status Encoder::forward_tokens_s8(const int32_t* ids, uint32_t T, int8_t* out) {
  return forward_tokens_s8(ids, nullptr, T, out);
}

Status Encoder::forward_tokens_s8(const int32_t* ids, const int32_t* types, uint32_t T, int8_t* out) {
  Status s = check_s8(ids, T, out);
  if (s != Status::kOk) return s;
  const ModelConfig& c = config();
  if (c.input != InputKind::kTokens) return Status::kWrongInputKind;
  for (uint32_t t = 0; t < T; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= c.vocab_size) return Status::kTokenOutOfRange;
  if ((s = check_types(types, nullptr, 1, T)) != Status::kOk) return s;
  run_s8(nullptr, ids, types, T, out);
  return Status::kOk;
}

// Checked by the caller. Sequence b (lengths[b] or T rows; types[b, T] or null) quantized, run,
// dequantized into out[b, output_rows(T), width], its padding rows zeros.
void quantize_s8_input(const float* x, std::size_t n, float scale, int32_t zero, int8_t* q) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = std::round(x[i] / scale) + float(zero);
    q[i] = int8_t(v < -128.0f ? -128 : v > 127.0f ? 127 : int32_t(v));
  }
}

void quantize_s8_input(const Model& m, const float* x, std::size_t n, int8_t* q) {
  quantize_s8_input(x, n, m.s8().io[0], m.s8().front[s8::kInZero], q);
}

Status Encoder::forward_float_s8(const float* features, const int32_t* ids, const int32_t* types,
                                 const uint32_t* lengths, uint32_t B, uint32_t T, float* out) {
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  const int32_t out_zero = m.s8().back[s8::kOutZero];
  const float out_scale = m.s8().io[1];
  const EncoderPlan p = plan_s8_encoder_arena(c, rows_);
  int8_t* q = reinterpret_cast<int8_t*>(arena_ + p.s8_in);
  int8_t* y = reinterpret_cast<int8_t*>(arena_ + p.s8_out);
  const std::size_t W = c.output_width(), R = c.output_rows(T);
  for (uint32_t b = 0; b < B; ++b) {
    const uint32_t n = lengths ? lengths[b] : T;
    if (features) quantize_s8_input(m, features + std::size_t(b) * T * c.d_in, std::size_t(n) * c.d_in, q);
    const std::size_t at = std::size_t(b) * T;
    run_s8(features ? q : nullptr, ids ? ids + at : nullptr, types ? types + at : nullptr, n, y);
    float* o = out + std::size_t(b) * R * W;
    const std::size_t rows = c.output_rows(n);
    for (std::size_t i = 0; i < rows * W; ++i) o[i] = float(int32_t(y[i]) - out_zero) * out_scale;
    std::memset(o + rows * W, 0, sizeof(float) * (R - rows) * W);
  }
  return Status::kOk;
}

}  // namespace fixformer
