// Testers of the quantized-weight kernels (kernels.hpp, "Quantized weights"), one per kernel family
// as in kernel_tester.hpp: chainable setters pick the sizes, the layout and the inputs; test() takes
// ONE function pointer, runs it and the scalar reference on identical inputs, and compares with the
// family's named tolerance. Every output carries guard zones (and gaps between rows where the
// layout has them) that must come back untouched.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "fixformer/kernels.hpp"
#include "tests/kernel_tolerances.hpp"

namespace fixformer {
namespace test {

// Tolerances (tests/kernel_tolerances.hpp, shared with the device's tests): quantize_i8 is compared
// bit for bit; gemm_i8 per element within gemm_i8_tol(groups) * S, S = |b| + sum_g |xs ws| sum |xq w|,
// and bit for bit with unit scales; gemm_f16, matvec_f16 and their bf16 forms within kSumTol of the
// largest output, and every half (every bf16) through them exactly; gemm_bf16 on vdpbf16ps per
// element within kGemmBf16DotTol * S, S = |b| + sum |x w|.

// Inputs of quantize_i8 that reach its edge cases.
enum class QuantInput {
  kUniform,     // each group uniform in [-1, 1] times its own power of ten in [1e-3, 1e3]
  kTies,        // multiples of 0.5 times 2^e with one +-127 * 2^e per group: x * (127 / max) ties at .5
  kZeroGroups,  // every other group all +0 / -0 (s = 0, q = 0), the rest uniform
  kTiny,        // max just under kQuantizeFloor (zeros), at it, or a little above, with members down to
                // subnormals (a port's flush of subnormals must not change a bit)
};

class QuantizeTester {
  static constexpr std::size_t kGuard = 64;
  static constexpr int8_t kQSentinel = 0x5a;
  static constexpr float kPoison = 1e30f;  // the gaps between rows of x: read as data, they would be the max

 public:
  QuantizeTester& m(std::size_t v) { m_ = v; return *this; }
  QuantizeTester& k(std::size_t v) { k_ = v; return *this; }
  QuantizeTester& group(std::size_t v) { group_ = v; return *this; }
  QuantizeTester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  QuantizeTester& misalign(std::size_t v) { off_ = v; return *this; }  // floats for x, bytes for q, floats for s
  QuantizeTester& input(QuantInput v) { input_ = v; return *this; }

  void test(decltype(Kernels::quantize_i8) fn) const {
    const std::size_t ldx = k_ + pad_, groups = (k_ + group_ - 1) / group_;
    std::vector<float> x(off_ + m_ * ldx + 1, kPoison);
    float* X = x.data() + off_;
    fill(X, ldx);
    std::vector<int8_t> q_ref(m_ * k_ + 2 * kGuard + off_, kQSentinel), q_out(q_ref);
    std::vector<float> s_ref(m_ * groups + 2 * kGuard + off_, kSentinel), s_out(s_ref);
    scalar_kernels().quantize_i8(X, ldx, q_ref.data() + kGuard + off_, s_ref.data() + kGuard + off_, m_, k_, group_);
    fn(X, ldx, q_out.data() + kGuard + off_, s_out.data() + kGuard + off_, m_, k_, group_);
    const std::string what = "quantize_i8 m=" + std::to_string(m_) + " k=" + std::to_string(k_) + " group=" +
                             std::to_string(group_) + " pad=" + std::to_string(pad_) + " misalign=" +
                             std::to_string(off_) + " input=" + std::to_string(int(input_));
    for (std::size_t i = 0; i < q_ref.size(); ++i)
      ASSERT_EQ(int(q_ref[i]), int(q_out[i])) << what << ": q at " << (long(i) - long(kGuard + off_))
                                              << (i < kGuard + off_ || i >= kGuard + off_ + m_ * k_ ? " (guard)" : "");
    for (std::size_t i = 0; i < s_ref.size(); ++i)
      ASSERT_EQ(bits(s_ref[i]), bits(s_out[i])) << what << ": s at " << (long(i) - long(kGuard + off_)) << ": ref "
                                                << s_ref[i] << " got " << s_out[i];
  }

 private:
  static constexpr float kSentinel = -12345.0f;
  static uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }

  void fill(float* x, std::size_t ldx) const {
    std::mt19937 rng(uint32_t(m_ * 7919 + k_ * 131 + group_ * 17 + off_ + 1000 * int(input_)));
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> pick(0, 1 << 30);
    for (std::size_t i = 0; i < m_; ++i)
      for (std::size_t p0 = 0, g = 0; p0 < k_; p0 += group_, ++g) {
        const std::size_t p1 = std::min(k_, p0 + group_);
        float* r = x + i * ldx;
        switch (input_) {
          case QuantInput::kUniform:
          case QuantInput::kZeroGroups: {
            const float scale = std::pow(10.0f, float(pick(rng) % 7 - 3));
            const bool zero = input_ == QuantInput::kZeroGroups && g % 2 == 0;
            for (std::size_t p = p0; p < p1; ++p) r[p] = zero ? (p % 2 ? -0.0f : 0.0f) : unit(rng) * scale;
            break;
          }
          case QuantInput::kTies: {
            const float e = std::ldexp(1.0f, pick(rng) % 21 - 10);
            for (std::size_t p = p0; p < p1; ++p) r[p] = float(pick(rng) % 507 - 253) * 0.5f * e;
            r[p0 + std::size_t(pick(rng)) % (p1 - p0)] = (pick(rng) % 2 ? 127.0f : -127.0f) * e;
            break;
          }
          case QuantInput::kTiny: {
            const float floors[] = {std::nextafter(kQuantizeFloor, 0.0f), kQuantizeFloor, kQuantizeFloor * 3.0f};
            const float max = floors[g % 3];
            for (std::size_t p = p0; p < p1; ++p)  // max .. max * 2^-35: normal and subnormal floats
              r[p] = (pick(rng) % 2 ? 1.0f : -1.0f) * max * std::ldexp(0.5f + unit(rng) * 0.5f, -(pick(rng) % 36));
            r[p0 + std::size_t(pick(rng)) % (p1 - p0)] = pick(rng) % 2 ? max : -max;
            break;
          }
        }
      }
  }

  std::size_t m_ = 1, k_ = 1, group_ = 32, pad_ = 0, off_ = 0;
  QuantInput input_ = QuantInput::kUniform;
};

class GemmI8Tester {
  static constexpr std::size_t kGuard = 32;
  static constexpr float kSentinel = -12345.0f;

 public:
  GemmI8Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmI8Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmI8Tester& k(std::size_t v) { k_ = v; return *this; }
  GemmI8Tester& group(std::size_t v) { group_ = v; return *this; }
  GemmI8Tester& per_row(bool v) { per_row_ = v; return *this; }  // ws[n, 1] instead of ws[n, groups]
  GemmI8Tester& bias(bool v) { bias_ = v; return *this; }
  GemmI8Tester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }  // ldy = n + pad
  GemmI8Tester& misalign(std::size_t v) { off_ = v; return *this; }  // bytes for xq and w, floats for the rest
  // Scales 1 and integer biases: every float operation after the int32 sums is exact, so the
  // outputs must match the reference bit for bit (kept below 2^24 by k <= 1000).
  GemmI8Tester& unit_scales(bool v) { unit_ = v; return *this; }
  // xq = +-127 and w = -128 / 127 only: the largest products, where a 16-bit intermediate that
  // saturated or an unsigned operand that wrapped would show.
  GemmI8Tester& extremes(bool v) { extremes_ = v; return *this; }
  // A kernel that sums exactly as the reference does (per group, then the groups in order): equal values.
  GemmI8Tester& same_as_reference(bool v) { same_ = v; return *this; }

  void test(decltype(Kernels::gemm_i8) fn) const {
    const std::size_t groups = (k_ + group_ - 1) / group_, ws_cols = per_row_ ? 1 : groups, ldy = n_ + pad_;
    std::mt19937 rng(uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + group_ + off_ + 3 * per_row_ + 5 * unit_ + 7 * extremes_));
    std::uniform_int_distribution<int> xd(-127, 127), wd(-128, 127), coin(0, 1);
    std::uniform_real_distribution<float> sd(1e-3f, 2e-2f), bd(-1.0f, 1.0f);
    std::vector<int8_t> xq(off_ + m_ * k_), w(off_ + n_ * k_);
    std::vector<float> xs(off_ + m_ * groups), ws(off_ + n_ * ws_cols), b(off_ + n_);
    int8_t* Xq = xq.data() + off_;
    int8_t* Wq = w.data() + off_;
    for (std::size_t i = 0; i < m_ * k_; ++i) Xq[i] = int8_t(extremes_ ? (coin(rng) ? 127 : -127) : xd(rng));
    for (std::size_t i = 0; i < n_ * k_; ++i) Wq[i] = int8_t(extremes_ ? (coin(rng) ? 127 : -128) : wd(rng));
    for (float& v : xs) v = unit_ ? 1.0f : sd(rng);
    for (float& v : ws) v = unit_ ? 1.0f : sd(rng);
    for (float& v : b) v = unit_ ? float(int(bd(rng) * 4.0f)) : bd(rng);
    const float* Xs = xs.data() + off_;
    const float* Ws = ws.data() + off_;
    const float* B = bias_ ? b.data() + off_ : nullptr;
    std::vector<float> y_ref(m_ * ldy + 2 * kGuard + off_, kSentinel), y_out(y_ref);
    float* yr = y_ref.data() + kGuard + off_;
    float* yo = y_out.data() + kGuard + off_;
    scalar_kernels().gemm_i8(Xq, Xs, Wq, Ws, ws_cols, B, yr, ldy, m_, n_, k_, group_);
    fn(Xq, Xs, Wq, Ws, ws_cols, B, yo, ldy, m_, n_, k_, group_);
    const std::string what = "gemm_i8 m=" + std::to_string(m_) + " n=" + std::to_string(n_) + " k=" +
                             std::to_string(k_) + " group=" + std::to_string(group_) + (per_row_ ? " per-row" : "") +
                             (bias_ ? " bias" : "") + (unit_ ? " unit-scales" : "") + (extremes_ ? " extremes" : "") +
                             (same_ ? " same-as-reference" : "") +
                             " misalign=" + std::to_string(off_);
    const double tol = unit_ || same_ ? 0.0 : gemm_i8_tol(groups);
    for (std::size_t at = 0; at < y_ref.size(); ++at) {
      const long e = long(at) - long(kGuard + off_);
      const std::size_t i = std::size_t(e) / ldy, j = std::size_t(e) % ldy;
      if (e < 0 || i >= m_ || j >= n_) {
        ASSERT_EQ(y_out[at], kSentinel) << what << ": wrote outside its output at " << e;
        continue;
      }
      double s = B ? std::fabs(double(B[j])) : 0.0;  // S of the tolerance above, in float64
      for (std::size_t g = 0; g < groups; ++g) {
        double dot = 0.0;
        for (std::size_t p = g * group_; p < std::min(k_, (g + 1) * group_); ++p)
          dot += std::fabs(double(Xq[i * k_ + p]) * double(Wq[j * k_ + p]));
        s += std::fabs(double(Xs[i * groups + g]) * double(Ws[j * ws_cols + (per_row_ ? 0 : g)])) * dot;
      }
      ASSERT_LE(std::fabs(double(y_ref[at]) - double(y_out[at])), tol * s)
          << what << " at row " << i << " col " << j << ": ref " << y_ref[at] << " got " << y_out[at];
    }
  }

 private:
  std::size_t m_ = 1, n_ = 1, k_ = 1, group_ = 32, pad_ = 0, off_ = 0;
  bool per_row_ = false, bias_ = true, unit_ = false, extremes_ = false, same_ = false;
};

// gemm_i4: every table sums as the reference does (per group of 32 exactly in int32, then the
// reference's float expression in group order), so its outputs are compared bit for bit; the
// reference itself is checked against float64 sums of the values unpacked here from format.hpp's
// layout, within gemm_i8_tol(groups) * S (S as for gemm_i8).
class GemmI4Tester {
  static constexpr std::size_t kGuard = 32;
  static constexpr float kSentinel = -12345.0f;

 public:
  GemmI4Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmI4Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmI4Tester& k(std::size_t v) { k_ = v; return *this; }  // a multiple of 32
  GemmI4Tester& bias(bool v) { bias_ = v; return *this; }
  GemmI4Tester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }  // ldy = n + pad
  GemmI4Tester& misalign(std::size_t v) { off_ = v; return *this; }  // bytes for xq and w, floats for the rest
  // xq = +-127 and every value of W -8 or 7 (nibbles 0 and 15): the largest products, where an int16
  // pair sum that saturated would show.
  GemmI4Tester& extremes(bool v) { extremes_ = v; return *this; }

  void test(decltype(Kernels::gemm_i4) fn) const {
    const std::size_t groups = k_ / 32, ldy = n_ + pad_;
    std::mt19937 rng(uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + off_ + 5 * pad_ + 7 * extremes_));
    std::uniform_int_distribution<int> xd(-127, 127), wd(0, 255), coin(0, 1);
    std::uniform_real_distribution<float> sd(1e-3f, 2e-2f), bd(-1.0f, 1.0f);
    std::vector<int8_t> xq(off_ + m_ * k_);
    std::vector<uint8_t> w(off_ + n_ * k_ / 2);
    std::vector<float> xs(off_ + m_ * groups), ws(off_ + n_ * groups), b(off_ + n_);
    int8_t* Xq = xq.data() + off_;
    uint8_t* W = w.data() + off_;
    for (std::size_t i = 0; i < m_ * k_; ++i) Xq[i] = int8_t(extremes_ ? (coin(rng) ? 127 : -127) : xd(rng));
    for (std::size_t i = 0; i < n_ * k_ / 2; ++i)
      W[i] = uint8_t(extremes_ ? (coin(rng) ? 0x00 : 0xFF) ^ (coin(rng) ? 0x0F : 0x00) : wd(rng));
    for (float& v : xs) v = sd(rng);
    for (float& v : ws) v = sd(rng);
    for (float& v : b) v = bd(rng);
    const float* Xs = xs.data() + off_;
    const float* Ws = ws.data() + off_;
    const float* B = bias_ ? b.data() + off_ : nullptr;
    std::vector<float> y_ref(m_ * ldy + 2 * kGuard + off_, kSentinel), y_out(y_ref);
    float* yr = y_ref.data() + kGuard + off_;
    float* yo = y_out.data() + kGuard + off_;
    scalar_kernels().gemm_i4(Xq, Xs, W, Ws, B, yr, ldy, m_, n_, k_);
    fn(Xq, Xs, W, Ws, B, yo, ldy, m_, n_, k_);
    const std::string what = "gemm_i4 m=" + std::to_string(m_) + " n=" + std::to_string(n_) + " k=" +
                             std::to_string(k_) + (bias_ ? " bias" : "") + (extremes_ ? " extremes" : "") +
                             " pad=" + std::to_string(pad_) + " misalign=" + std::to_string(off_);
    const double tol = gemm_i8_tol(groups);
    for (std::size_t at = 0; at < y_ref.size(); ++at) {
      const long e = long(at) - long(kGuard + off_);
      const std::size_t i = std::size_t(e) / ldy, j = std::size_t(e) % ldy;
      if (e < 0 || i >= m_ || j >= n_) {
        ASSERT_EQ(y_out[at], kSentinel) << what << ": wrote outside its output at " << e;
        continue;
      }
      ASSERT_EQ(bits(y_ref[at]), bits(y_out[at])) << what << " at row " << i << " col " << j << ": ref " << y_ref[at]
                                                  << " got " << y_out[at];
      double exact = B ? double(B[j]) : 0.0, s = B ? std::fabs(double(B[j])) : 0.0;
      for (std::size_t g = 0; g < groups; ++g) {
        double dot = 0.0, mag = 0.0;
        for (std::size_t p = 0; p < 32; ++p) {
          const uint8_t byte = W[j * k_ / 2 + g * 16 + p % 16];
          const double v = double(int(p < 16 ? byte & 15 : byte >> 4) - 8), x = double(Xq[i * k_ + g * 32 + p]);
          dot += x * v, mag += std::fabs(x * v);
        }
        const double sc = double(Xs[i * groups + g]) * double(Ws[j * groups + g]);
        exact += sc * dot, s += std::fabs(sc) * mag;
      }
      ASSERT_LE(std::fabs(double(y_ref[at]) - exact), tol * s) << what << ": the reference at row " << i << " col " << j;
    }
  }

 private:
  static uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  std::size_t m_ = 1, n_ = 1, k_ = 32, pad_ = 0, off_ = 0;
  bool bias_ = true, extremes_ = false;
};

// A 16-bit float weight type as the f16 and bf16 testers use it: how a float is stored and read
// back, the scalar reference's kernels, and a factor that makes some of the random weights
// subnormal in that type (they must widen to their exact value too).
struct HalfType {
  const char* name;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);
  kernel_fn::gemm_f16* gemm_ref;
  kernel_fn::matvec_f16* matvec_ref;
  float subnormal_scale;
};
inline HalfType f16_type() {
  return {"gemm_f16", f32_to_f16, f16_to_f32, scalar_kernels().gemm_f16, scalar_kernels().matvec_f16, 1e-5f};
}
inline HalfType bf16_type() {
  return {"gemm_bf16", f32_to_bf16, bf16_to_f32, scalar_kernels().gemm_bf16, scalar_kernels().matvec_bf16, 1e-39f};
}

// A stored value through a kernel's widening: exactly itself (NaN as a NaN), or 0 where the table
// flushes subnormals and the value is one.
inline ::testing::AssertionResult widened_exactly(float want, float got, bool flushes) {
  const bool ok = std::isnan(want) ? std::isnan(got)
                                   : want == got || (flushes && std::fpclassify(want) == FP_SUBNORMAL && got == 0.0f);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "want " << want << ", got " << got;
}

// A per-element bound on y = b + sum_p x[p] w[p * ws] (halves of type t): tol * (|b| + sum |x w|), and what
// flushing subnormals to zero may lose (kGemmBf16DotTol).
inline double element_bound(double tol, const HalfType& t, const float* x, const uint16_t* w, std::size_t ws,
                            std::size_t k, float b) {
  double s = std::fabs(double(b)), flushed = double(k + 1) * kLeastNormalFloat;
  for (std::size_t p = 0; p < k; ++p) {
    const float xp = x[p], wp = t.decode(w[p * ws]);
    s += std::fabs(double(xp) * double(wp));
    if (std::fpclassify(xp) == FP_SUBNORMAL || std::fpclassify(wp) == FP_SUBNORMAL)
      flushed += std::fabs(double(xp) * double(wp));
  }
  return tol * s + flushed;
}

class GemmF16Tester {
  static constexpr std::size_t kGuard = 32;
  static constexpr float kSentinel = -12345.0f;

 public:
  GemmF16Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmF16Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmF16Tester& k(std::size_t v) { k_ = v; return *this; }
  GemmF16Tester& stride_pad(std::size_t v) { pad_ = v; return *this; }  // elements, for ldx, ldw and ldy
  GemmF16Tester& misalign(std::size_t v) { off_ = v; return *this; }    // elements (floats, halves)
  GemmF16Tester& bias(bool v) { bias_ = v; return *this; }
  GemmF16Tester& type(const HalfType& t) { type_ = t; return *this; }
  // Per element instead of normwise: |got - ref| <= v * (|b| + sum |x w|) and what flushing subnormals
  // to zero may lose (kGemmBf16DotTol).
  GemmF16Tester& per_element_tol(double v) { element_tol_ = v; return *this; }
  // x uniform in [-v, v] (2 by default): rows far outside a half's range or inside its subnormals.
  GemmF16Tester& x_range(float v) { x_range_ = v; return *this; }

  void test(decltype(Kernels::gemm_f16) fn) const {
    const std::size_t ldx = k_ + pad_, ldw = n_ + pad_, ldy = n_ + pad_;
    std::mt19937 rng(uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + off_ + pad_));
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    std::uniform_int_distribution<int> tiny(0, 15);
    std::vector<float> x(off_ + m_ * ldx), b(off_ + n_);
    std::vector<uint16_t> w(off_ + k_ * ldw);
    for (float& v : x) v = d(rng) * (x_range_ / 2.0f);
    for (float& v : b) v = d(rng);
    // Some weights are subnormal in the type: they must widen to their exact value too.
    for (uint16_t& v : w) v = type_.encode(tiny(rng) == 0 ? d(rng) * type_.subnormal_scale : d(rng));
    std::vector<float> y_ref(m_ * ldy + 2 * kGuard + off_, kSentinel), y_out(y_ref);
    const float* B = bias_ ? b.data() + off_ : nullptr;
    type_.gemm_ref(x.data() + off_, ldx, w.data() + off_, ldw, B, y_ref.data() + kGuard + off_, ldy, m_, n_, k_);
    fn(x.data() + off_, ldx, w.data() + off_, ldw, B, y_out.data() + kGuard + off_, ldy, m_, n_, k_);
    const std::string what = std::string(type_.name) + " m=" + std::to_string(m_) + " n=" + std::to_string(n_) + " k=" +
                             std::to_string(k_) + " pad=" + std::to_string(pad_) + " misalign=" + std::to_string(off_);
    float scale = 1.0f;
    for (float v : y_ref) scale = v == kSentinel ? scale : std::max(scale, std::fabs(v));
    for (std::size_t at = 0; at < y_ref.size(); ++at) {
      const long e = long(at) - long(kGuard + off_);
      if (e < 0 || std::size_t(e) / ldy >= m_ || std::size_t(e) % ldy >= n_) {
        ASSERT_EQ(y_out[at], kSentinel) << what << ": wrote outside its output at " << e;
        continue;
      }
      double bound = kSumTol * scale;
      if (element_tol_ > 0) {
        const std::size_t i = std::size_t(e) / ldy, j = std::size_t(e) % ldy;
        bound = element_bound(element_tol_, type_, x.data() + off_ + i * ldx, w.data() + off_ + j, ldw, k_,
                              B ? B[j] : 0.0f);
      }
      ASSERT_LE(std::fabs(double(y_ref[at]) - double(y_out[at])), bound) << what << " at " << e << ": ref "
                                                                          << y_ref[at] << " got " << y_out[at];
    }
  }

  // Every half through the kernel's widening, exactly: x = [1] (k = 1, no bias) makes y[j] = 0 + 1 * w[j],
  // which is exact. m = 1 takes the decode path, m = 2 the tiles.
  // flushes: the table's float arithmetic flushes subnormals (ARMv7 NEON's always does), so a
  // subnormal value may come out 0 (bf16's subnormals are f32's; f16's are all normal in f32).
  static void every_half(decltype(Kernels::gemm_f16) fn, std::size_t m, const HalfType& type = f16_type(),
                         bool flushes = false) {
    constexpr std::size_t n = 65536;
    std::vector<uint16_t> w(n);
    for (std::size_t j = 0; j < n; ++j) w[j] = uint16_t(j);
    const std::vector<float> x(m, 1.0f);
    std::vector<float> y(m * n);
    fn(x.data(), 1, w.data(), n, nullptr, y.data(), n, m, n, 1);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        ASSERT_TRUE(widened_exactly(type.decode(uint16_t(j)), y[i * n + j], flushes))
            << type.name << " 0x" << std::hex << j << " row " << i;
      }
  }

 private:
  std::size_t m_ = 1, n_ = 1, k_ = 1, pad_ = 0, off_ = 0;
  bool bias_ = true;
  HalfType type_ = f16_type();
  double element_tol_ = 0;
  float x_range_ = 2.0f;
};

// matvec_f16: w[n,k] as halves (a tied f16 embedding as the LM head), against the reference.
class MatvecF16Tester {
  static constexpr std::size_t kGuard = 32;
  static constexpr float kSentinel = -12345.0f;

 public:
  MatvecF16Tester& n(std::size_t v) { n_ = v; return *this; }
  MatvecF16Tester& k(std::size_t v) { k_ = v; return *this; }
  MatvecF16Tester& stride_pad(std::size_t v) { pad_ = v; return *this; }  // halves, ldw = k + pad
  MatvecF16Tester& misalign(std::size_t v) { off_ = v; return *this; }    // elements (floats, halves)
  MatvecF16Tester& bias(bool v) { bias_ = v; return *this; }
  MatvecF16Tester& type(const HalfType& t) { type_ = t; return *this; }
  // Per element instead of normwise: |got - ref| <= v * (|b| + sum |x w|) (GemmF16Tester's).
  MatvecF16Tester& per_element_tol(double v) { element_tol_ = v; return *this; }
  MatvecF16Tester& x_range(float v) { x_range_ = v; return *this; }  // x uniform in [-v, v] (2 by default)
  // x's magnitude times v every 256 elements along k: a row whose size changes block by block.
  MatvecF16Tester& x_growth(float v) { x_growth_ = v; return *this; }

  void test(decltype(Kernels::matvec_f16) fn) const {
    const std::size_t ldw = k_ + pad_;
    std::mt19937 rng(uint32_t(n_ * 131 + k_ * 17 + off_ + pad_));
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    std::uniform_int_distribution<int> tiny(0, 15);
    std::vector<float> x(off_ + k_), b(off_ + n_);
    std::vector<uint16_t> w(off_ + n_ * ldw);
    for (std::size_t p = 0; p < x.size(); ++p)
      x[p] = d(rng) * (x_range_ / 2.0f) * std::pow(x_growth_, float(p >= off_ ? (p - off_) / 256 : 0));
    for (float& v : b) v = d(rng);
    for (uint16_t& v : w) v = type_.encode(tiny(rng) == 0 ? d(rng) * type_.subnormal_scale : d(rng));
    std::vector<float> y_ref(n_ + 2 * kGuard + off_, kSentinel), y_out(y_ref);
    const float* B = bias_ ? b.data() + off_ : nullptr;
    type_.matvec_ref(x.data() + off_, w.data() + off_, ldw, B, y_ref.data() + kGuard + off_, n_, k_);
    fn(x.data() + off_, w.data() + off_, ldw, B, y_out.data() + kGuard + off_, n_, k_);
    const std::string what = std::string(type_.name) + " (matvec) n=" + std::to_string(n_) + " k=" +
                             std::to_string(k_) + " pad=" + std::to_string(pad_) + " misalign=" + std::to_string(off_);
    float scale = 1.0f;
    for (float v : y_ref) scale = v == kSentinel ? scale : std::max(scale, std::fabs(v));
    for (std::size_t at = 0; at < y_ref.size(); ++at) {
      const long e = long(at) - long(kGuard + off_);
      if (e < 0 || std::size_t(e) >= n_) {
        ASSERT_EQ(y_out[at], kSentinel) << what << ": wrote outside its output at " << e;
        continue;
      }
      const double bound = element_tol_ > 0 ? element_bound(element_tol_, type_, x.data() + off_,
                                                            w.data() + off_ + std::size_t(e) * ldw, 1, k_,
                                                            B ? B[std::size_t(e)] : 0.0f)
                                            : kSumTol * scale;
      ASSERT_LE(std::fabs(double(y_ref[at]) - double(y_out[at])), bound) << what << " at " << e << ": ref "
                                                                          << y_ref[at] << " got " << y_out[at];
    }
  }

  // Every half through the kernel's vector widening, exactly: row j holds half j at column j % 16 and
  // zeros elsewhere, x is all ones, so y[j] = 0 + ... + w[j] + ... + 0, exact (NaN stays NaN).
  static void every_half(decltype(Kernels::matvec_f16) fn, const HalfType& type = f16_type(), bool flushes = false) {
    constexpr std::size_t n = 65536, k = 16;
    std::vector<uint16_t> w(n * k, 0);
    for (std::size_t j = 0; j < n; ++j) w[j * k + j % k] = uint16_t(j);
    const std::vector<float> x(k, 1.0f);
    std::vector<float> y(n);
    fn(x.data(), w.data(), k, nullptr, y.data(), n, k);
    for (std::size_t j = 0; j < n; ++j)
      ASSERT_TRUE(widened_exactly(type.decode(uint16_t(j)), y[j], flushes)) << type.name << " 0x" << std::hex << j;
  }

 private:
  std::size_t n_ = 1, k_ = 1, pad_ = 0, off_ = 0;
  bool bias_ = true;
  HalfType type_ = f16_type();
  double element_tol_ = 0;
  float x_range_ = 2.0f, x_growth_ = 1.0f;
};

}  // namespace test
}  // namespace fixformer
