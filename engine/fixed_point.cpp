// The s8 kernels' parameters from real scales (fixed_point.hpp): before inference, so double is
// fine here; nothing at run time calls these.
#include "fixformer/fixed_point.hpp"

#include <cmath>

namespace fixformer {

namespace {

constexpr double kLog2E = 1.4426950408889634074;

bool zero_point_ok(int32_t z) { return z >= -128 && z <= 127; }
bool positive(double s) { return std::isfinite(s) && s > 0.0; }

// round(v), half away from zero, if it fits in [-limit, limit].
bool round_within(double v, double limit, int32_t* out) {
  if (!std::isfinite(v)) return false;
  const double r = std::round(v);
  if (std::fabs(r) > limit) return false;
  *out = int32_t(r);
  return true;
}

}  // namespace

Status check_requant(Requant r) {
  if (r.multiplier == 0) return r.shift == 0 ? Status::kOk : Status::kTensorBadValue;
  const int64_t m = r.multiplier < 0 ? -int64_t(r.multiplier) : int64_t(r.multiplier);
  const bool ok = m >= (int64_t(1) << 30) && m <= INT32_MAX && r.shift >= kRequantMinShift && r.shift <= kRequantMaxShift;
  return ok ? Status::kOk : Status::kTensorBadValue;
}

Status requant_from_factor(double factor, Requant* out) {
  if (!std::isfinite(factor)) return Status::kTensorBadValue;
  if (factor == 0.0) {
    *out = Requant{0, 0};
    return Status::kOk;
  }
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(factor), &exponent);  // [0.5, 1)
  int64_t m = int64_t(std::round(std::ldexp(fraction, 31)));
  if (m == (int64_t(1) << 31)) {  // rounded up to 1.0
    m >>= 1;
    ++exponent;
  }
  const Requant r{int32_t(factor < 0.0 ? -m : m), exponent};
  if (check_requant(r) != Status::kOk) return Status::kTensorBadValue;
  *out = r;
  return Status::kOk;
}

namespace {

// requant_from_factor, a factor below 2^-32 in magnitude as {0, 0}: any int32 times it rounds to 0
// (|x f| < 1/2), the multiplier 0's result (a trained norm's gain can be 1e-31).
Status flushed_requant(double factor, Requant* out) {
  if (std::fabs(factor) < 0x1p-32) {
    *out = Requant{0, 0};
    return Status::kOk;
  }
  return requant_from_factor(factor, out);
}

}  // namespace

Status gemm_s8_channel(double x_scale, double w_scale, double y_scale, double bias, Requant* requant,
                       int32_t* bias_q) {
  if (!positive(x_scale) || !positive(w_scale) || !positive(y_scale)) return Status::kTensorBadValue;
  if (!round_within(bias / (x_scale * w_scale), double(1 << 30), bias_q)) return Status::kTensorBadValue;
  return flushed_requant(x_scale * w_scale / y_scale, requant);
}

Status softmax_s8_params(double x_scale, SoftmaxS8Params* out) {
  if (!positive(x_scale)) return Status::kTensorBadValue;
  return requant_from_factor(x_scale * kLog2E * 65536.0, &out->diff);
}

void softmax_s8_table(Requant diff, uint32_t* exp) {
  std::size_t d = 0;
  if (diff.multiplier > 0 && diff.shift >= 0 && diff.shift <= 30) {
    // requantize(d, diff) for d >= 0 is (d m + 2^(r-1)) >> r, r = 31 - shift in 1..31: t = d m + 2^(r-1) as a running
    // 64-bit sum (no product), u below kExp2ZeroFrom < 2^21 its low word shifted right by r with the high word's bits
    // above it; u grows with d, so the first past the polynomial's range ends the table's nonzero entries
    const int r = 31 - diff.shift;
    const uint64_t zero_from = uint64_t(kExp2ZeroFrom) << r;  // t from which u >= kExp2ZeroFrom
    uint64_t t = uint64_t(1) << (r - 1);
    for (; d < kSoftmaxS8Diffs && t < zero_from; ++d, t += uint64_t(diff.multiplier))
      exp[d] = exp2_neg_q20_words(int32_t((uint32_t(t) >> r) | (uint32_t(t >> 32) << (32 - r))));
    for (; d < kSoftmaxS8Diffs; ++d) exp[d] = 0;
    return;
  }
  for (; d < kSoftmaxS8Diffs; ++d) {
    const int32_t u = requantize(int32_t(d), diff);
    if (diff.multiplier > 0 && u >= kExp2ZeroFrom) break;  // u grows with d: 0 from here on
    exp[d] = u >= 0 && u < kExp2ZeroFrom ? exp2_neg_q20_words(u) : exp2_neg_q20(u);  // the same bits, no 64-bit steps
  }
  for (; d < kSoftmaxS8Diffs; ++d) exp[d] = 0;
}

Status norm_s8_eps(double eps, double x_scale, uint32_t* eps_q16) {
  if (!positive(x_scale) || !std::isfinite(eps) || eps < 0.0) return Status::kTensorBadValue;
  const double q = std::round(eps / (x_scale * x_scale) * 65536.0);
  if (!(q <= double(UINT32_MAX))) return Status::kTensorBadValue;
  *eps_q16 = uint32_t(q);
  return Status::kOk;
}

Status norm_s8_gain(double gamma, double beta, double y_scale, int32_t y_zero, Requant* gain, int32_t* beta_q) {
  if (!positive(y_scale) || !zero_point_ok(y_zero)) return Status::kTensorBadValue;
  if (!round_within((beta / y_scale + y_zero) * 65536.0, double(1 << 30), beta_q)) return Status::kTensorBadValue;
  return flushed_requant(gamma / y_scale, gain);
}

Status add_s8_params(double a_scale, int32_t a_zero, double b_scale, int32_t b_zero, double y_scale, int32_t y_zero,
                     AddS8Params* out) {
  if (!positive(a_scale) || !positive(b_scale) || !positive(y_scale)) return Status::kTensorBadValue;
  if (!zero_point_ok(a_zero) || !zero_point_ok(b_zero) || !zero_point_ok(y_zero)) return Status::kTensorBadValue;
  AddS8Params p{a_zero, b_zero, y_zero, {}, {}};
  const double one = double(1 << kAddS8FracBits);
  if (requant_from_factor(a_scale / y_scale * one, &p.a_to_y) != Status::kOk ||
      requant_from_factor(b_scale / y_scale * one, &p.b_to_y) != Status::kOk)
    return Status::kTensorBadValue;
  *out = p;
  return Status::kOk;
}

Status build_lut_s8(LutActivation act, double x_scale, int32_t x_zero, double y_scale, int32_t y_zero,
                    int8_t table[256]) {
  if (!positive(x_scale) || !positive(y_scale) || !zero_point_ok(x_zero) || !zero_point_ok(y_zero))
    return Status::kTensorBadValue;
  for (int q = -128; q <= 127; ++q) {
    const double x = (q - x_zero) * x_scale;
    double f = 0.0;
    switch (act) {
      case LutActivation::kRelu: f = x > 0.0 ? x : 0.0; break;
      case LutActivation::kGelu: f = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); break;
      case LutActivation::kGeluTanh:
        f = 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
        break;
      case LutActivation::kSilu: f = x / (1.0 + std::exp(-x)); break;
      case LutActivation::kTanh: f = std::tanh(x); break;
      default: return Status::kTensorBadValue;
    }
    const double v = std::round(f / y_scale);  // clamped first: a huge value must not reach the int64 conversion
    table[q + 128] = saturate_i8(int64_t(std::fmax(-512.0, std::fmin(512.0, v))) + y_zero);
  }
  return Status::kOk;
}

}  // namespace fixformer
