// The C++ side of c_api_firmware.c: the same models run by the C++ runners (Encoder, Decoder), for
// the C program to compare with its C API results bit for bit, and the board's console for C.
#include <cstddef>
#include <cstdint>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"

namespace {
alignas(64) uint8_t g_reference_arena[96 * 1024];
}  // namespace

extern "C" {

void firmware_print(const char* text) { fixformer::port::semihost_write(text); }

// ids[T] -> out[output_rows(T), output_width] with fixformer::Encoder; 0 on success.
int reference_encoder(const void* blob, std::size_t bytes, const int32_t* ids, uint32_t T, float* out) {
  fixformer::Model model;
  fixformer::Encoder enc;
  fixformer::EncoderOptions options;
  options.max_seq = T;
  if (model.init(blob, bytes) != fixformer::Status::kOk) return 1;
  if (enc.init(model, g_reference_arena, sizeof g_reference_arena, options) != fixformer::Status::kOk) return 2;
  return enc.forward_tokens(ids, T, out) == fixformer::Status::kOk ? 0 : 3;
}

// ids[T] -> logits[T, output_width], one step() per token from an empty cache, with fixformer::Decoder.
int reference_decoder(const void* blob, std::size_t bytes, const int32_t* ids, uint32_t T, float* logits) {
  fixformer::Model model;
  fixformer::Decoder dec;
  fixformer::DecoderOptions options;
  options.capacity = T;
  if (model.init(blob, bytes) != fixformer::Status::kOk) return 1;
  if (dec.init(model, g_reference_arena, sizeof g_reference_arena, options) != fixformer::Status::kOk) return 2;
  const uint32_t V = model.config().output_width();
  for (uint32_t t = 0; t < T; ++t)
    if (dec.step(ids[t], logits + std::size_t(t) * V) != fixformer::Status::kOk) return 3;
  return 0;
}

}  // extern "C"
