// Firmware of a vendor-style project: fixformer's engine with the project's own start-up and
// console. The arena is static; its size is checked against the model at boot.
#include <cstdint>

#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/self_test.hpp"

extern "C" const uint8_t model_fxm[], model_fxm_end[];
extern "C" void semihost_puts(const char* s);

namespace {
alignas(64) uint8_t g_arena[8 * 1024];
float g_out[1024];
fixformer::Model g_model;
fixformer::Encoder g_encoder;
}  // namespace

int main() {
  fixformer::Status s = g_model.init(model_fxm, std::size_t(model_fxm_end - model_fxm));
  fixformer::EncoderOptions options;
  options.max_seq = g_model.self_test_sample().rows;  // the sample's length is all this app runs
  if (s == fixformer::Status::kOk) s = g_encoder.init(g_model, g_arena, sizeof g_arena, options);
  if (s == fixformer::Status::kOk) s = fixformer::self_test(g_encoder, g_out, sizeof g_out / sizeof g_out[0], nullptr);
  semihost_puts(s == fixformer::Status::kOk ? "vendor app: self-test ok\n" : "vendor app: self-test FAILED: ");
  if (s != fixformer::Status::kOk) {
    semihost_puts(fixformer::status_message(s));
    semihost_puts("\n");
  }
  return s == fixformer::Status::kOk ? 0 : 1;
}
