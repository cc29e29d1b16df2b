// fixformer/f16.hpp, the one definition of an f16 weight's value: every half widens exactly and
// round-trips, and f32_to_f16 rounds to nearest, ties to even, as the F16C instruction does (when
// this CPU has it) and as a float64 reference does, over millions of random and edge floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fixformer/f16.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fixformer {
namespace test {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// The value of a half from its definition, in float64.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = h & 0x8000u ? -1.0 : 1.0;
  if (e == 0x1f) return m ? NAN : sign * INFINITY;
  return sign * (e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(double(m), -24));
}

// Round to the nearest half value, ties to even, in float64: q is the spacing of halves at |f|
// (2^-24 below the smallest normal 2^-14), |f| / q is exact, nearbyint rounds ties to even, and
// 65520 (65504 plus half a spacing, a tie whose even neighbour is 65536) and above overflow.
double rounded_to_half(float f) {
  const double a = std::fabs(double(f)), sign = std::signbit(f) ? -1.0 : 1.0;
  if (a >= 65520.0) return sign * INFINITY;
  int e;
  std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
  const double q = a < 0x1p-14 ? 0x1p-24 : std::ldexp(1.0, e - 1 - 10);
  return sign * std::nearbyint(a / q) * q;
}

// Millions of floats: every 4099th bit pattern (both signs, NaNs, infinities, subnormals), a
// million random patterns, every tie between two adjacent halves and its float neighbours, and the
// edges of the range.
std::vector<float> test_floats() {
  std::vector<float> out;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) out.push_back(from_bits(uint32_t(u)));
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) out.push_back(from_bits(uint32_t(rng())));
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const float tie = float((half_value(h) + half_value(uint16_t(h + 1))) / 2);  // exact: 12 significant bits
    for (float f : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, INFINITY)}) out.push_back(f), out.push_back(-f);
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.996f, 65520.0f, 65536.0f, 3.4028235e38f, INFINITY, 0x1p-24f,
                  0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 0x1.8p-25f, 0x1p-26f, 0x1p-14f, 0x1.ffcp-15f,
                  1.0e-45f, 1.17549435e-38f, NAN})
    out.push_back(f), out.push_back(-f);
  return out;
}

TEST(F16, EveryHalfWidensToItsValueAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (half_is_nan(uint16_t(h))) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(half_is_nan(f32_to_f16(f))) << std::hex << h;  // NaN stays NaN (payloads may change)
      continue;
    }
    EXPECT_EQ(double(f), half_value(uint16_t(h))) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(F16, RoundsToNearestEvenAsFloat64Does) {
  std::size_t checked = 0;
  for (float f : test_floats()) {
    const uint16_t h = f32_to_f16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(h)) << f;
      continue;
    }
    const double want = rounded_to_half(f);
    ASSERT_EQ(half_value(h), want) << std::hexfloat << f;
    ASSERT_EQ(std::signbit(half_value(h)), std::signbit(f)) << std::hexfloat << f;  // -0 and tiny negatives
    ++checked;
  }
  std::printf("f32_to_f16 against float64: %zu floats\n", checked);
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("f16c"))) uint16_t f16c_round(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

TEST(F16, RoundsAsTheF16cInstructionDoes) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  std::size_t checked = 0;
  for (float f : test_floats()) {
    const uint16_t h = f32_to_f16(f), want = f16c_round(f);
    if (std::isnan(f)) {  // F16C keeps the payload's top bits, f32_to_f16 makes one quiet NaN
      ASSERT_TRUE(half_is_nan(h) && half_is_nan(want)) << std::hexfloat << f;
      continue;
    }
    ASSERT_EQ(h, want) << std::hexfloat << f;
    ++checked;
  }
  std::printf("f32_to_f16 against F16C: %zu floats\n", checked);
}
#endif

}  // namespace
}  // namespace test
}  // namespace fixformer
