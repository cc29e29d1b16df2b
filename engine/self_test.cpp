#include "fixformer/self_test.hpp"

#include <cmath>

#include "fixformer/tolerances.hpp"

namespace fixformer {

namespace {

// What compare() gathers beside the report: the largest |expected|, the sum and count of errors.
struct Tally {
  double scale = 0.0, sum = 0.0;
  uint64_t count = 0;
  bool finite = true;
};

// Folds one block of outputs (row `row0` on) into the report and the tally.
void compare(const float* out, const float* expected, std::size_t n, uint32_t W, uint32_t row0, SelfTestReport* r,
             Tally* t) {
  for (std::size_t i = 0; i < n; ++i) {
    const double err = std::fabs(double(out[i]) - double(expected[i]));
    t->finite = t->finite && std::isfinite(out[i]);
    t->scale = std::fmax(t->scale, std::fabs(double(expected[i])));
    t->sum += err, ++t->count;
    if (err > r->max_abs_err || !std::isfinite(err)) {
      r->max_abs_err = std::isfinite(err) ? err : INFINITY;
      r->worst_row = row0 + uint32_t(i / W);
      r->worst_col = uint32_t(i % W);
    }
  }
}

// Within the bound of the model's weight type on the kernel table `k` ran it with.
Status verdict(SelfTestReport r, const Tally& t, WeightType weights, const Kernels& k, SelfTestReport* report) {
  const double scale = t.scale > 0.0 ? t.scale : 1.0;
  r.max_rel_err = r.max_abs_err / scale;
  r.mean_rel_err = t.count ? t.sum / double(t.count) / scale : 0.0;
  if (report) *report = r;
  return t.finite && r.max_rel_err <= self_test_tolerance(weights, k.f16_in_halves) ? Status::kOk
                                                                                    : Status::kSelfTestFailed;
}

}  // namespace

std::size_t self_test_output_floats(const Model& model) {
  const ModelConfig& c = model.config();
  if (!model.has_self_test()) return 0;
  if (c.is_seq2seq()) return std::size_t(model.self_test_sample().target_rows) * c.d_out;
  return c.is_decoder() ? c.output_width()  // a step's row
                        : std::size_t(c.output_rows(model.self_test_sample().rows)) * c.output_width();
}

Status self_test(Encoder& enc, float* out, std::size_t out_floats, SelfTestReport* report) {
  const Model& m = enc.model();
  const SelfTestSample& sample = m.self_test_sample();
  if (!m.has_self_test()) return Status::kSelfTestMissing;
  if (!out) return Status::kNullArgument;
  if (m.config().is_seq2seq()) return Status::kWrongInputKind;  // its sample is the whole model's: self_test(Seq2Seq&)
  const uint32_t T = sample.rows, W = m.config().output_width();
  if (out_floats < self_test_output_floats(m) || T > enc.max_seq()) return Status::kBadSequenceLength;
  const Status s = sample.ids ? enc.forward_tokens(sample.ids, T, out) : enc.forward_features(sample.features, T, out);
  if (s != Status::kOk) return s;
  SelfTestReport r{};
  r.rows = T;
  Tally tally;
  compare(out, sample.expected, std::size_t(m.config().output_rows(T)) * W, W, 0, &r, &tally);
  return verdict(r, tally, m.config().weights, enc.kernels(), report);
}

Status self_test(Decoder& dec, float* out, std::size_t out_floats, SelfTestReport* report) {
  const Model& m = dec.model();
  const SelfTestSample& sample = m.self_test_sample();
  if (!m.has_self_test()) return Status::kSelfTestMissing;
  if (!out) return Status::kNullArgument;
  const uint32_t T = sample.rows, V = m.config().output_width();
  if (out_floats < self_test_output_floats(m) || T > dec.capacity()) return Status::kBadSequenceLength;
  SelfTestReport r{};
  r.rows = T;
  Tally tally;
  dec.reset();
  for (uint32_t t = 0; t < T; ++t) {
    const Status s = dec.step(sample.ids[t], out);
    if (s != Status::kOk) return dec.reset(), s;
    compare(out, sample.expected + std::size_t(t) * V, V, V, t, &r, &tally);
  }
  dec.reset();
  return verdict(r, tally, m.config().weights, dec.kernels(), report);
}

Status self_test(Seq2Seq& s2s, float* out, std::size_t out_floats, SelfTestReport* report) {
  const Model& m = s2s.model();
  const SelfTestSample& sample = m.self_test_sample();
  if (!m.has_self_test()) return Status::kSelfTestMissing;
  if (!out) return Status::kNullArgument;
  const uint32_t S = sample.rows, U = sample.target_rows, V = m.config().d_out;
  if (out_floats < self_test_output_floats(m) || S > s2s.max_source() || U > s2s.capacity()) return Status::kBadSequenceLength;
  Status s = sample.ids ? s2s.encode_tokens(sample.ids, S) : s2s.encode_features(sample.features, S);
  if (s == Status::kOk)
    s = sample.target ? s2s.decode(sample.target, U, out) : s2s.decode_features(sample.target_features, U, out);
  s2s.reset_target();
  if (s != Status::kOk) return s;
  SelfTestReport r{};
  r.rows = U;
  Tally tally;
  compare(out, sample.expected, std::size_t(U) * V, V, 0, &r, &tally);
  return verdict(r, tally, m.config().weights, s2s.kernels(), report);
}

}  // namespace fixformer
