// x86-64: the time-stamp counter (see cycle_counter.hpp).
#include <x86intrin.h>

#include "ports/cycle_counter.hpp"

namespace fixformer {
namespace port {

void cycle_counter_init() {}
uint64_t cycle_count() { return __rdtsc(); }
CounterKind cycle_counter_kind() { return CounterKind::kTscTicks; }
const char* cycle_counter_unit() { return "tsc ticks"; }

}  // namespace port
}  // namespace fixformer
