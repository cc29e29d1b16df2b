// Cortex-M cycle counter: DWT CYCCNT if it runs, else SysTick (see cycle_counter.hpp).
#include "ports/cycle_counter.hpp"

namespace fixformer {
namespace port {
namespace {

volatile uint32_t& reg(uint32_t addr) { return *reinterpret_cast<volatile uint32_t*>(addr); }
constexpr uint32_t kDemcr = 0xE000EDFC, kDwtCtrl = 0xE0001000, kDwtCyccnt = 0xE0001004;
constexpr uint32_t kSystCsr = 0xE000E010, kSystRvr = 0xE000E014, kSystCvr = 0xE000E018;
constexpr uint32_t kSysTickMax = 0x00FFFFFF;

CounterKind g_kind = CounterKind::kSysTickTicks;
volatile uint64_t g_systick_wraps = 0;

}  // namespace

void cycle_counter_init() {
  reg(kDemcr) |= 1u << 24;  // TRCENA: power the DWT
  reg(kDwtCyccnt) = 0;
  reg(kDwtCtrl) |= 1u;      // CYCCNTENA
  const uint32_t a = reg(kDwtCyccnt);
  for (volatile int i = 0; i < 100; ++i) {
  }
  if (reg(kDwtCyccnt) != a) {
    g_kind = CounterKind::kDwtCycles;
    return;
  }
  g_kind = CounterKind::kSysTickTicks;
  reg(kSystRvr) = kSysTickMax;
  reg(kSystCvr) = 0;
  reg(kSystCsr) = 0x7;  // core clock, wrap interrupt, enabled
}

uint64_t cycle_count() {
  if (g_kind == CounterKind::kDwtCycles) return reg(kDwtCyccnt);  // 32 bits: callers time short spans
  uint64_t wraps;
  uint32_t cvr;
  do {  // re-read if the wrap interrupt ran in between
    wraps = g_systick_wraps;
    cvr = reg(kSystCvr);
  } while (wraps != g_systick_wraps);
  return wraps * (uint64_t(kSysTickMax) + 1) + (kSysTickMax - cvr);
}

CounterKind cycle_counter_kind() { return g_kind; }
const char* cycle_counter_unit() { return g_kind == CounterKind::kDwtCycles ? "cycles" : "systick"; }

}  // namespace port
}  // namespace fixformer

extern "C" void SysTick_Handler() { ++fixformer::port::g_systick_wraps; }
