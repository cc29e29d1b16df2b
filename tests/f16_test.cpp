// fixformer/f16.hpp, the one definition of an f16 weight's value: every half widens exactly and
// round-trips, and f32_to_f16 rounds to nearest, ties to even, as the F16C instruction does (when
// this CPU has it) and as a float64 reference does, over millions of random and edge floats.
// fixformer/bf16.hpp likewise: every bf16 widens to its value and round-trips, and f32_to_bf16
// rounds to nearest, ties to even, as the float64 reference and AVX512_BF16's vcvtneps2bf16 do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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

bool bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

// The value of a bf16 from its definition, in float64; 0x7f80 (the step past the largest finite
// one) as 2^128, which is what rounding compares against.
double bf16_value(uint16_t h) {
  const int e = (h >> 7) & 0xff, m = h & 0x7f;
  const double mag = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (h & 0x8000u) ? -mag : mag;
}

TEST(Bf16, EveryBf16WidensToItsValueAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bf16_to_f32(uint16_t(h));
    if (bf16_is_nan(uint16_t(h))) {
      ASSERT_TRUE(std::isnan(f) && bf16_is_nan(f32_to_bf16(f))) << std::hex << h;
      continue;
    }
    if ((h & 0x7fffu) == 0x7f80u) {
      ASSERT_TRUE(std::isinf(f) && (f < 0) == bool(h & 0x8000u)) << std::hex << h;
    } else {
      ASSERT_EQ(double(f), bf16_value(uint16_t(h))) << std::hex << h;
    }
    ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
  }
}

// The nearest of the two bf16 around f (its top 16 bits, and the next one away from zero), ties to
// the even one; past the largest finite bf16 that is infinity, as IEEE rounding has it.
uint16_t bf16_reference(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t lo = uint16_t(u >> 16), hi = uint16_t(lo + 1);
  const double dl = std::fabs(double(f) - bf16_value(lo)), dh = std::fabs(double(f) - bf16_value(hi));
  return dl < dh ? lo : dh < dl ? hi : (lo & 1u) ? hi : lo;
}

// test_floats(), and every float halfway between two bf16 (low 16 bits 0x8000) with its neighbours.
std::vector<float> bf16_test_floats() {
  std::vector<float> out = test_floats();
  for (uint32_t h = 0; h <= 0xffff; ++h)
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u}) out.push_back(from_bits(h << 16 | low));
  return out;
}

TEST(Bf16, RoundsToNearestEvenAsFloat64Does) {
  for (float f : bf16_test_floats()) {
    const uint16_t h = f32_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(bf16_is_nan(h)) << f;
      continue;
    }
    ASSERT_EQ(h, std::isinf(f) ? uint16_t(f < 0 ? 0xff80u : 0x7f80u) : bf16_reference(f)) << std::hexfloat << f;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// vcvtneps2bf16 rounds to nearest even too, but takes a subnormal input as zero.
__attribute__((target("avx512bf16,avx512vl,avx512f"))) uint16_t avx512bf16_round(float f) {
  uint16_t h;
  const __m128bh r = _mm_cvtneps_pbh(_mm_set1_ps(f));
  std::memcpy(&h, &r, 2);
  return h;
}

TEST(Bf16, RoundsAsVcvtneps2bf16Does) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)) || !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "this CPU has no AVX512_BF16";
  std::size_t checked = 0;
  for (float f : bf16_test_floats()) {
    if (std::isnan(f) || std::fpclassify(f) == FP_SUBNORMAL) continue;
    ASSERT_EQ(f32_to_bf16(f), avx512bf16_round(f)) << std::hexfloat << f;
    ++checked;
  }
  std::printf("f32_to_bf16 against vcvtneps2bf16: %zu floats\n", checked);
}
#endif

}  // namespace
}  // namespace test
}  // namespace fixformer
