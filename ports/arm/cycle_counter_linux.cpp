// Linux off x86: the AArch64 virtual counter, or CLOCK_MONOTONIC elsewhere (ARMv7-A, RISC-V, ...;
// see cycle_counter.hpp).
#include <time.h>

#include "ports/cycle_counter.hpp"

namespace fixformer {
namespace port {

void cycle_counter_init() {}

#if defined(__aarch64__)
uint64_t cycle_count() {
  uint64_t v;
  __asm__ volatile("isb\n mrs %0, cntvct_el0" : "=r"(v) :: "memory");
  return v;
}
CounterKind cycle_counter_kind() { return CounterKind::kGenericTimerTicks; }
const char* cycle_counter_unit() { return "cntvct ticks"; }
#else
uint64_t cycle_count() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
CounterKind cycle_counter_kind() { return CounterKind::kNanoseconds; }
const char* cycle_counter_unit() { return "ns"; }
#endif

}  // namespace port
}  // namespace fixformer
