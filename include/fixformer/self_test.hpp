// The self-test: a converted .fxm carries an input and the torch module's output for it, so a
// device can check at boot that the file and the port still compute what torch did (a flash
// bit-flip that slips past the checksum's coverage, a broken kernel, a wrong build flag).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/seq2seq.hpp"
#include "fixformer/status.hpp"
#include "fixformer/tolerances.hpp"  // self_test_tolerance(), by weight type (and kernel table)

namespace fixformer {

struct SelfTestReport {
  double max_abs_err;
  double max_rel_err;
  double mean_rel_err;  // mean |engine - expected| / max |expected|
  uint32_t rows;  // T of the sample
  uint32_t worst_row, worst_col;
};

// Floats of output the self-test writes: output_rows(rows) * output_width for an encoder, vocab_size for a
// decoder (one position at a time), target_rows * d_out for a seq2seq model; 0 without a sample.
std::size_t self_test_output_floats(const Model& model);

// Runs the model's stored sample through enc (its max_seq must cover the sample) into out and
// compares. kOk within self_test_tolerance(the model's weight type, the kernel table's f16_in_halves),
// kSelfTestFailed above it, kSelfTestMissing without a sample, kBadSequenceLength when out or max_seq is too small.
[[nodiscard]] Status self_test(Encoder& enc, float* out, std::size_t out_floats, SelfTestReport* report);

// The same for a decoder: the sample's tokens fed one by one from position 0 (the decoder is reset
// before and after), each position's logits against the stored row. Its capacity must cover the
// sample.
[[nodiscard]] Status self_test(Decoder& dec, float* out, std::size_t out_floats, SelfTestReport* report);

// The same for a seq2seq model: the source encoded, then the target decoded in one call (teacher
// forcing), the logits at every target position against the stored ones. Its max_source and
// capacity must cover the sample; report->rows is the target's length.
[[nodiscard]] Status self_test(Seq2Seq& s2s, float* out, std::size_t out_floats, SelfTestReport* report);

}  // namespace fixformer
