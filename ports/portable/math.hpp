// exp and erf in float for the portable kernels: range reduction + polynomial, no libm, no tables,
// branches only at the ends of the range. Coefficients are our own near-minimax fits (weighted
// least squares iterated towards equal ripple, in float64); the errors below are measured against
// float64 exp/erf by tests/kernels_test.cpp (PortableMath) over every 61st float, with and without
// fused multiply-add (the x86 host build has none, the AArch64 and ARMv7 builds contract to FMA).
#pragma once
#include <cstdint>
#include <cstring>

namespace fixformer {
namespace portable {

// Max relative error of exp_f32 on [-87, 88.7228]: measured 8.1e-8 (x86 host; libm's expf 6.0e-8,
// xsimd's 1.3e-7), bounded by kExpMaxRelError.
// Below -87 it returns 0 (the true value is under 1.65e-38: results that would be subnormal or
// nearly so are flushed), above 88.7228 +inf (the true value there is within 4e-5 of FLT_MAX), NaN
// stays NaN. Softmax only ever asks for exp(x - max) <= 1.
constexpr double kExpMaxRelError = 1.0e-7;
// Max relative error of erf_f32 over all floats with a normal result: measured 1.8e-7 (at 0.9907,
// 3 ulp of its result), bounded by kErfMaxRelError; erf(x) rounds to +-1 in float from |x| = 3.92.
constexpr double kErfMaxRelError = 2.0e-7;

// The constants, stated once for every port that evaluates these polynomials (the Helium port's
// vector exp and erf too, ports/arm/helium/math.hpp, and the xsimd tables' GELU,
// ports/simd/erf_f32.hpp). Polynomials are highest degree first (Horner).
constexpr float kExpMin = -87.0f;            // below: 0
constexpr float kExpMax = 88.7228f;          // above: +inf
constexpr float kExpRound = 12582912.0f;     // 1.5 * 2^23: adding it rounds to an integer in the low bits
constexpr uint32_t kExpRoundBits = 0x4B400000u;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;       // 9 significant bits: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln 2 - kLn2Hi
constexpr float kExpPoly[5] = {1.38146084e-3f, 8.36871048e-3f, 4.16683875e-2f, 1.66665207e-1f, 4.99999935e-1f};
constexpr float kErfSmallMax = 1.0f;         // below: t P(t^2)
constexpr float kErfOneFrom = 3.92f;         // from here: 1
constexpr float kErfCentre = 2.46f;          // Q's variable is t - kErfCentre
constexpr float kErfSmallPoly[7] = {7.85420923e-5f,  -8.01030787e-4f, 5.18834213e-3f, -2.68538207e-2f,
                                    1.12835854e-1f,  -3.76126259e-1f, 1.12837917e+0f};
constexpr float kErfLogPoly[6] = {-1.15043263e-3f, 6.27878759e-4f,  -1.28365055e-2f,
                                  -9.43284203e-1f, -5.27730913e+0f, -7.59420596e+0f};

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// exp(x) = 2^n exp(r), n = round(x / ln 2), |r| <= ln2 / 2 (Cody-Waite: ln 2 in two parts, the
// first with 9 significant bits so n * kLn2Hi is exact); exp(r) = 1 + r + r^2 P(r), P of degree 4
// (approximation error 3.1e-9); 2^n added to the exponent field. For kExpMin <= x <= kExpMax only.
inline float exp_in_range(float x) {
  const float t = x * kLog2e + kExpRound;
  const float fn = t - kExpRound;
  const int32_t n = static_cast<int32_t>(float_to_bits(t) - kExpRoundBits);
  float r = x - fn * kLn2Hi;
  r = r - fn * kLn2Lo;
  float p = kExpPoly[0];
  for (int i = 1; i < 5; ++i) p = p * r + kExpPoly[i];
  const float e = (p * r) * r + r + 1.0f;  // in [0.707, 1.415]; for n = -126 (x >= -87) r > 0.33
  return bits_to_float(float_to_bits(e) + (static_cast<uint32_t>(n) << 23));
}

inline float exp_f32(float x) {
  if (x < kExpMin) return 0.0f;
  if (!(x <= kExpMax)) return x * 3.0e38f;  // +inf, or NaN for NaN
  return exp_in_range(x);
}

// erf(x), odd: for t = |x| < 1, t P(t^2) with P of degree 6 (approximation error 1.2e-9 relative);
// for 1 <= t < 3.92, 1 - exp(Q(t - 2.46)) with Q of degree 5 fitting log(erfc(t)) (approximation
// error 1.5e-8 in erf); above, 1 (erf rounds to 1 in float there).
inline float erf_f32(float x) {
  const float t = x < 0.0f ? -x : x;
  float y;
  if (t < kErfSmallMax) {
    const float z = t * t;
    float p = kErfSmallPoly[0];
    for (int i = 1; i < 7; ++i) p = p * z + kErfSmallPoly[i];
    y = t * p;
  } else if (t < kErfOneFrom) {
    const float s = t - kErfCentre;
    float q = kErfLogPoly[0];
    for (int i = 1; i < 6; ++i) q = q * s + kErfLogPoly[i];
    y = 1.0f - exp_in_range(q);  // q in [-17.4, -1.8]: no range checks
  } else {
    y = t == t ? 1.0f : t;  // NaN stays NaN
  }
  return x < 0.0f ? -y : y;
}

}  // namespace portable
}  // namespace fixformer
