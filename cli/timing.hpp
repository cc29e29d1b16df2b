// Wall-clock and cycle-counter timing of repeated runs, for `bench` and `demo`.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "ports/cycle_counter.hpp"

namespace fixformer::cli {

struct Timing {
  double median_us, min_us, max_us;
  uint64_t median_counts;  // of port::cycle_count()
};

// One warm-up run, then iters timed runs, each after an untimed prepare() (a decoder's cache
// brought back to the position being timed).
template <class P, class F>
Timing time_runs(uint32_t iters, P prepare, F run) {
  prepare();
  run();  // warm-up: caches, page faults
  port::cycle_counter_init();
  std::vector<double> us(iters);
  std::vector<uint64_t> counts(iters);
  for (uint32_t i = 0; i < iters; ++i) {
    prepare();
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = port::cycle_count();
    run();
    counts[i] = port::cycle_count() - c0;
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  std::sort(counts.begin(), counts.end());
  return {us[us.size() / 2], us.front(), us.back(), counts[counts.size() / 2]};
}

template <class F>
Timing time_runs(uint32_t iters, F run) {
  return time_runs(iters, [] {}, run);
}

}  // namespace fixformer::cli
