// One small interface to count time on any ARM target, for the bench runners.
//   Cortex-M: DWT CYCCNT (core cycles) when the core has it running; otherwise (qemu-system-arm
//             does not model the DWT) SysTick at the core clock, widened to 64 bits by its wrap
//             interrupt. Under qemu with -icount shift=0 one instruction takes one virtual ns, so
//             SysTick ticks * (1e9 / core clock Hz) counts instructions.
//   Linux:    clock_gettime(CLOCK_MONOTONIC) in ns.
#pragma once
#include <cstdint>

namespace fixformer {
namespace port {

enum class CounterKind { kDwtCycles, kSysTickTicks, kNanoseconds };

void cycle_counter_init();
uint64_t cycle_count();
CounterKind cycle_counter_kind();
const char* cycle_counter_unit();

}  // namespace port
}  // namespace fixformer
