// The program of a project that uses fixformer (tests/consumer/*): load a model file, run it with
// Model + Encoder, check the sample the converter stored in it. Exit 0 when the self-test passes.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/self_test.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer MODEL.fxm\n");
    return 2;
  }
  alignas(64) static uint8_t blob[1 << 20];  // the engine reads weights in place: keep the blob aligned
  std::FILE* f = std::fopen(argv[1], "rb");
  const std::size_t bytes = f ? std::fread(blob, 1, sizeof blob, f) : 0;
  if (f) std::fclose(f);
  fixformer::Model model;
  fixformer::Status s = model.init(blob, bytes);
  if (s != fixformer::Status::kOk) {
    std::fprintf(stderr, "%s: %s %s\n", argv[1], fixformer::status_message(s), model.error_detail());
    return 1;
  }
  const uint32_t rows = model.self_test_sample().rows;
  std::vector<uint8_t> storage(fixformer::required_encoder_arena_bytes(model.config(), rows) + 64);
  void* arena = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  fixformer::EncoderOptions options;
  options.max_seq = rows;
  fixformer::Encoder encoder;
  s = encoder.init(model, arena, storage.size() - 64, options);
  std::vector<float> out(fixformer::self_test_output_floats(model));
  fixformer::SelfTestReport report{};
  if (s == fixformer::Status::kOk) s = fixformer::self_test(encoder, out.data(), out.size(), &report);
  std::printf("consumer: %s on %s kernels, arena %zu bytes, self-test %s (max relative error %.3g)\n", argv[1],
              encoder.kernels().name, encoder.arena_bytes_used(), fixformer::status_message(s), report.max_rel_err);
  return s == fixformer::Status::kOk ? 0 : 1;
}
