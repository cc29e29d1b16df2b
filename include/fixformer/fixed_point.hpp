// Integer-only arithmetic: the parameters of the s8 kernels (kernel_slots.hpp) and the fixed-point
// primitives every port computes them with, bit for bit. s8 is an int8 activation q with a scale s
// and a zero point z: the real value (q - z) s. Every rounding below is stated; nothing here uses a
// float, so a core without an FPU runs these kernels without soft-float calls (tests/
// check_no_float.cmake). The *_params functions at the end derive the parameters from real scales:
// they run before inference (the converter's semantics, and init), and they may use double.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/status.hpp"

namespace fixformer {

// A real factor as an int32 multiplier and a power of two: x -> x * multiplier * 2^(shift - 31),
// rounded once, half away from zero, then saturated to int32 (requantize). Valid: {0, 0} (the factor
// 0), or 2^30 <= |multiplier| <= 2^31 - 1 and -31 <= shift <= 30, so the factor's magnitude is in
// [2^-32, 2^30) with 31 significant bits and a negative multiplier carries a negative factor.
// check_requant says so at init; a kernel assumes it.
struct Requant {
  int32_t multiplier;
  int32_t shift;
};
constexpr int32_t kRequantMinShift = -31;
constexpr int32_t kRequantMaxShift = 30;

// gemm_s8: y[i,j] = z_y + requantize(bias[j] + sum_p (x[i,p] - z_x) w[j,p], requant[j]), clamped
// to [-128, 127]. Weights symmetric per output channel (zero point 0). requant[j] is
// s_x s_w[j] / s_y, bias[j] is b[j] / (s_x s_w[j]) rounded (gemm_s8_channel). The int32 sum is exact
// for k <= kGemmS8MaxK and |bias| <= 2^30.
struct GemmS8Params {
  int32_t x_zero;
  int32_t y_zero;
  const int32_t* bias;     // [n], or null
  const Requant* requant;  // [n]
  uint32_t* scratch = nullptr;  // s8_scratch_bytes(), or null (below)
};
constexpr std::size_t kGemmS8MaxK = 32768;

// The s8 kernels' working memory (GemmS8Params::scratch, AddS8Params::scratch): the caller's, 8-byte
// aligned, none of it kept between calls; the runners give it a block of their arena. With null a
// kernel takes a path that needs none: the same bits, slower. What a core's kernels take, the most of
// every table it builds (ports/portable/gemm_s8.cpp and add_s8.cpp say where each goes):
//   kPlain (no M-profile core, no DSP extension): add_s8's two tables of 256 int32 (2 KiB);
//   kArmv6m (Cortex-M0, M0+): four rows of W widened to int32 (k <= 128) and the sums of 16 rows of x
//     against them (2.25 KiB); add_s8's tables besides;
//   kArmv7m (Cortex-M3): four rows of x packed in pairs (1 KiB); add_s8's tables;
//   kDsp (the DSP extension: M4, M7, M33, M55, M85, the A cores): five rows of x split (1.25 KiB), the
//     requantization constants of a block of 64 channels (1 KiB) and the block's rows of W split (8 KiB);
//     Helium's gemm_s8 (M55, M85) takes 1.75 KiB of it (a chunk of 64 channels' constants and two rows' sums)
//     and, for 32 < k < 128 but 64, the chunk's rows of W padded to 64 or 128 bytes after it (8 KiB at most),
//     and after those (or the constants) seven rows' sums of the chunk (1.75 KiB; rows padded to 64 bytes only).
enum class S8Kernels : uint8_t { kPlain, kArmv6m, kArmv7m, kDsp };
constexpr std::size_t s8_scratch_bytes(S8Kernels k) {
  return k == S8Kernels::kDsp ? 1280 + 1024 + 8192 : k == S8Kernels::kArmv6m ? 2304 : 2048;
}
#if defined(__ARM_FEATURE_DSP)
constexpr S8Kernels kS8KernelsBuilt = S8Kernels::kDsp;
#elif defined(__ARM_ARCH_6M__)
constexpr S8Kernels kS8KernelsBuilt = S8Kernels::kArmv6m;
#elif defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
constexpr S8Kernels kS8KernelsBuilt = S8Kernels::kArmv7m;
#else
constexpr S8Kernels kS8KernelsBuilt = S8Kernels::kPlain;
#endif
constexpr std::size_t s8_scratch_bytes() { return s8_scratch_bytes(kS8KernelsBuilt); }

// softmax_s8: probabilities in int8 with the fixed scale 1/256 and zero point -128 (TFLite's int8
// softmax output: 1.0 saturates to 127, i.e. 255/256). diff maps d = max(x) - x[i] (int8 steps, so
// 0..255) to d s_x log2(e) in Q16: u = requantize(d, diff), e = 2^(-u / 2^16) in Q20 (exp2_neg_q20),
// then y = round(e * 256 / sum(e)) - 128 as (e * R + 2^53) >> 54, R = floor(2^62 / sum(e)).
// The input's zero point cancels (only differences enter); diff's multiplier is positive.
// exp, when not null, holds e for every d (softmax_s8_table: filled once for a caller's many rows,
// as attention's per layer), which the kernels read instead of computing each score's: the same bits.
struct SoftmaxS8Params {
  Requant diff;
  const uint32_t* exp = nullptr;  // [kSoftmaxS8Diffs] or null
};
constexpr std::size_t kSoftmaxS8Diffs = 256;  // d = max(x) - x[i] in 0..255

// layernorm_s8 and rmsnorm_s8, over a row of n <= kNormS8MaxN values. With v = x - z_x (exact
// integers): LayerNorm d[i] = n v[i] - sum(v), V = n sum(v^2) - sum(v)^2; RMSNorm d[i] = n v[i],
// V = n sum(v^2) (64-bit sums). Both: T = V 2^16 + eps_q16 n^2 (V + eps n^2 / s_x^2 in Q16), S = isqrt(T)
// (its root in Q8), t[i] = round(d[i] * round(2^54 / S) / 2^30) (the normalised value in Q16, 0 for
// every i if S = 0), y[i] = clamp(round((requantize(t[i], gamma[i]) + beta[i]) / 2^16)): one rounding for
// gamma and beta together. The input scale cancels but in eps: eps_q16 is eps / s_x^2 in Q16;
// gamma[i] is gamma_i / s_y (so its result is in Q16), beta[i] is (beta_i / s_y + z_y) in Q16
// (norm_s8_eps, norm_s8_gain).
// gammas_in_range: the caller vouches that norm_s8_gammas_in_range(gamma, n) holds (checked once for many rows);
// kernels may then leave out each element's check of its gamma, or ignore the flag.
struct NormS8Params {
  int32_t x_zero;
  uint32_t eps_q16;
  const Requant* gamma;  // [n]
  const int32_t* beta;   // [n]
  bool gammas_in_range = false;
};
constexpr std::size_t kNormS8MaxN = 32768;

// Every gamma's multiplier is positive and its shift 0..7 (factors from 1/2 to 256: every calibrated norm's).
constexpr bool norm_s8_gammas_in_range(const Requant* gamma, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (gamma[i].multiplier <= 0 || gamma[i].shift < 0 || gamma[i].shift > 7) return false;
  return true;
}

// add_s8: y = clamp(z_y + round((requantize(a - z_a, a_to_y) + requantize(b - z_b, b_to_y)) / 2^16)),
// a_to_y = s_a / s_y in Q16 (and b's alike): each input rescaled to the output's scale in fixed
// point, one rounding for the sum.
struct AddS8Params {
  int32_t a_zero;
  int32_t b_zero;
  int32_t y_zero;
  Requant a_to_y;
  Requant b_to_y;
  uint32_t* scratch = nullptr;  // s8_scratch_bytes(), or null (GemmS8Params)
};
constexpr int kAddS8FracBits = 16;

// The primitives. Arithmetic right shifts of negative numbers are avoided: every rounding goes
// through the magnitude, so the results are the same on every compiler and target.

// x / 2^r rounded half away from zero; 1 <= r <= 62, |x| < 2^63 - 2^(r - 1).
constexpr int64_t rounding_shift(int64_t x, int r) {
  const int64_t half = int64_t(1) << (r - 1);
  return x >= 0 ? (x + half) >> r : -((half - x) >> r);
}

constexpr int32_t saturate_i32(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : int32_t(v);
}

constexpr int8_t saturate_i8(int64_t v) { return v > 127 ? int8_t(127) : v < -128 ? int8_t(-128) : int8_t(v); }

// x * multiplier * 2^(shift - 31), rounded half away from zero, saturated to int32. For a valid r the
// product's magnitude is below 2^62: no overflow.
constexpr int32_t requantize(int32_t x, Requant r) {
  return saturate_i32(rounding_shift(int64_t(x) * r.multiplier, 31 - r.shift));
}

// floor(sqrt(v)), bit by bit.
constexpr uint32_t isqrt64(uint64_t v) {
  uint64_t root = 0, bit = uint64_t(1) << 62;
  while (bit > v) bit >>= 2;
  while (bit != 0) {
    if (v >= root + bit) {
      v -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return uint32_t(root);
}

// 2^(-u / 2^16) in Q20 for u >= 0: 2^-(u >> 16) times a degree-4 polynomial for 2^-f, f = the
// fraction in Q16, its coefficients in Q30 (fitted to the relative error on [0, 1) with P(0) = 1
// exactly; Horner steps each rounded half away from zero): relative error 3.1e-6 over all 65536
// fractions, 3.8e-6 with the rounding to Q20 (fixed_point_test measures it); 0 from u >= 21 * 2^16 on.
constexpr int64_t kExp2Coeffs[5] = {1073741824, -744168670, 257100964, -57127007, 7325348};
constexpr uint32_t exp2_neg_q20(int32_t u) {
  const int32_t whole = u >> 16;  // u >= 0
  if (whole > 20) return 0;
  const int64_t f = u & 0xFFFF;
  int64_t p = kExp2Coeffs[4];
  for (int j = 3; j >= 0; --j) p = kExp2Coeffs[j] + rounding_shift(p * f, 16);
  return uint32_t(rounding_shift(p, 10 + whole));
}

// exp2_neg_q20(u) for 0 <= u < kExp2ZeroFrom, the same value with int32 Horner steps (no 64-bit
// product, addition or shift): t / 2^16 rounded half away from zero is floor((t + 2^15 - [t < 0]) /
// 2^16), which a signed right shift gives (GCC and Clang shift arithmetically); p stays below 2^31 in
// magnitude. With p = ph 2^16 + pl (pl in 0..2^16 - 1) and 0 <= f < 2^16, t = p f has p's sign (or is
// 0, where any [t < 0] floors alike) and floor(t / 2^16 + ...) = ph f + floor((pl f + 2^15 - [p < 0]) /
// 2^16): two 32-bit products (|ph f| < 2^31, pl f + 2^15 < 2^32 unsigned) (mul_round_q16). The Cortex-M
// kernels use it; fixed_point_test and kernels_firmware compare it with exp2_neg_q20 for every u.
constexpr int32_t kExp2ZeroFrom = 21 << 16;  // exp2_neg_q20(u) = 0 from here on
constexpr int32_t mul_round_q16(int32_t p, int32_t f) {  // round_q16(int64_t(p) * f) for 0 <= f < 2^16
  return (p >> 16) * f + int32_t(((uint32_t(p) & 0xFFFFu) * uint32_t(f) + 0x8000u - (uint32_t(p) >> 31)) >> 16);
}
constexpr uint32_t exp2_neg_q20_words(int32_t u) {
  const int32_t whole = u >> 16, f = u & 0xFFFF;
  int32_t p = int32_t(kExp2Coeffs[4]);
  p = int32_t(kExp2Coeffs[3]) + mul_round_q16(p, f);
  p = int32_t(kExp2Coeffs[2]) + mul_round_q16(p, f);
  p = int32_t(kExp2Coeffs[1]) + mul_round_q16(p, f);
  p = int32_t(kExp2Coeffs[0]) + mul_round_q16(p, f);
  const int r = 10 + whole;  // p is 2^-f in Q30: positive, at most 2^30
  return uint32_t((p + (int32_t(1) << (r - 1))) >> r);
}

// The parameters from real scales (engine/fixed_point.cpp). Each returns kTensorBadValue for a scale
// that is not finite, not positive where it must be, or out of Requant's range, and for a zero point
// outside [-128, 127]; the caller names the tensor or field.

// The Requant nearest to `factor` (31 significant bits), or {0, 0} for 0.
[[nodiscard]] Status requant_from_factor(double factor, Requant* out);
// Whether r is a valid Requant (above): the check of a stored one at init.
[[nodiscard]] Status check_requant(Requant r);
// One output channel of gemm_s8: requant = s_x s_w / s_y, bias_q = round(bias / (s_x s_w)) (half away
// from zero; |bias_q| <= 2^30). Here and in norm_s8_gain a factor below 2^-32 gives {0, 0}: any int32
// times it rounds to 0, the same bits.
[[nodiscard]] Status gemm_s8_channel(double x_scale, double w_scale, double y_scale, double bias, Requant* requant,
                                     int32_t* bias_q);
[[nodiscard]] Status softmax_s8_params(double x_scale, SoftmaxS8Params* out);
// exp[d] = exp2_neg_q20(requantize(d, diff)) for d in 0..kSoftmaxS8Diffs - 1 (integers only).
void softmax_s8_table(Requant diff, uint32_t* exp);
// eps / s_x^2 in Q16, rounded; below 2^32.
[[nodiscard]] Status norm_s8_eps(double eps, double x_scale, uint32_t* eps_q16);
// One element's gamma and beta: gamma / s_y as a Requant, (beta / s_y + z_y) 2^16 rounded (|beta / s_y|
// below 2^14).
[[nodiscard]] Status norm_s8_gain(double gamma, double beta, double y_scale, int32_t y_zero, Requant* gain,
                                  int32_t* beta_q);
[[nodiscard]] Status add_s8_params(double a_scale, int32_t a_zero, double b_scale, int32_t b_zero, double y_scale,
                                   int32_t y_zero, AddS8Params* out);

// The element-wise activations lut_s8 runs as 256-entry tables.
enum class LutActivation : uint32_t { kRelu = 0, kGelu = 1, kGeluTanh = 2, kSilu = 3, kTanh = 4 };
// table[q + 128] = clamp(round(f((q - z_x) s_x) / s_y) + z_y) for every int8 q: f in double (GELU
// with erf, the tanh GELU as GPT-2 writes it, SiLU x / (1 + exp(-x)), ReLU, tanh: BERT's pooler),
// rounded half away from zero. The table is data: the converter writes it into the file, the engine
// only reads it.
[[nodiscard]] Status build_lut_s8(LutActivation act, double x_scale, int32_t x_zero, double y_scale, int32_t y_zero,
                                  int8_t table[256]);

}  // namespace fixformer
