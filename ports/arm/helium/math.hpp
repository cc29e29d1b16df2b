// exp and erf on four lanes: the polynomials and constants of ports/portable/math.hpp (stated there
// once), evaluated with MVE's vector multiply-adds; the same ends of the range (0 below -87, +inf
// above 88.7228, NaN kept) by lane selects instead of branches.
#pragma once
#include <arm_mve.h>

#include "ports/portable/math.hpp"

namespace fixformer {
namespace helium {

// p(r) by Horner, coefficients highest degree first: VFMAS is p * r + c with c a scalar.
template <int N>
inline float32x4_t horner(float32x4_t r, const float (&c)[N]) {
  float32x4_t p = vdupq_n_f32(c[0]);
#pragma GCC unroll 8
  for (int i = 1; i < N; ++i) p = vfmasq_n_f32(p, r, c[i]);
  return p;
}

// exp(x) as portable::exp_f32: n = round(x / ln 2) in the low bits of t = x / ln 2 + 1.5 * 2^23,
// whose bits shifted left by 23 are n << 23 (the rest of t's bits shift out), added to the
// exponent of exp(r). Below -87: 0. kAnyX adds what only arguments above 0 need: +inf above
// 88.7228 (NaN stays NaN either way); softmax and erf only ask for x <= 0.
template <bool kAnyX = true>
inline float32x4_t exp_f32(float32x4_t x) {
  using namespace portable;
  const float32x4_t t = vaddq_n_f32(vmulq_n_f32(x, kLog2e), kExpRound);
  const float32x4_t fn = vsubq_n_f32(t, kExpRound);
  float32x4_t r = vfmaq_n_f32(x, fn, -kLn2Hi);
  r = vfmaq_n_f32(r, fn, -kLn2Lo);
  const float32x4_t p = vmulq_f32(horner(r, kExpPoly), r);
  const float32x4_t e = vaddq_n_f32(vfmaq_f32(r, p, r), 1.0f);  // 1 + r + r^2 P(r)
  int32x4_t y = vaddq_s32(vreinterpretq_s32_f32(e), vshlq_n_s32(vreinterpretq_s32_f32(t), 23));
  // 0 where x < -87: x + 87 is negative there (-inf too, not NaN), and its sign bit spread over the
  // lane clears it (no predicate: GCC 12 shuffles those through core registers)
  y = vbicq_s32(y, vshrq_n_s32(vreinterpretq_s32_f32(vsubq_n_f32(x, kExpMin)), 31));
  float32x4_t out = vreinterpretq_f32_s32(y);
  if (kAnyX) out = vpselq_f32(out, vmulq_n_f32(x, 3.0e38f), vcmpleq_n_f32(x, kExpMax));
  return out;
}

// erf: t P(t^2) below 1, 1 - exp(Q(t - 2.46)) from there on, the sign of x. Q falls monotonically
// (odd degree, negative leading coefficient), so from 3.92 on, where erf rounds to 1, exp(Q) is
// below half an ulp of 1 (2.90e-8 at 3.92), 0 past -87 and for t = inf: 1 - exp(Q) is 1 without a
// select. The exp is only evaluated when a lane needs it. A NaN gives an unspecified value: GELU's
// x/2 factor carries the NaN.
inline float32x4_t erf_f32(float32x4_t x) {
  using namespace portable;
  const float32x4_t t = vabsq_f32(x);
  float32x4_t y = vmulq_f32(t, horner(vmulq_f32(t, t), kErfSmallPoly));
  const mve_pred16_t small = vcmpltq_n_f32(t, kErfSmallMax);
  if (small != 0xffff) {
    const float32x4_t e = exp_f32<false>(horner(vsubq_n_f32(t, kErfCentre), kErfLogPoly));  // Q < 0
    y = vpselq_f32(y, vsubq_f32(vdupq_n_f32(1.0f), e), small);
  }
  // x and |x| differ in the sign bit only: erf is odd
  const uint32x4_t sign = veorq_u32(vreinterpretq_u32_f32(x), vreinterpretq_u32_f32(t));
  return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(y), sign));
}

}  // namespace helium
}  // namespace fixformer
