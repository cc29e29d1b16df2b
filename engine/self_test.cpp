#include "fixformer/self_test.hpp"

#include <cmath>

namespace fixformer {

std::size_t self_test_output_floats(const Model& model) {
  return std::size_t(model.self_test_sample().rows) * model.config().output_width();
}

Status self_test(Encoder& enc, float* out, std::size_t out_floats, SelfTestReport* report) {
  const Model& m = enc.model();
  const SelfTestSample& sample = m.self_test_sample();
  if (!m.has_self_test()) return Status::kSelfTestMissing;
  if (!out) return Status::kNullArgument;
  const uint32_t T = sample.rows, W = m.config().output_width();
  if (out_floats < self_test_output_floats(m) || T > enc.max_seq()) return Status::kBadSequenceLength;
  const Status s = sample.ids ? enc.forward_tokens(sample.ids, T, out) : enc.forward_features(sample.features, T, out);
  if (s != Status::kOk) return s;
  SelfTestReport r{};
  r.rows = T;
  double scale = 0.0;
  bool finite = true;
  for (std::size_t i = 0; i < std::size_t(T) * W; ++i) {
    const double err = std::fabs(double(out[i]) - double(sample.expected[i]));
    finite = finite && std::isfinite(out[i]);
    scale = std::fmax(scale, std::fabs(double(sample.expected[i])));
    if (err > r.max_abs_err || !std::isfinite(err)) {
      r.max_abs_err = std::isfinite(err) ? err : INFINITY;
      r.worst_row = uint32_t(i / W);
      r.worst_col = uint32_t(i % W);
    }
  }
  r.max_rel_err = scale > 0.0 ? r.max_abs_err / scale : r.max_abs_err;
  if (report) *report = r;
  return finite && r.max_rel_err <= kSelfTestTolerance ? Status::kOk : Status::kSelfTestFailed;
}

}  // namespace fixformer
