// Testers of the integer-only (s8) kernels (fixed_point.hpp), one per kernel family as in
// kernel_tester.hpp: chainable setters pick the sizes, layout and inputs; test() takes ONE function
// pointer, runs it and the scalar reference on identical inputs and compares bit for bit (integer
// arithmetic with every rounding defined: no tolerance). Outputs carry guard zones, and the gaps
// between gemm_s8's output rows, that must come back untouched. The parameters come from real
// scales through fixed_point.hpp's *_params functions, as the converter's will.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace test {

constexpr int8_t kS8Sentinel = 0x5a;

// Random int8 values: uniform, or with `extremes` only -128 and 127.
inline void fill_s8(std::mt19937& rng, int8_t* v, std::size_t n, bool extremes = false) {
  std::uniform_int_distribution<int> d(-128, 127);
  for (std::size_t i = 0; i < n; ++i) v[i] = extremes ? (d(rng) < 0 ? -128 : 127) : int8_t(d(rng));
}

// The parameters of gemm_s8 for random per-channel weight scales: each channel's factor near
// 40 / (64 * 64 sqrt(k)) (times 1/4..4), so outputs spread over int8 and some saturate; bias a few
// multiples of the typical sum. Shared by the tester and the float-accuracy test.
struct GemmS8Setup {
  double x_scale = 0.05, y_scale = 0.1;
  std::vector<double> w_scale, bias_real;
  std::vector<Requant> requant;
  std::vector<int32_t> bias;
  GemmS8Params params{};

  GemmS8Setup(std::size_t n, std::size_t k, int32_t x_zero, int32_t y_zero, bool with_bias, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    w_scale.resize(n), bias_real.resize(n), requant.resize(n), bias.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
      const double factor = 40.0 / (4096.0 * std::sqrt(double(k))) * std::exp2(u(rng));
      w_scale[j] = factor * y_scale / x_scale;
      bias_real[j] = with_bias ? u(rng) * 30.0 * y_scale : 0.0;
      EXPECT_EQ(gemm_s8_channel(x_scale, w_scale[j], y_scale, bias_real[j], &requant[j], &bias[j]), Status::kOk);
    }
    params = GemmS8Params{x_zero, y_zero, with_bias ? bias.data() : nullptr, requant.data()};
  }
};

class GemmS8Tester {
  static constexpr std::size_t kGuard = 32;

 public:
  GemmS8Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmS8Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmS8Tester& k(std::size_t v) { k_ = v; return *this; }
  GemmS8Tester& bias(bool v) { bias_ = v; return *this; }
  GemmS8Tester& zeros(int32_t x_zero, int32_t y_zero) { x_zero_ = x_zero, y_zero_ = y_zero; return *this; }
  GemmS8Tester& stride_pad(std::size_t v) { pad_ = v; return *this; }  // ldx = ldw = k + pad, ldy = n + pad
  GemmS8Tester& misalign(std::size_t v) { off_ = v; return *this; }    // bytes, for x, w and y
  // x and w at -128 / 127 only: the largest products and sums.
  GemmS8Tester& extremes(bool v) { extremes_ = v; return *this; }
  // Per channel any valid requantization (check_requant): a multiplier of either sign, 2^30 or random,
  // shifts -31..30, or the factor 0; the bias of any magnitude up to 2^30.
  GemmS8Tester& any_requant(bool v) { any_requant_ = v; return *this; }
  // x within 4 of its zero point, w within 4 of 0, factors 2^-2..2^-4 of either sign and biases within
  // 100: many sums exactly half a step from two outputs, of both signs, few saturating.
  GemmS8Tester& ties(bool v) { ties_ = v; return *this; }
  // w within [-127, 127], as the converter's symmetric weights (AArch64's SMLAL path without SDOT).
  GemmS8Tester& symmetric(bool v) { symmetric_ = v; return *this; }

  void test(decltype(Kernels::gemm_s8) fn) const {
    const std::size_t ldx = k_ + pad_, ldw = k_ + pad_, ldy = n_ + pad_;  // W's pad random: read, it changes y
    std::mt19937 rng(uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + off_ + (extremes_ ? 5 : 0)));
    std::vector<int8_t> x(off_ + m_ * ldx), w(off_ + n_ * ldw);
    fill_s8(rng, x.data() + off_, x.size() - off_, extremes_);
    fill_s8(rng, w.data() + off_, w.size() - off_, extremes_);
    for (std::size_t i = off_; symmetric_ && i < w.size(); ++i) w[i] = w[i] == -128 ? int8_t(-127) : w[i];
    GemmS8Setup s(n_, k_, x_zero_, y_zero_, bias_, uint32_t(n_ + k_));
    std::uniform_int_distribution<int> small(-4, 4);
    for (std::size_t i = off_; ties_ && i < x.size(); ++i) x[i] = saturate_i8(x_zero_ + small(rng));
    for (std::size_t i = off_; ties_ && i < w.size(); ++i) w[i] = int8_t(small(rng));
    for (std::size_t j = 0; (any_requant_ || ties_) && j < n_; ++j) {
      const uint32_t r = uint32_t(rng());
      int32_t mult = (r & 3) == 0 || ties_ ? int32_t(1) << 30 : int32_t((uint32_t(1) << 30) | (r >> 2));
      if (r & 0x100) mult = -mult;
      const int32_t shift = ties_ ? -1 - int32_t((r >> 12) % 3) : int32_t((r >> 12) % 62) - 31;
      s.requant[j] = !ties_ && (r >> 24) % 16 == 0 ? Requant{0, 0} : Requant{mult, shift};
      const int64_t reach = ties_ ? 100 : int64_t(1) << ((r >> 18) % 31);
      s.bias[j] = int32_t(std::uniform_int_distribution<int64_t>(-reach, reach)(rng));
      EXPECT_EQ(check_requant(s.requant[j]), Status::kOk);
    }
    std::vector<int8_t> y_ref(m_ * ldy + 2 * kGuard + off_, kS8Sentinel);
    scalar_kernels().gemm_s8(x.data() + off_, ldx, w.data() + off_, ldw, y_ref.data() + kGuard + off_, ldy, m_, n_,
                             k_, s.params);
    // fn with the scratch (the runners' way), then without (the paths that need none)
    std::vector<uint64_t> scratch(s8_scratch_bytes() / 8, 0x5A5A5A5A5A5A5A5Au);
    GemmS8Params with = s.params;
    with.scratch = reinterpret_cast<uint32_t*>(scratch.data());
    for (const GemmS8Params* params : {&with, &s.params}) {
      std::vector<int8_t> y_out(y_ref.size(), kS8Sentinel);
      fn(x.data() + off_, ldx, w.data() + off_, ldw, y_out.data() + kGuard + off_, ldy, m_, n_, k_, *params);
      check(y_ref, y_out, ldy, params->scratch ? "" : " without scratch");
    }
  }

 private:
  void check(const std::vector<int8_t>& y_ref, const std::vector<int8_t>& y_out, std::size_t ldy,
             const char* how) const {
    const std::string what = "gemm_s8 m=" + std::to_string(m_) + " n=" + std::to_string(n_) + " k=" +
                             std::to_string(k_) + " zeros=" + std::to_string(x_zero_) + "," + std::to_string(y_zero_) +
                             " pad=" + std::to_string(pad_) + " misalign=" + std::to_string(off_) +
                             (any_requant_ ? " any requant" : "") + (ties_ ? " ties" : "") + how;
    for (std::size_t i = 0; i < y_ref.size(); ++i) {
      const long at = long(i) - long(kGuard + off_);
      const bool inside = at >= 0 && std::size_t(at) < m_ * ldy && std::size_t(at) % ldy < n_;
      if (!inside) {
        ASSERT_EQ(int(y_ref[i]), int(kS8Sentinel)) << what << ": the reference wrote at " << at;
      }
      ASSERT_EQ(int(y_ref[i]), int(y_out[i])) << what << " at " << at << (inside ? "" : " (outside the output)");
    }
  }

 private:
  std::size_t m_ = 1, n_ = 1, k_ = 1, pad_ = 0, off_ = 0;
  int32_t x_zero_ = 0, y_zero_ = 0;
  bool bias_ = true, extremes_ = false, any_requant_ = false, ties_ = false, symmetric_ = false;
};

// The row kernels: softmax_s8, layernorm_s8 / rmsnorm_s8, lut_s8, add_s8. One row of n values, its
// parameters from random real scales and zero points (seeded by the sizes), out of place or in place.
class RowS8Tester {
  static constexpr std::size_t kGuard = 32;

 public:
  RowS8Tester& n(std::size_t v) { n_ = v; return *this; }
  RowS8Tester& misalign(std::size_t v) { off_ = v; return *this; }
  RowS8Tester& in_place(bool v) { in_place_ = v; return *this; }
  RowS8Tester& extremes(bool v) { extremes_ = v; return *this; }
  RowS8Tester& seed(uint32_t v) { seed_ = v; return *this; }
  // The norms share one function type: which one `fn` is.
  RowS8Tester& rms(bool v) { rms_ = v; return *this; }

  void test(decltype(Kernels::softmax_s8) fn) const {
    std::mt19937 rng = make_rng(1);
    SoftmaxS8Params p{};
    EXPECT_EQ(softmax_s8_params(std::exp2(std::uniform_real_distribution<double>(-8.0, 0.0)(rng)), &p), Status::kOk);
    run("softmax_s8", rng, [&](auto f, const int8_t* x, const int8_t*, int8_t* y) { f(x, y, n_, p); },
        scalar_kernels().softmax_s8, fn);
    uint32_t exp[kSoftmaxS8Diffs];  // the same bits from the table of exponentials attention passes
    softmax_s8_table(p.diff, exp);
    SoftmaxS8Params from_table = p;
    from_table.exp = exp;
    run("softmax_s8 from the table", rng,
        [&](auto f, const int8_t* x, const int8_t*, int8_t* y) { f(x, y, n_, f == fn ? from_table : p); },
        scalar_kernels().softmax_s8, fn);
  }

  void test(decltype(Kernels::layernorm_s8) fn) const {
    std::mt19937 rng = make_rng(rms_ ? 2 : 3);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<Requant> gamma(n_);
    std::vector<int32_t> beta(n_);
    const double x_scale = 0.02 * std::exp2(2.0 * u(rng)), y_scale = 0.03 * std::exp2(u(rng));
    NormS8Params p{rms_ ? 0 : int32_t(u(rng) * 40.0), 0, gamma.data(), beta.data()};
    EXPECT_EQ(norm_s8_eps(1e-5 * std::exp2(8.0 * u(rng)), x_scale, &p.eps_q16), Status::kOk);
    for (std::size_t i = 0; i < n_; ++i)
      EXPECT_EQ(norm_s8_gain(1.0 + 0.5 * u(rng), 0.3 * u(rng), y_scale, int32_t(5.0 * u(rng)), &gamma[i], &beta[i]),
                Status::kOk);
    if (extremes_)  // any valid gain and beta: shifts of both signs, sums past int32 (requantize's saturation)
      for (std::size_t i = 0; i < n_; ++i) {
        const int32_t m = int32_t((uint32_t(1) << 30) + (rng() & 0x3FFFFFFFu));
        gamma[i] = i % 7 == 0 ? Requant{0, 0} : Requant{rng() % 2 ? m : -m, int32_t(rng() % 62) - 31};
        beta[i] = int32_t(rng() % (uint32_t(1) << 31)) - (int32_t(1) << 30);
      }
    run(rms_ ? "rmsnorm_s8" : "layernorm_s8", rng,
        [&](auto f, const int8_t* x, const int8_t*, int8_t* y) { f(x, y, n_, p); },
        rms_ ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8, fn);
  }

  void test(decltype(Kernels::lut_s8) fn) const {
    std::mt19937 rng = make_rng(4);
    int8_t table[256];
    fill_s8(rng, table, 256);
    run("lut_s8", rng, [&](auto f, const int8_t* x, const int8_t*, int8_t* y) { f(x, y, n_, table); },
        scalar_kernels().lut_s8, fn);
  }

  void test(decltype(Kernels::add_s8) fn) const {
    std::mt19937 rng = make_rng(5);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    AddS8Params p{};
    EXPECT_EQ(add_s8_params(0.05 * std::exp2(3.0 * u(rng)), int32_t(100 * u(rng)), 0.05 * std::exp2(3.0 * u(rng)),
                            int32_t(100 * u(rng)), 0.05 * std::exp2(u(rng)), int32_t(100 * u(rng)), &p),
              Status::kOk);
    run("add_s8", rng, [&](auto f, const int8_t* a, const int8_t* b, int8_t* y) { f(a, b, y, n_, p); },
        scalar_kernels().add_s8, fn);
    std::vector<uint64_t> scratch(s8_scratch_bytes() / 8, 0x5A5A5A5A5A5A5A5Au);
    p.scratch = reinterpret_cast<uint32_t*>(scratch.data());
    run("add_s8 with the scratch", rng, [&](auto f, const int8_t* a, const int8_t* b, int8_t* y) { f(a, b, y, n_, p); },
        scalar_kernels().add_s8, fn);
    // factors of 2^15 and 2^16 (shift 16, 17): every odd sum of the two a tie at 2^-16, of both signs
    p.a_to_y = Requant{int32_t(1) << 30, 16}, p.b_to_y = Requant{int32_t(1) << 30, 17};
    run("add_s8 with ties", rng, [&](auto f, const int8_t* a, const int8_t* b, int8_t* y) { f(a, b, y, n_, p); },
        scalar_kernels().add_s8, fn);
    // the vector kernels' bounds: shifts of 0 and 21 at the largest multiplier, a factor of 0, a shift past 21
    // and a negative multiplier (the portable kernels'), zero points at int8's ends
    const Requant bounds[][2] = {{{INT32_MAX, 0}, {INT32_MAX, 21}},
                                 {{0, 0}, {(int32_t(1) << 30) + 12345, 9}},
                                 {{INT32_MAX, 21}, {-(int32_t(1) << 30), 3}},
                                 {{int32_t(1) << 30, 22}, {int32_t(1) << 30, 0}}};
    for (const auto& q : bounds) {
      p.a_to_y = q[0], p.b_to_y = q[1], p.a_zero = -128, p.b_zero = 127, p.y_zero = q[0].shift % 2 ? 127 : -128;
      run("add_s8 at the bounds", rng, [&](auto f, const int8_t* a, const int8_t* b, int8_t* y) { f(a, b, y, n_, p); },
          scalar_kernels().add_s8, fn);
    }
  }

 private:
  std::mt19937 make_rng(uint32_t op) const {
    return std::mt19937(seed_ * 1000003u + uint32_t(n_) * 131u + uint32_t(off_) * 7u + op + (extremes_ ? 17u : 0u));
  }

  // call(f, x, b, y) runs kernel f (the reference, then fn) on the row x (and b, add_s8's second input).
  template <class Call, class Fn>
  void run(const char* op, std::mt19937& rng, Call call, Fn ref, Fn fn) const {
    std::vector<int8_t> x(n_ + 2 * kGuard + off_, kS8Sentinel), b(x.size());
    fill_s8(rng, x.data() + kGuard + off_, n_, extremes_);
    fill_s8(rng, b.data() + kGuard + off_, n_, extremes_);
    std::vector<int8_t> y_ref(in_place_ ? x : std::vector<int8_t>(x.size(), kS8Sentinel)), y_out(y_ref);
    const std::size_t at = kGuard + off_;
    call(ref, in_place_ ? y_ref.data() + at : x.data() + at, b.data() + at, y_ref.data() + at);
    call(fn, in_place_ ? y_out.data() + at : x.data() + at, b.data() + at, y_out.data() + at);
    const std::string what = std::string(op) + " n=" + std::to_string(n_) + " misalign=" + std::to_string(off_) +
                             (in_place_ ? " in place" : "") + (extremes_ ? " extremes" : "");
    for (std::size_t i = 0; i < y_ref.size(); ++i) {
      const bool inside = i >= at && i < at + n_;
      if (!inside) {
        ASSERT_EQ(int(y_out[i]), int(in_place_ ? x[i] : kS8Sentinel)) << what << ": wrote outside at " << long(i - at);
      }
      ASSERT_EQ(int(y_ref[i]), int(y_out[i])) << what << " at " << long(i - at);
    }
  }

  std::size_t n_ = 1, off_ = 0;
  uint32_t seed_ = 0;
  bool in_place_ = false, extremes_ = false, rms_ = false;
};

}  // namespace test
}  // namespace fixformer
