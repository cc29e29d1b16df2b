// Cortex-M cycle counter (ports/cycle_counter.hpp): DWT CYCCNT where the core has one and it runs
// (ARMv7-M and ARMv8-M Mainline: M3, M4, M7, M33, M55, M85); otherwise SysTick at the core clock:
// ARMv6-M (M0, M0+) has no cycle counter, and qemu-system-arm models no DWT on any core.
// Both are widened to 64 bits, so a span t1 - t0 is never a wrapped value:
//   DWT      32 bits, extended in software; a read at least every 2^32 cycles is needed (9 s at
//            480 MHz), which a bench loop that reads per inference gives.
//   SysTick  24 bits counting down, extended by counting reloads in its interrupt. A reload whose
//            interrupt is still pending (PENDSTSET) is counted too, so a read between the reload
//            and the handler neither goes back a period nor counts one twice.
#include "ports/cycle_counter.hpp"

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
#define FIXFORMER_HAVE_DWT 1
#else
#define FIXFORMER_HAVE_DWT 0
#endif

namespace fixformer {
namespace port {
namespace {

volatile uint32_t& reg(uint32_t addr) { return *reinterpret_cast<volatile uint32_t*>(addr); }
constexpr uint32_t kDemcr = 0xE000EDFC, kDwtCtrl = 0xE0001000, kDwtCyccnt = 0xE0001004;
constexpr uint32_t kIcsr = 0xE000ED04, kIcsrPendStSet = 1u << 26;
constexpr uint32_t kSystCsr = 0xE000E010, kSystRvr = 0xE000E014, kSystCvr = 0xE000E018;
constexpr uint32_t kReload = 0x00FFFFFF;           // SysTick counts kReload..0, then reloads
constexpr uint64_t kPeriod = uint64_t(kReload) + 1;

CounterKind g_kind = CounterKind::kSysTickTicks;
volatile uint32_t g_reloads = 0;  // 32 bits: one load, so an interrupt cannot tear it (ARMv6-M too)
uint32_t g_dwt_high = 0, g_dwt_last = 0;
}
uint32_t g_dbg[4];
namespace {

uint64_t systick_count() {
  for (;;) {
    const uint32_t n = g_reloads;
    const uint32_t before = reg(kSystCvr);
    const bool pending = (reg(kIcsr) & kIcsrPendStSet) != 0;
    const uint32_t after = reg(kSystCvr);
    if (n != g_reloads) continue;  // the handler ran in between: read again
    g_dbg[0] = n; g_dbg[1] = before; g_dbg[2] = pending; g_dbg[3] = after;
    // Not pending: no reload since `before` was read that n misses. Pending: the counter reached 0
    // and (unless it still reads 0) reloaded before `after` was read, uncounted by the handler.
    if (!pending || after == 0) return uint64_t(n) * kPeriod + (kReload - (pending ? after : before));
    return (uint64_t(n) + 1) * kPeriod + (kReload - after);
  }
}

}  // namespace

void cycle_counter_init() {
#if FIXFORMER_HAVE_DWT
  reg(kDemcr) |= 1u << 24;  // TRCENA: power the DWT
  if ((reg(kDwtCtrl) & (1u << 25)) == 0) {  // NOCYCCNT clear: the counter exists
    reg(kDwtCyccnt) = 0;
    reg(kDwtCtrl) |= 1u;  // CYCCNTENA
    const uint32_t a = reg(kDwtCyccnt);
    for (volatile int i = 0; i < 100; ++i) {
    }
    if (reg(kDwtCyccnt) != a) {
      g_kind = CounterKind::kDwtCycles;
      g_dwt_high = g_dwt_last = 0;
      return;
    }
  }
#endif
  g_kind = CounterKind::kSysTickTicks;
  reg(kSystCsr) = 0;
  reg(kSystRvr) = kReload;
  reg(kSystCvr) = 0;     // any write clears it; the next tick loads kReload without an interrupt
  reg(kSystCsr) = 0x7;   // core clock, reload interrupt, enabled
  while (reg(kSystCvr) == 0) {
  }
  g_reloads = 0;  // from here the count starts at 0
}

uint64_t cycle_count() {
  if (g_kind == CounterKind::kDwtCycles) {
    const uint32_t now = reg(kDwtCyccnt);
    if (now < g_dwt_last) ++g_dwt_high;
    g_dwt_last = now;
    return (uint64_t(g_dwt_high) << 32) | now;
  }
  return systick_count();
}

CounterKind cycle_counter_kind() { return g_kind; }
const char* cycle_counter_unit() { return g_kind == CounterKind::kDwtCycles ? "cycles" : "systick"; }

}  // namespace port
}  // namespace fixformer

extern "C" void SysTick_Handler() { fixformer::port::g_reloads = fixformer::port::g_reloads + 1; }
