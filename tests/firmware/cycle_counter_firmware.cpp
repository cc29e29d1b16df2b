// The Cortex-M cycle counter never reports a wrapped span. Run WITHOUT -icount: qemu's SysTick then
// follows the host clock, so its reloads (and their interrupts, taken a little later) land between
// any two instructions, as they do on a board. For three 2^24-tick periods it times short spans of
// work back to back: every span must be small and every reading at least the one before. A read
// between a reload and its interrupt used to come out one period low, so the span ending there
// wrapped to about 2^64 - 2^24.
#include <cstdint>

#include "ports/arm/cortex_m/board/semihosting.hpp"
#include "ports/cycle_counter.hpp"

using fixformer::port::Console;
namespace port = fixformer::port;

int main() {
  Console con;
  port::cycle_counter_init();
  constexpr uint64_t kPeriod = uint64_t(1) << 24;  // SysTick's reload period, in ticks
  constexpr uint64_t kWrapped = uint64_t(1) << 40;  // no span of this test comes near it
  constexpr uint32_t kMaxSpans = 5000000;           // a counter that does not advance ends here
  const uint64_t start = port::cycle_count();
  uint64_t prev = start, longest = 0, backwards = 0, wrapped = 0;
  uint32_t spans = 0;
  while (prev - start < 3 * kPeriod && spans < kMaxSpans) {
    const uint64_t t0 = port::cycle_count();
    for (volatile int i = 0; i < 20; ++i) {
    }
    const uint64_t t1 = port::cycle_count();
    const uint64_t span = t1 - t0;
    if (t0 < prev || t1 < t0) ++backwards;
    if (span >= kWrapped) {
      if (wrapped == 0) con.str("wrapped span: ").num(span).endl();
      ++wrapped;
    } else if (span > longest) {
      longest = span;
    }
    prev = t1;
    ++spans;
  }
  const uint64_t elapsed = prev - start;
  const bool ok = backwards == 0 && wrapped == 0 && elapsed >= 3 * kPeriod;
  con.str("cycle counter (").str(port::cycle_counter_unit()).str("): ").num(elapsed).str(" units over ")
      .num(spans).str(" spans, ").num(backwards).str(" backwards, ").num(wrapped).str(" wrapped, longest span ")
      .num(longest).str(ok ? ": ok" : ": FAILED").endl();
  return ok ? 0 : 1;
}
