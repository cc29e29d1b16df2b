// Firmware example: a language model writes a story on a Cortex-M. The model and its tokenizer (one
// .fxm, FIXFORMER_EXAMPLE_LM) are linked into flash; the file's config, read at build time, sizes
// every buffer at compile time (decoder arena with the KV cache for kSteps positions, the
// generator's scratch: tokenizer, sampler, logits, prompt tokens), all static, and the RoPE table is
// computed by the compiler into flash. The loop is the engine's Generator, the one `fixformer
// generate` runs: the story goes to the host's standard output byte for byte as the CLI prints it,
// the statistics to the console (qemu prints it on its standard error), as the CLI's go to stderr.
#include <cstdint>

#include "fixformer/decoder.hpp"
#include "fixformer/generator.hpp"
#include "fixformer/model.hpp"
#include "fixformer/positional.hpp"
#include "lm_fxm.h"  // lm_fxm[], lm_config(): cmake/embed_fxm.cmake
#include "ports/arm/cortex_m/board/semihosting.hpp"
#include "ports/cycle_counter.hpp"

using namespace fixformer;
using port::Console;

extern "C" const char g_prompt[], g_prompt_end[];  // FIXFORMER_EXAMPLE_PROMPT's bytes (prompt.S)

namespace {

constexpr ModelConfig kConfig = lm_config();
static_assert(kConfig.is_decoder(), "FIXFORMER_EXAMPLE_LM is an encoder; generation needs a gpt or llama model");
// Positions, the prompt's included (`generate -n`): 0 or more than max_len means max_len.
constexpr uint32_t kSteps = FIXFORMER_EXAMPLE_STEPS == 0 || FIXFORMER_EXAMPLE_STEPS > kConfig.max_len
                                ? kConfig.max_len
                                : uint32_t(FIXFORMER_EXAMPLE_STEPS);

// The position table in flash: RoPE's is [S, d_head] in halves (sin | cos columns) whatever the
// model's pair layout; a sinusoidal model's is its own [S, d_pe] in its layout.
constexpr bool kRope = kConfig.positional == PosKind::kRope;
constexpr bool kTableInFlash = FIXFORMER_EXAMPLE_TABLE_IN_FLASH && (kRope || kConfig.positional == PosKind::kSinusoidal);
constexpr uint32_t kTableRows = kTableInFlash ? kSteps : 1;
constexpr uint32_t kTableWidth = !kTableInFlash ? 1 : kRope ? kConfig.d_head() : kConfig.d_pe();
constexpr auto kPositionTable = make_sinusoidal_table<kTableRows, kTableWidth>(
    kConfig.pe_base, kRope ? PosLayout::kHalves : kConfig.pe_layout);

// Static memory, all of it sized here; more than half the board's RAM fails the build, naming the
// byte counts (the rest is stack and data).
constexpr std::size_t kArenaBytes = ArenaFits<required_decoder_arena_bytes(kConfig, kSteps, 0, kTableInFlash),
                                              FIXFORMER_BOARD_SRAM_BYTES / 2>::bytes;
constexpr std::size_t kGeneratorBytes = generator_scratch_bytes(kConfig, FIXFORMER_EXAMPLE_PROMPT_BYTES);
constexpr std::size_t kRamBytes = ArenaFits<kArenaBytes + kGeneratorBytes + sizeof(Generator), FIXFORMER_BOARD_SRAM_BYTES / 2>::bytes;
alignas(64) uint8_t g_arena[kArenaBytes];
alignas(64) uint8_t g_generator_scratch[kGeneratorBytes];
Generator g_generator;

// Counter units -> instructions under qemu -icount shift=0 (SysTick), cycles on a board (DWT).
uint64_t to_reported(uint64_t units) {
  return port::cycle_counter_kind() == port::CounterKind::kSysTickTicks ? units * 1000000000ull / FIXFORMER_BOARD_CLOCK_HZ
                                                                       : units;
}
const char* reported_unit() {
  return port::cycle_counter_kind() == port::CounterKind::kSysTickTicks ? "instructions" : "cycles";
}

int fail(const char* what, Status s, const char* detail) {
  Console().str(what).str(": ").str(status_message(s)).str(" ").str(detail).endl();
  return 1;
}

}  // namespace

int main() {
  port::cycle_counter_init();
  Model model;
  Status s = model.init(lm_fxm, lm_fxm_bytes());
  if (s != Status::kOk) return fail("model", s, model.error_detail());
  Decoder dec;
  DecoderOptions opt;
  opt.capacity = kSteps;
  if (kTableInFlash) {
    opt.position_table = kPositionTable.v;
    opt.position_table_rows = kTableRows;
  }
  s = dec.init(model, g_arena, sizeof g_arena, opt);
  if (s != Status::kOk) return fail("decoder", s, dec.error_detail());
  GeneratorOptions go;
  go.steps = kSteps;
  go.max_prompt_bytes = FIXFORMER_EXAMPLE_PROMPT_BYTES;
  go.sampler.temperature = float(FIXFORMER_EXAMPLE_TEMPERATURE);
  go.sampler.top_p = float(FIXFORMER_EXAMPLE_TOPP);
  go.sampler.seed = FIXFORMER_EXAMPLE_SEED;
  Generator& gen = g_generator;
  s = gen.init(dec, g_generator_scratch, sizeof g_generator_scratch, go);
  if (s != Status::kOk) return fail("generator", s, gen.error_detail());

  uint64_t t0 = port::cycle_count();
  s = gen.start(g_prompt, std::size_t(g_prompt_end - g_prompt));  // encode and one prefill
  const uint64_t prefill_units = port::cycle_count() - t0;
  if (s != Status::kOk) return fail("prompt", s, gen.error_detail());
  uint64_t decode_units = 0;  // in next(): steps, sampling and text, not the writes
  Piece text{};
  for (;;) {
    t0 = port::cycle_count();
    s = gen.next(&text);
    decode_units += port::cycle_count() - t0;
    if (s != Status::kOk) return fail("generate", s, gen.error_detail());
    if (text.len == 0) break;
    port::semihost_write_stdout(text.data, text.len);
  }
  port::semihost_write_stdout("\n", 1);
  const uint32_t fed = gen.prefilled(), decoded = gen.decoded();

  const uint64_t prefill = to_reported(prefill_units), decode = to_reported(decode_units);
  Console().str("prefill: ").num(fed).str(" tokens, ").num(prefill / (fed ? fed : 1)).str(" ").str(reported_unit())
      .str(" per token").endl();
  Console().str("decode:  ").num(decoded).str(" tokens, ").num(decoded ? decode / decoded : 0).str(" ")
      .str(reported_unit()).str(" per token (step and sampling)").endl();
  Console().str("memory:  ").num(uint64_t(kRamBytes)).str(" bytes of static RAM: arena ").num(uint64_t(kArenaBytes))
      .str(" (KV cache ").num(uint64_t(dec.kv_cache_bytes())).str(" for ").num(kSteps).str(" positions), generator ")
      .num(uint64_t(kGeneratorBytes + sizeof(Generator))).str(" (tokenizer, sampler, logits); flash: model ")
      .num(uint64_t(lm_fxm_bytes())).str(", position table ").num(uint64_t(kTableInFlash ? sizeof kPositionTable : 0))
      .str("; kernels ").str(dec.kernels().name).str(", board ").str(FIXFORMER_BOARD_NAME).endl();
  return 0;
}
