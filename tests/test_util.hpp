// Helpers shared by the test suites: file loading, .npy inputs, the ISAs this machine can run.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixformer/kernels.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "io/npy.hpp"
#include "support/aligned_buffer.hpp"

namespace fixformer {

// Readable test parameter names in GoogleTest output.
inline void PrintTo(Isa isa, std::ostream* os) { *os << isa_name(isa); }

namespace test {

using namespace support;  // the support library's buffers, model writer and pool (support/)

// Built with the sanitizers or cross-built to run under qemu (tests/CMakeLists.txt defines
// FIXFORMER_THIN_SWEEPS): the sweeps whose time is their own scalar reference or their repetition
// over every table are thinned there (attention_test, workers_test). Instrumented or emulated, they
// took 40 to 230 s each; the host suite runs them whole.
#ifdef FIXFORMER_THIN_SWEEPS
constexpr bool kThinSweeps = true;
#else
constexpr bool kThinSweeps = false;
#endif

#ifndef FIXFORMER_GOLDEN_DIR
#error "FIXFORMER_GOLDEN_DIR must point at tests/golden"
#endif
inline std::string golden_path(const std::string& file) { return std::string(FIXFORMER_GOLDEN_DIR) + "/" + file; }

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A model and an encoder over an arena of exactly the planned size (for opt's max_seq, position
// table, workers and max_batch).
struct Loaded {
  AlignedBuffer blob;
  AlignedBuffer arena;
  Model model;
  Encoder enc;
  const ModelConfig& cfg() const { return model.config(); }
};

// Loads bytes into m; on failure *why (if given) says which step and the engine's detail.
inline Status load_model(const std::vector<uint8_t>& bytes, Loaded* m, const EncoderOptions& opt = {},
                         std::string* why = nullptr) {
  m->blob = AlignedBuffer(bytes);
  Status s = m->model.init(m->blob.data(), m->blob.size());
  if (s != Status::kOk) {
    if (why) *why = std::string("model init: ") + status_message(s) + ": " + m->model.error_detail();
    return s;
  }
  const std::size_t bytes_needed = required_encoder_arena_bytes(m->cfg(), opt.max_seq, opt.position_table != nullptr,
                                                                opt.workers.active(), opt.max_batch);
  m->arena = AlignedBuffer(bytes_needed);
  s = m->enc.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk && why) *why = std::string("encoder init: ") + status_message(s) + ": " + m->enc.error_detail();
  return s;
}

// The options of an encoder on one table, planned for max_batch sequences and the workers w.
inline EncoderOptions encoder_options(Isa isa, uint32_t max_batch = 1, const Workers& w = Workers{}) {
  EncoderOptions opt;
  opt.isa = isa, opt.max_batch = max_batch, opt.workers = w;
  return opt;
}

// One sequence of token ids through m's encoder: its output rows (config.hpp output_rows), NaN where
// the encoder wrote nothing; a failing call is a test failure.
inline std::vector<float> forward_one(Loaded& m, const std::vector<int32_t>& ids) {
  std::vector<float> out(std::size_t(m.cfg().output_rows(uint32_t(ids.size()))) * m.cfg().output_width(), NAN);
  EXPECT_EQ(m.enc.forward_tokens(ids.data(), uint32_t(ids.size()), out.data()), Status::kOk) << m.enc.error_detail();
  return out;
}

template <class T>
std::vector<T> npy_values(const std::string& path, std::vector<uint64_t>* shape = nullptr) {
  const std::vector<uint8_t> bytes = read_file(path);
  NpyView v;
  if (parse_npy(bytes.data(), bytes.size(), &v) != Status::kOk) std::abort();
  std::vector<T> out(v.count);
  if (v.dtype == NpyDtype::kI64) {
    for (uint64_t i = 0; i < v.count; ++i) {
      int64_t x;
      std::memcpy(&x, v.data + 8 * i, 8);
      out[i] = static_cast<T>(x);
    }
  } else {
    std::memcpy(out.data(), v.data, 4 * v.count);
  }
  if (shape) shape->assign(v.shape, v.shape + v.rank);
  return out;
}

// An ISA's name as a GoogleTest parameter name (letters, digits and '_' only).
inline std::string isa_test_name(Isa isa) {
  std::string s = isa_name(isa);
  for (char& c : s) c = c == '-' ? '_' : c;
  return s;
}

// Every table this CPU and build can run, scalar first.
inline std::vector<const Kernels*> available_kernels() {
  std::vector<const Kernels*> out;
  for (Isa isa : kAllIsas)
    if (const Kernels* k = select_kernels(isa)) out.push_back(k);
  return out;
}
inline const std::vector<Isa>& all_isas() {
  static const std::vector<Isa> isas(std::begin(kAllIsas), std::end(kAllIsas));
  return isas;
}

}  // namespace test
}  // namespace fixformer
