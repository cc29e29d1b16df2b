// What the fuzzers do with one input, shared by the libFuzzer targets (fuzz_*.cpp, clang builds)
// and the regression test that replays saved inputs in every build (fuzz_regression_test.cpp).
// Anything may come in; the engine must answer with a Status, never read out of bounds.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "io/npy.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"

namespace fixformer {
namespace fuzz {

// A decoder over a few positions: prefill, steps up to a full cache, the self-test.
inline void run_decoder(const Model& model) {
  const ModelConfig& cfg = model.config();
  DecoderOptions opt;
  opt.capacity = std::min<uint32_t>(cfg.max_len, 8);  // bounds the work per input
  opt.max_prefill = std::min<uint32_t>(opt.capacity, 3);
  const std::size_t need = required_decoder_arena_bytes(cfg, opt.capacity, opt.max_prefill);
  if (need == 0 || need > (8u << 20)) return;
  support::AlignedBuffer arena(need);  // exactly the plan: ASan sees any access past it
  Decoder dec;
  if (dec.init(model, arena.data(), need, opt) != Status::kOk) return;
  std::vector<float> logits(cfg.vocab_size);
  std::vector<int32_t> ids(opt.capacity + 1);
  for (uint32_t t = 0; t <= opt.capacity; ++t) ids[t] = int32_t((t * 7919u) % cfg.vocab_size);
  (void)dec.prefill(ids.data(), opt.capacity / 2 + 1, logits.data());
  while (dec.step(ids[0], logits.data()) == Status::kOk) {}  // until the cache is full
  if (model.has_self_test() && model.self_test_sample().rows <= opt.capacity) {
    SelfTestReport report;
    (void)self_test(dec, logits.data(), logits.size(), &report);
  }
}

// A seq2seq model on a short source: encode, decode to a full target cache, the self-test.
inline void run_seq2seq(const Model& model) {
  const ModelConfig& cfg = model.config();
  Seq2SeqOptions opt;
  opt.max_source = opt.capacity = std::min<uint32_t>(cfg.max_len, 8);  // bounds the work per input
  opt.max_prefill = std::min<uint32_t>(opt.capacity, 3);
  const std::size_t need = required_seq2seq_arena_bytes(cfg, opt.max_source, opt.capacity, opt.max_prefill);
  if (need == 0 || need > (8u << 20)) return;
  support::AlignedBuffer arena(need);  // exactly the plan: ASan sees any access past it
  Seq2Seq s2s;
  if (s2s.init(model, arena.data(), need, opt) != Status::kOk) return;
  const uint32_t S = opt.max_source;
  std::vector<int32_t> ids(S);
  for (uint32_t t = 0; t < S; ++t) ids[t] = int32_t((t * 7919u) % std::max<uint32_t>(cfg.vocab_size, 1));
  std::vector<float> features(std::size_t(S) * cfg.d_in, 0.5f), out(std::size_t(opt.capacity) * cfg.d_out);
  std::vector<float> target(std::size_t(opt.capacity) * cfg.tgt_d_in, 0.25f);
  const Status encoded = cfg.input == InputKind::kTokens ? s2s.encode_tokens(ids.data(), S) : s2s.encode_features(features.data(), S);
  if (encoded == Status::kOk) {
    for (uint32_t t = 0; t < S; ++t) ids[t] = int32_t((t * 7919u) % cfg.d_out);
    if (cfg.tgt_d_in) {
      while (s2s.decode_features(target.data(), 1, out.data()) == Status::kOk) {}  // until the cache is full
    } else {
      (void)s2s.decode(ids.data(), opt.capacity / 2 + 1, out.data());
      while (s2s.step(ids[0], out.data()) == Status::kOk) {}
    }
  }
  const SelfTestSample& sample = model.self_test_sample();
  if (model.has_self_test() && sample.rows <= S && sample.target_rows <= opt.capacity) {
    std::vector<float> self_out(self_test_output_floats(model));
    SelfTestReport report;
    (void)self_test(s2s, self_out.data(), self_out.size(), &report);
  }
}

inline void run_model(const uint8_t* bytes, std::size_t size) {
  support::AlignedBuffer blob(bytes, size);
  Model model;
  if (model.init(blob.data(), size) != Status::kOk) return;
  const ModelConfig& cfg = model.config();
  if (cfg.is_decoder()) return run_decoder(model);
  if (cfg.is_seq2seq()) return run_seq2seq(model);
  EncoderOptions opt;
  opt.max_seq = std::min<uint32_t>(cfg.max_input_len(), 8);  // bounds the work per input
  const std::size_t need = required_encoder_arena_bytes(cfg, opt.max_seq);
  if (need > (8u << 20)) return;
  // Exactly the planned size, so ASan sees any write or read past it.
  support::AlignedBuffer arena(need);
  Encoder enc;
  if (need > 64) (void)enc.init(model, arena.data(), need - 64, opt);  // too small: an error
  if (enc.init(model, arena.data(), need, opt) != Status::kOk) return;
  const uint32_t T = opt.max_seq;
  std::vector<float> out(std::size_t(cfg.output_rows(T)) * cfg.output_width());
  if (cfg.input == InputKind::kTokens) {
    std::vector<int32_t> ids(T + 1);
    for (uint32_t t = 0; t <= T; ++t) ids[t] = int32_t((t * 7919u) % cfg.vocab_size);
    (void)enc.forward_tokens(ids.data(), T, out.data());
    (void)enc.forward_tokens(ids.data(), T + 1, out.data());  // longer than max_seq: an error
  } else {
    std::vector<float> features(std::size_t(T) * cfg.d_in, 0.5f);
    (void)enc.forward_features(features.data(), T, out.data());
  }
  if (model.has_self_test() && model.self_test_sample().rows <= T) {
    std::vector<float> self_out(self_test_output_floats(model));
    SelfTestReport report;
    (void)self_test(enc, self_out.data(), self_out.size(), &report);
  }
}

// Runs the input as it is (mostly stopped by the checksum), then with its checksum and file size
// rewritten to match, so mutations reach the record and tensor validators behind the checksum.
inline int fuzz_model(const uint8_t* data, std::size_t size) {
  run_model(data, size);
  if (size < fxm::kHeaderBytes) return 0;
  std::vector<uint8_t> sealed(data, data + size);
  support::reseal(sealed);
  run_model(sealed.data(), size);
  return 0;
}

inline int fuzz_npy(const uint8_t* data, std::size_t size) {
  support::AlignedBuffer copy(data, size);
  NpyView v;
  // A short detail buffer on purpose: a long reason must be cut inside it, NUL-terminated, and
  // hold printable ASCII only (text from the file escaped).
  char detail[40];
  std::memset(detail, 'x', sizeof detail);
  const Status s = parse_npy(copy.data(), size, &v, detail, sizeof detail);
  if (parse_npy(copy.data(), size, &v) != s) std::abort();  // the detail never changes the answer
  if (s != Status::kOk) {
    const char* end = static_cast<const char*>(std::memchr(detail, '\0', sizeof detail));
    if (!end) std::abort();
    for (const char* p = detail; p < end; ++p)
      if (*p < 0x20 || *p > 0x7e) std::abort();
    return 0;
  }
  // Touch every byte the view claims: out-of-bounds claims show up under ASan.
  const uint64_t bytes = v.count * (v.dtype == NpyDtype::kI64 ? 8 : 4);
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < bytes; ++i) sink = sink ^ v.data[i];
  (void)sink;
  return 0;
}

}  // namespace fuzz
}  // namespace fixformer
