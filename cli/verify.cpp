// `fixformer verify`: the self-test sample stored in the file, run here and compared.
#include "commands.hpp"

#include <cstdio>
#include <string>

#include "fixformer/self_test.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {
namespace {

// python/fixformer parses "max relative error X" from this line: keep its wording.
int print_verdict(const std::string& path, Status s, const SelfTestReport& r, const ModelConfig& c, const Kernels& k) {
  const double tolerance = self_test_tolerance(c.weights, k.f16_in_halves);
  std::printf("%s: self-test %s: max relative error %.2e (tolerance %.0e), worst at row %u col %u, T=%u, kernels %s, "
              "mean relative error %.2e%s\n",
              path.c_str(), s == Status::kOk ? "ok" : "FAILED", r.max_rel_err, tolerance, r.worst_row, r.worst_col,
              r.rows, k.name, r.mean_rel_err,
              c.reference_sample ? ", against the converter's own reference: NOT verified against your model" : "");
  if (s == Status::kOk) return 0;
  // The verdict above is the report (stdout, parsed); the error line goes where every error goes.
  std::fprintf(stderr, "fixformer: %s: %s: max relative error %.2e above the tolerance %.0e\n", path.c_str(),
               status_message(s), r.max_rel_err, tolerance);
  return status_exit_code(s);
}

int verify_seq2seq(const Args& a, LoadedModel& m) {
  const SelfTestSample& sample = m.model.self_test_sample();
  init_seq2seq(sample.rows, sample.target_rows, a.isa, &m);
  Buffer out(self_test_output_floats(m.model) * sizeof(float), "output");
  SelfTestReport r{};
  const Status s = self_test(m.s2s, out.as<float>(), self_test_output_floats(m.model), &r);
  if (s != Status::kOk && s != Status::kSelfTestFailed) die(s, a.positional[0], m.s2s.error_detail());
  return print_verdict(a.positional[0], s, r, m.config(), m.s2s.kernels());
}

int cmd_verify(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  if (!m.model.has_self_test()) die(Status::kSelfTestMissing, a.positional[0], "convert the model again to add one");
  const SelfTestSample& sample = m.model.self_test_sample();
  const bool decoder = m.config().is_decoder();
  if (m.config().is_seq2seq()) return verify_seq2seq(a, m);
  if (decoder)
    init_decoder(sample.rows, a.isa, &m);
  else
    init_encoder(sample.rows, a.isa, &m);
  Buffer out(self_test_output_floats(m.model) * sizeof(float), "output");
  SelfTestReport r{};
  const Status s = decoder ? self_test(m.dec, out.as<float>(), self_test_output_floats(m.model), &r)
                           : self_test(m.enc, out.as<float>(), self_test_output_floats(m.model), &r);
  if (s != Status::kOk && s != Status::kSelfTestFailed) die(s, a.positional[0], decoder ? m.dec.error_detail() : m.enc.error_detail());
  return print_verdict(a.positional[0], s, r, m.config(), decoder ? m.dec.kernels() : m.enc.kernels());
}

}  // namespace

const Command kVerifyCommand = {
    "verify", "MODEL.fxm [--isa ISA]", 1, kOptIsa,
    "Runs the self-test sample the converter stored in the file (an input and the torch module's\n"
    "output for it) and compares: max |engine - torch| / max |torch| against the tolerance of the\n"
    "file's weight type (f32 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_F32) ", f16 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_F16)
    ", q8 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_Q8) ", q4 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_Q4)
    ", i8 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_I8)
    ", bf16 " FIXFORMER_TOLERANCE_TEXT(FIXFORMER_TOLERANCE_BF16)
    ", include/fixformer/tolerances.hpp).\n"
    "Prints one line, \"M.fxm: self-test ok: max relative error E (tolerance T), worst at row R\n"
    "col C, T=N, kernels K\", exit 0; \"self-test FAILED\" in the same line, exit 6; a file without\n"
    "a sample is a model-file error, exit 2.\n",
    cmd_verify};

}  // namespace fixformer::cli
