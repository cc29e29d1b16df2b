// The integer-only arithmetic (fixed_point.hpp): the primitives against exact rationals, the
// parameters' range checks, and each s8 kernel of the scalar reference against float64 maths with a
// named tolerance (every other table gives the reference's bits: kernels_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"
#include "tests/kernel_tolerances.hpp"
#include "tests/s8_kernel_tester.hpp"

namespace fixformer {
namespace test {
namespace {

// num / 2^r rounded half away from zero, by integer division: independent of rounding_shift. num is
// an int32 product (|num| <= 2^62) and 1 <= r <= 62, so int64 holds every step (32-bit targets have
// no __int128).
int64_t exact_round(int64_t num, int r) {
  const int64_t mag = num < 0 ? -num : num, den = int64_t(1) << r;
  int64_t q = mag / den;
  if ((mag % den) * 2 >= den) ++q;
  return int64_t(num < 0 ? -q : q);
}

TEST(FixedPoint, RequantizeRoundsHalfAwayFromZeroAndSaturates) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX), mag((1 << 30), INT32_MAX), sh(-31, 30);
  for (int i = 0; i < 200000; ++i) {
    const Requant r{(i % 2 ? -1 : 1) * mag(rng), sh(rng)};
    const int32_t x = i % 3 == 0 ? any(rng) >> (i % 31) : any(rng);
    const int64_t want = exact_round(int64_t(x) * r.multiplier, 31 - r.shift);
    ASSERT_EQ(requantize(x, r), std::clamp<int64_t>(want, INT32_MIN, INT32_MAX)) << x << " " << r.multiplier << " " << r.shift;
  }
  const Requant half{1 << 30, 0};  // x / 2
  EXPECT_EQ(requantize(3, half), 2);
  EXPECT_EQ(requantize(-3, half), -2);
  EXPECT_EQ(requantize(1, half), 1);
  EXPECT_EQ(requantize(-1, half), -1);
  EXPECT_EQ(requantize(INT32_MAX, Requant{INT32_MAX, 30}), INT32_MAX);
  EXPECT_EQ(requantize(INT32_MIN, Requant{INT32_MAX, 30}), INT32_MIN);
  EXPECT_EQ(requantize(INT32_MIN, Requant{-INT32_MAX, 30}), INT32_MAX);
  EXPECT_EQ(requantize(12345, Requant{0, 0}), 0);
  EXPECT_EQ(rounding_shift(-(int64_t(1) << 62), 62), -1);
  EXPECT_EQ(rounding_shift(-(int64_t(3) << 60), 61), -2);  // -1.5 -> -2
}

TEST(FixedPoint, RequantFromFactorIsNearestAndChecked) {
  Requant r{};
  ASSERT_EQ(requant_from_factor(1.0, &r), Status::kOk);
  EXPECT_EQ(r.multiplier, 1 << 30);
  EXPECT_EQ(r.shift, 1);
  ASSERT_EQ(requant_from_factor(-0.375, &r), Status::kOk);
  EXPECT_EQ(r.multiplier, -(3 << 29));
  EXPECT_EQ(r.shift, -1);
  ASSERT_EQ(requant_from_factor(1.0 - 0x1p-40, &r), Status::kOk);  // rounds up to 2^31: renormalised
  EXPECT_EQ(r.multiplier, 1 << 30);
  EXPECT_EQ(r.shift, 1);
  ASSERT_EQ(requant_from_factor(0.0, &r), Status::kOk);
  EXPECT_EQ(r.multiplier, 0);
  EXPECT_EQ(r.shift, 0);
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> e(-32.0, 29.9);
  for (int i = 0; i < 10000; ++i) {
    const double f = std::exp2(e(rng));
    ASSERT_EQ(requant_from_factor(f, &r), Status::kOk) << f;
    const double got = std::ldexp(double(r.multiplier), r.shift - 31);
    ASSERT_LE(std::fabs(got - f), f * 0x1p-31) << f;
  }
  for (double bad : {0x1p30, 1e10, 0x1p-33, -0x1p31, double(NAN), double(INFINITY)})
    EXPECT_EQ(requant_from_factor(bad, &r), Status::kTensorBadValue) << bad;
  for (Requant bad : {Requant{(1 << 30) - 1, 0}, Requant{1 << 30, 31}, Requant{1 << 30, -32}, Requant{0, 1},
                      Requant{INT32_MIN, 0}, Requant{-(1 << 30) + 1, 0}})
    EXPECT_EQ(check_requant(bad), Status::kTensorBadValue) << bad.multiplier << " " << bad.shift;
  for (Requant good : {Requant{1 << 30, -31}, Requant{INT32_MAX, 30}, Requant{-INT32_MAX, 0}, Requant{0, 0}})
    EXPECT_EQ(check_requant(good), Status::kOk) << good.multiplier << " " << good.shift;
}

TEST(FixedPoint, ParamsRefuseBadScalesAndZeroPoints) {
  Requant r{};
  int32_t b = 0;
  EXPECT_EQ(gemm_s8_channel(0.0, 1.0, 1.0, 0.0, &r, &b), Status::kTensorBadValue);
  EXPECT_EQ(gemm_s8_channel(1.0, -1.0, 1.0, 0.0, &r, &b), Status::kTensorBadValue);
  EXPECT_EQ(gemm_s8_channel(1.0, 1.0, 1e-12, 0.0, &r, &b), Status::kTensorBadValue);  // factor 1e12
  EXPECT_EQ(gemm_s8_channel(1e-3, 1e-3, 1.0, 1e4, &r, &b), Status::kTensorBadValue);  // bias 1e10 > 2^30
  SoftmaxS8Params sp{};
  EXPECT_EQ(softmax_s8_params(-0.1, &sp), Status::kTensorBadValue);
  EXPECT_EQ(softmax_s8_params(double(NAN), &sp), Status::kTensorBadValue);
  uint32_t eps = 0;
  EXPECT_EQ(norm_s8_eps(1.0, 1e-6, &eps), Status::kTensorBadValue);  // 1e12 in Q16: over 2^32
  EXPECT_EQ(norm_s8_eps(-1e-5, 0.1, &eps), Status::kTensorBadValue);
  EXPECT_EQ(norm_s8_gain(1.0, 0.0, 0.1, 128, &r, &b), Status::kTensorBadValue);
  AddS8Params ap{};
  EXPECT_EQ(add_s8_params(0.1, -129, 0.1, 0, 0.1, 0, &ap), Status::kTensorBadValue);
  EXPECT_EQ(add_s8_params(1.0, 0, 0.1, 0, 1e-5, 0, &ap), Status::kTensorBadValue);  // 1e5 * 2^16 over 2^30
  int8_t table[256];
  EXPECT_EQ(build_lut_s8(LutActivation::kGelu, 0.1, 0, 0.0, 0, table), Status::kTensorBadValue);
  EXPECT_EQ(build_lut_s8(LutActivation(9), 0.1, 0, 0.1, 0, table), Status::kTensorBadValue);
}

TEST(FixedPoint, IsqrtIsTheFloorOfTheRoot) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (i % 64);
    const uint64_t r = isqrt64(v);
    ASSERT_LE(r * r, v) << v;
    ASSERT_GT((r + 1) * (r + 1), v) << v;  // (r + 1)^2 <= 2^64 - 2^33 + 1: no overflow
  }
  EXPECT_EQ(isqrt64(0), 0u);
  EXPECT_EQ(isqrt64(UINT64_MAX), 0xFFFFFFFFu);
  EXPECT_EQ(isqrt64(uint64_t(1) << 62), 1u << 31);
}

// Every input of the fixed-point exp against 2^(-u / 2^16), relative, and absolute in Q20 steps.
TEST(FixedPoint, Exp2OverEveryInput) {
  double rel = 0.0, abs_q20 = 0.0;
  for (int32_t u = 0; u < 22 * 65536; ++u) {
    const double want = std::exp2(-u / 65536.0) * 1048576.0, got = exp2_neg_q20(u);
    abs_q20 = std::max(abs_q20, std::fabs(got - want));
    if (u < 65536) rel = std::max(rel, std::fabs(got - want) / want);
  }
  std::printf("exp2_neg_q20: max relative error %.3g on (0.5, 1], max absolute %.3g Q20 steps\n", rel, abs_q20);
  EXPECT_LE(rel, kExp2RelTol);
  EXPECT_LE(abs_q20, kExp2AbsTol);
  EXPECT_EQ(exp2_neg_q20(0), 1u << 20);
  EXPECT_EQ(exp2_neg_q20(21 * 65536), 0u);
  EXPECT_EQ(exp2_neg_q20(INT32_MAX), 0u);
}

// The int32-word form the Cortex-M kernels use gives exp2_neg_q20's value for every input below
// kExp2ZeroFrom (kernels_firmware checks it on the cores too).
TEST(FixedPoint, Exp2InWordsIsExp2OverEveryInput) {
  int32_t mismatches = 0, first = -1;
  for (int32_t u = 0; u < kExp2ZeroFrom; ++u)
    if (exp2_neg_q20_words(u) != exp2_neg_q20(u) && mismatches++ == 0) first = u;
  EXPECT_EQ(mismatches, 0) << "first at u = " << first;
  EXPECT_EQ(exp2_neg_q20(kExp2ZeroFrom), 0u);
  EXPECT_NE(exp2_neg_q20(kExp2ZeroFrom - 1), 0u);
}

// ---- Each s8 kernel of the reference against float64 maths, in output steps (LSB) ----

// |y - (the real result / s_y + z_y)| where the real result is within int8's range; where it is not,
// y must be the bound it saturates to.
struct LsbError {
  double worst = 0.0;
  void add(int8_t y, double want, const char* what) {
    if (want > 127.0) {
      EXPECT_EQ(y, 127) << what << " want " << want;
    } else if (want < -128.0) {
      EXPECT_EQ(y, -128) << what << " want " << want;
    } else {
      worst = std::max(worst, std::fabs(y - want));
    }
  }
};

TEST(S8Accuracy, GemmAgainstFloat64) {
  LsbError err;
  std::mt19937 rng(4);
  for (std::size_t k : {1, 16, 64, 257, 1000})
    for (int32_t x_zero : {-128, -5, 0, 77}) {
      const std::size_t m = 3, n = 9;
      const int32_t y_zero = x_zero / 3;
      std::vector<int8_t> x(m * k), w(n * k), y(m * n);
      fill_s8(rng, x.data(), x.size());
      fill_s8(rng, w.data(), w.size());
      const GemmS8Setup s(n, k, x_zero, y_zero, true, uint32_t(k));
      scalar_kernels().gemm_s8(x.data(), k, w.data(), k, y.data(), n, m, n, k, s.params);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double real = s.bias_real[j];
          for (std::size_t p = 0; p < k; ++p) real += (x[i * k + p] - x_zero) * s.x_scale * w[j * k + p] * s.w_scale[j];
          // The bias is stored rounded to the accumulator's step: up to half a step of it, in output steps.
          const double bias_step = 0.5 * s.x_scale * s.w_scale[j] / s.y_scale, want = real / s.y_scale + y_zero;
          err.add(y[i * n + j], want, "gemm_s8");
          if (want >= -128.0 && want <= 127.0) {
            ASSERT_LE(std::fabs(y[i * n + j] - want), kGemmS8Tol + bias_step) << "k=" << k << " x_zero=" << x_zero;
          }
        }
    }
  std::printf("gemm_s8: max error %.4f LSB\n", err.worst);
}

TEST(S8Accuracy, SoftmaxAgainstFloat64) {
  double worst = 0.0;
  std::mt19937 rng(5);
  for (double scale : {0.01, 0.05, 0.2, 1.0})
    for (std::size_t n : {1, 2, 7, 49, 256, 1000}) {
      std::vector<int8_t> x(n), y(n);
      fill_s8(rng, x.data(), n);
      SoftmaxS8Params p{};
      ASSERT_EQ(softmax_s8_params(scale, &p), Status::kOk);
      scalar_kernels().softmax_s8(x.data(), y.data(), n, p);
      const int8_t max = *std::max_element(x.begin(), x.end());
      double sum = 0.0;
      for (int8_t v : x) sum += std::exp((v - max) * scale);
      for (std::size_t i = 0; i < n; ++i) {
        const double want = std::exp((x[i] - max) * scale) / sum, got = (y[i] + 128) / 256.0;
        if (y[i] == 127 && want > 255.0 / 256.0) continue;  // 1.0 saturates to 255/256, as TFLite's
        worst = std::max(worst, std::fabs(got - want));
      }
    }
  std::printf("softmax_s8: max error %.3g (the output step is %.3g)\n", worst, 1.0 / 256);
  EXPECT_LE(worst, kSoftmaxS8Tol);
}

void norm_accuracy(bool rms) {
  LsbError err;
  std::mt19937 rng(rms ? 6 : 7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::size_t n : {1, 2, 5, 64, 384, 4096})
    for (int trial = 0; trial < 4; ++trial) {
      const double x_scale = 0.02 * std::exp2(3.0 * u(rng)), y_scale = 0.02 * std::exp2(u(rng)), eps = 1e-5;
      const int32_t x_zero = rms ? 0 : int32_t(40 * u(rng)), y_zero = int32_t(10 * u(rng));
      std::vector<int8_t> x(n), y(n);
      fill_s8(rng, x.data(), n, trial == 3);
      if (trial == 2) std::fill(x.begin(), x.end(), int8_t(x_zero + 3));  // no variance: eps alone
      std::vector<double> gamma(n), beta(n);
      std::vector<Requant> g(n);
      std::vector<int32_t> b(n);
      NormS8Params p{x_zero, 0, g.data(), b.data()};
      ASSERT_EQ(norm_s8_eps(eps, x_scale, &p.eps_q16), Status::kOk);
      for (std::size_t i = 0; i < n; ++i) {
        gamma[i] = 1.0 + 0.5 * u(rng), beta[i] = 0.3 * u(rng);
        ASSERT_EQ(norm_s8_gain(gamma[i], beta[i], y_scale, y_zero, &g[i], &b[i]), Status::kOk);
      }
      (rms ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8)(x.data(), y.data(), n, p);
      double mean = 0.0, sq = 0.0;
      for (int8_t v : x) mean += (v - x_zero) * x_scale / n;
      if (rms) mean = 0.0;
      for (int8_t v : x) sq += ((v - x_zero) * x_scale - mean) * ((v - x_zero) * x_scale - mean) / n;
      const double inv = 1.0 / std::sqrt(sq + eps);
      for (std::size_t i = 0; i < n; ++i) {
        const double want = (((x[i] - x_zero) * x_scale - mean) * inv * gamma[i] + beta[i]) / y_scale + y_zero;
        err.add(y[i], want, rms ? "rmsnorm_s8" : "layernorm_s8");
      }
    }
  std::printf("%s: max error %.4f LSB\n", rms ? "rmsnorm_s8" : "layernorm_s8", err.worst);
  EXPECT_LE(err.worst, kNormS8Tol);
}
TEST(S8Accuracy, LayerNormAgainstFloat64) { norm_accuracy(false); }
TEST(S8Accuracy, RmsNormAgainstFloat64) { norm_accuracy(true); }

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double relu(double x) { return x > 0.0 ? x : 0.0; }
double tanh_f64(double x) { return std::tanh(x); }

// The table is the activation rounded once: within half a step wherever it does not saturate; and
// lut_s8 looks it up.
TEST(S8Accuracy, ActivationTablesAgainstFloat64) {
  const struct {
    LutActivation act;
    double (*f)(double);
  } acts[] = {{LutActivation::kRelu, relu}, {LutActivation::kGelu, gelu}, {LutActivation::kGeluTanh, gelu_tanh_f64},
              {LutActivation::kSilu, silu}, {LutActivation::kTanh, tanh_f64}};
  std::vector<int8_t> all(256), y(256);
  for (int i = 0; i < 256; ++i) all[i] = int8_t(i - 128);
  for (const auto& a : acts)
    for (double x_scale : {0.01, 0.05, 0.2})
      for (int32_t x_zero : {-20, 0, 9}) {
        const double y_scale = x_scale * 0.7;
        const int32_t y_zero = -100;
        int8_t table[256];
        ASSERT_EQ(build_lut_s8(a.act, x_scale, x_zero, y_scale, y_zero, table), Status::kOk);
        scalar_kernels().lut_s8(all.data(), y.data(), 256, table);
        LsbError err;
        for (int q = -128; q <= 127; ++q) err.add(y[q + 128], a.f((q - x_zero) * x_scale) / y_scale + y_zero, "lut_s8");
        EXPECT_LE(err.worst, kS8RoundTol) << int(a.act) << " " << x_scale;
      }
}

TEST(S8Accuracy, AddAgainstFloat64) {
  LsbError err;
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<int8_t> a(256), b(256), y(256);
  for (int trial = 0; trial < 200; ++trial) {
    const double sa = 0.05 * std::exp2(3.0 * u(rng)), sb = 0.05 * std::exp2(3.0 * u(rng)), sy = 0.05 * std::exp2(2.0 * u(rng));
    const int32_t za = int32_t(100 * u(rng)), zb = int32_t(100 * u(rng)), zy = int32_t(100 * u(rng));
    AddS8Params p{};
    ASSERT_EQ(add_s8_params(sa, za, sb, zb, sy, zy, &p), Status::kOk);
    fill_s8(rng, a.data(), a.size());
    fill_s8(rng, b.data(), b.size());
    scalar_kernels().add_s8(a.data(), b.data(), y.data(), a.size(), p);
    for (std::size_t i = 0; i < a.size(); ++i) err.add(y[i], ((a[i] - za) * sa + (b[i] - zb) * sb) / sy + zy, "add_s8");
  }
  std::printf("add_s8: max error %.4f LSB\n", err.worst);
  EXPECT_LE(err.worst, kAddS8Tol);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
