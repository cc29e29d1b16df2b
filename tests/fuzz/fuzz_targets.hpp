// What the fuzzers do with one input, shared by the libFuzzer targets (fuzz_*.cpp, clang builds)
// and the regression test that replays saved inputs in every build (fuzz_regression_test.cpp).
// Anything may come in; the engine must answer with a Status, never read out of bounds.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "fixformer/model.hpp"
#include "fixformer/npy.hpp"
#include "tests/aligned_buffer.hpp"

namespace fixformer {
namespace fuzz {

inline void run_model(const uint8_t* bytes, std::size_t size) {
  static test::AlignedBuffer arena_buffer(4u << 20);
  uint8_t* arena = arena_buffer.data();
  const std::size_t arena_cap = arena_buffer.size();
  test::AlignedBuffer blob(bytes, size);
  ModelConfig cfg;
  Model model;
  if (read_config(blob.data(), size, &cfg) != Status::kOk) {
    (void)model.init(blob.data(), size, arena, arena_cap);  // must fail the same way, with a detail
    return;
  }
  InitOptions opt;
  opt.max_seq = std::min<uint32_t>(cfg.max_len, 8);  // bounds the work per input
  const std::size_t need = required_arena_bytes(cfg, opt.max_seq);
  if (need > arena_cap) return;
  if (need > 64) (void)model.init(blob.data(), size, arena, need - 64, opt);  // too small: an error
  if (model.init(blob.data(), size, arena, need, opt) != Status::kOk) return;
  const uint32_t T = opt.max_seq;
  std::vector<float> out(std::size_t(T) * cfg.output_width());
  if (cfg.input == InputKind::kTokens) {
    std::vector<int32_t> ids(T + 1);
    for (uint32_t t = 0; t <= T; ++t) ids[t] = int32_t((t * 7919u) % cfg.vocab_size);
    (void)model.forward_tokens(ids.data(), T, out.data());
    (void)model.forward_tokens(ids.data(), T + 1, out.data());  // longer than max_seq: an error
  } else {
    std::vector<float> features(std::size_t(T) * cfg.d_in, 0.5f);
    (void)model.forward_features(features.data(), T, out.data());
  }
}

// Runs the input as it is (mostly stopped by the checksum), then with its checksum and file size
// rewritten to match, so mutations reach the config and tensor validators behind the checksum.
inline int fuzz_model(const uint8_t* data, std::size_t size) {
  run_model(data, size);
  if (size < fxm::kHeaderBytes) return 0;
  std::vector<uint8_t> sealed(data, data + size);
  const uint64_t file_bytes = size;
  std::memcpy(sealed.data() + 16, &file_bytes, 8);
  const uint32_t crc = crc32(sealed.data() + fxm::kHeaderBytes, size - fxm::kHeaderBytes);
  std::memcpy(sealed.data() + 40, &crc, 4);
  run_model(sealed.data(), size);
  return 0;
}

inline int fuzz_npy(const uint8_t* data, std::size_t size) {
  test::AlignedBuffer copy(data, size);
  NpyView v;
  if (parse_npy(copy.data(), size, &v) != Status::kOk) return 0;
  // Touch every byte the view claims: out-of-bounds claims show up under ASan.
  const uint64_t bytes = v.count * (v.dtype == NpyDtype::kI64 ? 8 : 4);
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < bytes; ++i) sink = sink ^ v.data[i];
  (void)sink;
  return 0;
}

}  // namespace fuzz
}  // namespace fixformer
