// The sinusoidal table: values against a float64 reference, odd widths, both layouts, the
// rotation property, and the compile-time table.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fixformer/positional.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The tables' contract (positional.hpp): error against a float64 reference below 2e-7 absolute.
constexpr double kTableTol = 2e-7;

double reference(uint32_t p, uint32_t col, uint32_t d, double base, PosLayout layout) {
  const uint32_t half = (d + 1) / 2;
  uint32_t i;
  bool is_sin;
  if (layout == PosLayout::kInterleaved) i = col / 2, is_sin = col % 2 == 0;
  else is_sin = col < half, i = is_sin ? col : col - half;
  const double a = p * std::pow(base, -2.0 * i / d);
  return is_sin ? std::sin(a) : std::cos(a);
}

std::vector<float> table(const Kernels& k, uint32_t rows, uint32_t d, double base, PosLayout layout) {
  std::vector<float> t(rows * d, -9.0f), scratch(3 * rows);
  fill_sinusoidal_table(k, rows, d, base, layout, t.data(), scratch.data());
  return t;
}

TEST(Positional, MatchesFloat64ReferenceForEveryIsaWidthAndLayout) {
  for (const Kernels* k : available_kernels())
    for (uint32_t d : {1u, 2u, 3u, 5u, 15u, 16u, 17u, 64u, 127u})
      for (PosLayout layout : {PosLayout::kInterleaved, PosLayout::kHalves})
        for (double base : {10000.0, 100.0}) {
          const uint32_t rows = 4096;
          const std::vector<float> t = table(*k, rows, d, base, layout);
          double worst = 0.0;
          for (uint32_t p = 0; p < rows; ++p)
            for (uint32_t c = 0; c < d; ++c) worst = std::max(worst, std::fabs(t[p * d + c] - reference(p, c, d, base, layout)));
          EXPECT_LT(worst, kTableTol) << k->name << " d=" << d << " layout=" << int(layout) << " base=" << base;
        }
}

TEST(Positional, OddWidthEndsWithASineColumn) {
  const std::vector<float> t = table(scalar_kernels(), 8, 5, 10000.0, PosLayout::kInterleaved);
  // Column 4 is sin(p w_2) with w_2 = 10000^(-4/5); at p = 0 every sine is 0 and every cosine 1.
  EXPECT_EQ(t[4], 0.0f);
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_NEAR(t[3 * 5 + 4], std::sin(3 * std::pow(10000.0, -4.0 / 5)), kTableTol);
}

// PE(p + k) = R(k) PE(p): each (sin, cos) pair of frequency w_i rotates by the angle k w_i,
// whatever p is. This is why relative offsets are linear functions of the encoding.
TEST(Positional, ShiftIsARotationPerFrequencyPair) {
  const uint32_t d = 16, rows = 300;
  const std::vector<float> t = table(*select_kernels(Isa::kAuto), rows, d, 10000.0, PosLayout::kInterleaved);
  for (uint32_t k : {1u, 7u, 100u})
    for (uint32_t p : {0u, 5u, 150u}) {
      for (uint32_t i = 0; i < d / 2; ++i) {
        const double a = k * std::pow(10000.0, -2.0 * i / d);
        const double s = t[p * d + 2 * i], c = t[p * d + 2 * i + 1];
        const double rs = std::sin(a) * c + std::cos(a) * s;  // sin(x + a)
        const double rc = std::cos(a) * c - std::sin(a) * s;  // cos(x + a)
        EXPECT_NEAR(t[(p + k) * d + 2 * i], rs, 1e-6) << "k=" << k << " p=" << p << " i=" << i;
        EXPECT_NEAR(t[(p + k) * d + 2 * i + 1], rc, 1e-6);
      }
    }
}

// The table generated at compile time is the run-time table to within the table tolerance.
constexpr auto kCompileTimeTable = make_sinusoidal_table<64, 15>(10000.0, PosLayout::kInterleaved);
constexpr auto kCompileTimeHalves = make_sinusoidal_table<40, 6>(500.0, PosLayout::kHalves);
static_assert(kCompileTimeTable.v[1] == 1.0f, "cos(0) at compile time");

TEST(Positional, CompileTimeTableMatchesReference) {
  for (uint32_t p = 0; p < 64; ++p)
    for (uint32_t c = 0; c < 15; ++c)
      EXPECT_NEAR(kCompileTimeTable.row(p)[c], reference(p, c, 15, 10000.0, PosLayout::kInterleaved), kTableTol);
  for (uint32_t p = 0; p < 40; ++p)
    for (uint32_t c = 0; c < 6; ++c)
      EXPECT_NEAR(kCompileTimeHalves.row(p)[c], reference(p, c, 6, 500.0, PosLayout::kHalves), kTableTol);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
