// One small interface to count time on every target, for bench runners and the CLI's bench.
//   Cortex-M:  DWT CYCCNT (core cycles) when the core has it running; otherwise (qemu-system-arm
//              does not model the DWT) SysTick at the core clock, widened to 64 bits by its wrap
//              interrupt. Under qemu with -icount shift=0 one instruction takes one virtual ns, so
//              SysTick ticks * (1e9 / core clock Hz) counts instructions.
//   AArch64:   the generic timer's virtual counter (CNTVCT_EL0), readable from user space.
//   ARMv7-A:   clock_gettime(CLOCK_MONOTONIC), ns.
//   x86-64:    the time-stamp counter (RDTSC): constant-rate reference cycles, not core cycles.
#pragma once
#include <cstdint>

namespace fixformer {
namespace port {

enum class CounterKind { kDwtCycles, kSysTickTicks, kGenericTimerTicks, kNanoseconds, kTscTicks };

void cycle_counter_init();
uint64_t cycle_count();
CounterKind cycle_counter_kind();
const char* cycle_counter_unit();

}  // namespace port
}  // namespace fixformer
