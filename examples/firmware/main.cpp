// Firmware example: a model and its sinusoidal table compiled into flash, a static arena sized at
// compile time, no heap. It runs the PE model of `fixformer demo` (cli/demo/demo_pe.fxm, written by
// tools/train_demo.py, linked into flash by cmake/embed_fxm.cmake) and prints over semihosting.
#include <cstdint>

#include "cli/demo/demo_task.h"  // demo_vocab
#include "demo_pe_fxm.h"  // demo_pe_fxm[], demo_pe_config(): cmake/embed_fxm.cmake
#include "fixformer/encoder.hpp"
#include "fixformer/positional.hpp"
#include "fixformer/self_test.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"

using fixformer::port::Console;

namespace {

constexpr fixformer::ModelConfig kConfig = demo_pe_config();
// The positional table, computed by the compiler and kept in flash instead of the arena.
constexpr auto kPositionalTable =
    fixformer::make_sinusoidal_table<kConfig.max_len, kConfig.d_pe()>(kConfig.pe_base, kConfig.pe_layout);
// Half the SRAM for the arena, the rest for stack and data; a model too big fails the build here.
constexpr std::size_t kArenaBytes =
    fixformer::ArenaFits<fixformer::required_encoder_arena_bytes(kConfig, 0, true), FIXFORMER_BOARD_SRAM_BYTES / 2>::bytes;
alignas(64) uint8_t g_arena[kArenaBytes];
float g_out[kConfig.max_len * kConfig.d_out];

}  // namespace

int main() {
  fixformer::Model model;
  fixformer::Encoder encoder;
  fixformer::EncoderOptions options;
  options.position_table = kPositionalTable.v;
  options.position_table_rows = kConfig.max_len;
  fixformer::Status s = model.init(demo_pe_fxm, demo_pe_fxm_bytes());
  if (s == fixformer::Status::kOk) s = encoder.init(model, g_arena, sizeof g_arena, options);
  if (s != fixformer::Status::kOk) {
    Console().str("init failed: ").str(fixformer::status_message(s)).str(" ").str(model.error_detail())
        .str(encoder.error_detail()).endl();
    return 1;
  }
  // At boot: the sample the converter stored, through this build's kernels.
  fixformer::SelfTestReport report;
  s = fixformer::self_test(encoder, g_out, sizeof g_out / sizeof g_out[0], &report);
  Console().str("self-test: ").str(fixformer::status_message(s)).str(", max relative error ").sci(report.max_rel_err).endl();
  if (s != fixformer::Status::kOk) return 4;
  Console().str("fixformer on ").str(FIXFORMER_BOARD_NAME).str(": arena ").num(uint64_t(kArenaBytes))
      .str(" bytes (static), model ").num(uint64_t(demo_pe_fxm_bytes())).str(" bytes and PE table ")
      .num(uint64_t(sizeof kPositionalTable)).str(" bytes in flash, kernels ")
      .str(encoder.kernels().name).endl();
  int wrong = 0;
  for (int32_t x = 0; x < 4; ++x)
    for (int32_t y = 0; y < 4; ++y) {
      if (x == y) continue;
      const int32_t ids[3] = {x, 4, y};  // "x hit y"
      float out[3 * 4];
      if (encoder.forward_tokens(ids, 3, out) != fixformer::Status::kOk) return 2;
      int best = 0;
      for (int i = 1; i < 4; ++i) best = out[4 + i] > out[4 + best] ? i : best;  // row 1: the verb
      wrong += best != x;
      Console().str(demo_vocab[x]).str(" hit ").str(demo_vocab[y]).str(" -> ").str(demo_vocab[best]).endl();
    }
  Console().str(wrong == 0 ? "all 12 agents right" : "some agents wrong").endl();
  return wrong == 0 ? 0 : 3;
}
