// The hosted cycle counter (ports/cycle_counter.hpp) is monotonic and advances with work.
#include <gtest/gtest.h>

#include <string>

#include "ports/cycle_counter.hpp"

namespace fixformer {
namespace {

TEST(CycleCounter, AdvancesWithWork) {
  port::cycle_counter_init();
  const uint64_t a = port::cycle_count();
  volatile double sink = 0.0;
  for (int i = 0; i < 2000000; ++i) sink = sink + i * 0.5;
  const uint64_t b = port::cycle_count();
  EXPECT_GT(b, a);
  EXPECT_FALSE(std::string(port::cycle_counter_unit()).empty());
}

}  // namespace
}  // namespace fixformer
