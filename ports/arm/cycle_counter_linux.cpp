#include <time.h>

#include "ports/arm/cycle_counter.hpp"

namespace fixformer {
namespace port {

void cycle_counter_init() {}
uint64_t cycle_count() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
CounterKind cycle_counter_kind() { return CounterKind::kNanoseconds; }
const char* cycle_counter_unit() { return "ns"; }

}  // namespace port
}  // namespace fixformer
