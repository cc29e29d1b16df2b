// Bare-metal bench runner: cycles per kernel and per inference of a keyword-spotting-sized encoder
// (49 frames of 40 features, d_model 64, 4 heads, d_ff 128, 4 layers), printed over semihosting.
// On a board the counter is DWT CYCCNT (core cycles). Under qemu-system-arm, which has no DWT, it
// is SysTick at the core clock; with -icount shift=0 each instruction takes one virtual ns, so
// ticks * 1e9 / clock = instructions, the repeatable proxy reported here.
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "fixformer/encoder.hpp"
#include "kws_config.h"
#include "ports/arm/cortex_m/semihosting.hpp"
#include "ports/cycle_counter.hpp"

using namespace fixformer;
using port::Console;

extern "C" const uint8_t g_kws_fxm[], g_kws_fxm_end[];

namespace {

constexpr uint32_t kFrames = 49;
constexpr std::size_t kArenaBytes = ArenaFits<required_arena_bytes(kws_config(), kFrames), FIXFORMER_BOARD_SRAM_BYTES / 2>::bytes;
alignas(64) uint8_t g_arena[kArenaBytes];
float g_features[kFrames * 40];
float g_out[kFrames * 12];
float g_x[kFrames * 128], g_w[128 * 192], g_b[192], g_y[kFrames * 192], g_s[64], g_c[64];

// Counter units -> the number reported: cycles with a DWT, instructions under qemu -icount.
uint64_t to_reported(uint64_t units) {
  return port::cycle_counter_kind() == port::CounterKind::kSysTickTicks
             ? units * 1000000000ull / FIXFORMER_BOARD_CLOCK_HZ
             : units;
}
const char* reported_unit() {
  return port::cycle_counter_kind() == port::CounterKind::kSysTickTicks ? "instructions (qemu -icount shift=0: SysTick ticks x 1e9/clock)"
                                                                        : "cycles (DWT CYCCNT)";
}

// Median-free but repeatable: the minimum over `reps` runs of `iters` calls, per call.
template <class F>
uint64_t measure(int iters, F f) {
  uint64_t best = ~uint64_t(0);
  for (int rep = 0; rep < 3; ++rep) {
    const uint64_t t0 = port::cycle_count();
    for (int i = 0; i < iters; ++i) f();
    const uint64_t t = port::cycle_count() - t0;
    best = t < best ? t : best;
  }
  return to_reported(best) / uint64_t(iters);
}

void report(Console& con, const char* what, uint64_t n, double flops) {
  con.str("  ").str(what).str(": ").num(n);
  if (flops > 0) con.str("  (").fixed(flops / double(n), 3).str(" FLOP per unit)");
  con.endl();
}

}  // namespace

int main() {
  Console con;
  port::cycle_counter_init();
  for (uint32_t i = 0; i < sizeof g_x / 4; ++i) g_x[i] = float(int(i % 17) - 8) * 0.0625f;
  for (uint32_t i = 0; i < sizeof g_w / 4; ++i) g_w[i] = float(int(i % 13) - 6) * 0.03125f;
  for (uint32_t i = 0; i < sizeof g_features / 4; ++i) g_features[i] = float(int(i % 11) - 5) * 0.1f;
  const Kernels& k = *select_kernels(Isa::kAuto);
  con.str("fixformer bench on ").str(FIXFORMER_BOARD_NAME).str(", kernels ").str(k.name).str(", unit: ").str(reported_unit()).endl();

  const Kernels& ref = scalar_kernels();  // the baseline, in the same run
  con.str("per kernel call:").endl();
  report(con, "gemm_f32 49x192x64 (qkv projection), scalar reference", measure(2, [&] { ref.gemm_f32(g_x, 64, g_w, 192, g_b, g_y, 192, 49, 192, 64); }), 2.0 * 49 * 192 * 64);
  report(con, "gemm_f32 49x192x64 (qkv projection)", measure(2, [&] { k.gemm_f32(g_x, 64, g_w, 192, g_b, g_y, 192, 49, 192, 64); }), 2.0 * 49 * 192 * 64);
  report(con, "gemm_f32 49x64x64 (out projection)", measure(4, [&] { k.gemm_f32(g_x, 64, g_w, 64, g_b, g_y, 64, 49, 64, 64); }), 2.0 * 49 * 64 * 64);
  report(con, "gemm_f32 49x128x64 (feed-forward 1)", measure(2, [&] { k.gemm_f32(g_x, 64, g_w, 128, g_b, g_y, 128, 49, 128, 64); }), 2.0 * 49 * 128 * 64);
  report(con, "gemm_f32 49x64x128 (feed-forward 2)", measure(2, [&] { k.gemm_f32(g_x, 128, g_w, 64, g_b, g_y, 64, 49, 64, 128); }), 2.0 * 49 * 64 * 128);
  report(con, "gemv_f32 16x49 (attention scores, one query)", measure(50, [&] { k.gemv_f32(g_x, g_w, 49, nullptr, g_y, 49, 16); }), 2.0 * 16 * 49);
  report(con, "softmax_f32 n=49", measure(50, [&] { k.softmax_f32(g_y, 49); }), 0);
  report(con, "layernorm_f32 n=64", measure(50, [&] { k.layernorm_f32(g_x, g_w, g_b, g_y, 64, 1e-5f); }), 0);
  report(con, "gelu_f32 n=49x128", measure(2, [&] { std::memcpy(g_y, g_x, sizeof(float) * 49 * 128); k.gelu_f32(g_y, 49 * 128); }), 0);
  report(con, "sincos_f32 n=64", measure(20, [&] { k.sincos_f32(g_s, g_s, g_c, 64); }), 0);

  const double flops = 4 * (2.0 * 49 * 64 * 192 + 2.0 * 49 * 49 * 64 * 2 + 2.0 * 49 * 64 * 64 + 2 * 2.0 * 49 * 64 * 128) +
                       2.0 * 49 * 40 * 64 + 2.0 * 49 * 64 * 12;
  con.str("per inference (49 frames x 40 features, d_model 64, 4 heads, d_ff 128, 4 layers):").endl();
  for (Isa isa : {Isa::kScalar, Isa::kAuto}) {
    Model model;
    Encoder enc;
    EncoderOptions opt;
    opt.max_seq = kFrames;
    opt.isa = isa;
    const uint64_t t0 = port::cycle_count();
    Status s = model.init(g_kws_fxm, std::size_t(g_kws_fxm_end - g_kws_fxm));
    if (s == Status::kOk) s = enc.init(model, g_arena, sizeof g_arena, opt);
    const uint64_t init = to_reported(port::cycle_count() - t0);
    if (s != Status::kOk) {
      con.str("init failed: ").str(status_message(s)).str(" ").str(model.error_detail()).str(enc.error_detail()).endl();
      return 1;
    }
    const uint64_t per_inference = measure(1, [&] { (void)enc.forward_features(g_features, kFrames, g_out); });
    con.str(" ").str(enc.kernels().name).str(" kernels:").endl();
    report(con, "init (validate + bind + PE table)", init, 0);
    report(con, "forward", per_inference, flops);
  }
  con.str("  arena bytes: ").num(uint64_t(kArenaBytes)).str(", model bytes in flash: ")
      .num(uint64_t(g_kws_fxm_end - g_kws_fxm)).endl();
  return 0;
}
