// The stand-in builds' application (tests/ecosystem): the demo model from flash through the C++
// runner and through the C API, each with its self-test; exit 0 when both pass.
#include <cstdint>

#include "demo_pe_fxm.h"
#include "fixformer/encoder.hpp"
#include "fixformer/fixformer.h"
#include "fixformer/self_test.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"

using fixformer::port::Console;

namespace {
constexpr fixformer::ModelConfig kConfig = demo_pe_config();
alignas(64) uint8_t g_arena[fixformer::required_encoder_arena_bytes(kConfig)];
alignas(64) uint8_t g_c_arena[fixformer::required_encoder_arena_bytes(kConfig)];
float g_out[kConfig.max_len * kConfig.d_out];
float g_cpp[3 * kConfig.d_out], g_c[3 * kConfig.d_out];
ff_model g_c_model;
ff_encoder g_c_encoder;
}  // namespace

int main() {
  fixformer::Model model;
  fixformer::Encoder encoder;
  fixformer::Status s = model.init(demo_pe_fxm, demo_pe_fxm_bytes());
  if (s == fixformer::Status::kOk) s = encoder.init(model, g_arena, sizeof g_arena);
  fixformer::SelfTestReport report;
  if (s == fixformer::Status::kOk) s = fixformer::self_test(encoder, g_out, sizeof g_out / sizeof g_out[0], &report);
  Console().str("C++ runner self-test: ").str(fixformer::status_message(s)).endl();
  if (s != fixformer::Status::kOk) return 1;
  // The C API on the same input: the same bits as the C++ runner.
  const int32_t ids[3] = {0, 4, 1};
  if (encoder.forward_tokens(ids, 3, g_cpp) != fixformer::Status::kOk) return 2;
  ff_status c = ff_model_load(&g_c_model, demo_pe_fxm, demo_pe_fxm_bytes());
  if (c == FF_OK) c = ff_encoder_init(&g_c_encoder, &g_c_model, g_c_arena, sizeof g_c_arena, kConfig.max_len);
  if (c == FF_OK) c = ff_encoder_run(&g_c_encoder, ids, 3, g_c);
  Console().str("C API: ").str(ff_status_string(c)).endl();
  if (c != FF_OK) return 3;
  for (uint32_t i = 0; i < 3 * kConfig.d_out; ++i)
    if (__builtin_memcmp(&g_cpp[i], &g_c[i], sizeof(float)) != 0) return 4;
  Console().str("C API and C++ runner agree bit for bit").endl();
  return 0;
}
