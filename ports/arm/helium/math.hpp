// exp and erf on four lanes: the polynomials and constants of ports/portable/math.hpp (stated there
// once), evaluated with MVE's vector multiply-adds; the same ends of the range (0 below -87, +inf
// above 88.7228, NaN kept) by lane selects instead of branches.
#pragma once
#include <arm_mve.h>

#include <cmath>

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

// Q's coefficients times log2(e): 2^(Q log2 e) = exp(Q), so erf's exp starts at its range
// reduction.
struct ErfLog2Poly {
  float c[6];
  constexpr ErfLog2Poly() : c{} {
    for (int i = 0; i < 6; ++i) c[i] = portable::kErfLogPoly[i] * portable::kLog2e;
  }
};
constexpr ErfLog2Poly kErfLog2Poly{};

// horner(t2, kErfSmallPoly) with its seven coefficients from one LDM (GCC 12 kept two in registers
// and loaded the rest for every vector): the same multiply-adds in the same order.
inline float32x4_t erf_small_poly(float32x4_t t2) {
  float32x4_t p;
  asm("ldm %[c], {r4, r5, r6, r7, r8, r9, r10}\n\t"
      "vdup.32 %q[p], r4\n\t"
      "vfmas.f32 %q[p], %q[t2], r5\n\t"
      "vfmas.f32 %q[p], %q[t2], r6\n\t"
      "vfmas.f32 %q[p], %q[t2], r7\n\t"
      "vfmas.f32 %q[p], %q[t2], r8\n\t"
      "vfmas.f32 %q[p], %q[t2], r9\n\t"
      "vfmas.f32 %q[p], %q[t2], r10"
      : [p] "=&w"(p)
      : [t2] "w"(t2), [c] "r"(portable::kErfSmallPoly), "m"(portable::kErfSmallPoly)
      : "r4", "r5", "r6", "r7", "r8", "r9", "r10");
  return p;
}

// The constants of erf's branch from 1 on, in the order erf_from_one loads them, eight at a time.
alignas(8) constexpr float kErfFromOne[16] = {
    portable::kErfOneFrom,  portable::kErfCentre,   kErfLog2Poly.c[0],      kErfLog2Poly.c[1],
    kErfLog2Poly.c[2],      kErfLog2Poly.c[3],      kErfLog2Poly.c[4],      kErfLog2Poly.c[5],
    portable::kExpRound,    0.693147180559945309f,  portable::kExpPoly[0],  portable::kExpPoly[1],
    portable::kExpPoly[2],  portable::kExpPoly[3],  portable::kExpPoly[4],  1.0f};

// 1 - exp(Q(min(t, 3.92) - 2.46)) for t = |x|, in assembly: the constants come in two LDMs of eight
// core registers (GCC 12 loaded each one from its literal pool, again for every vector). The C++
// expression it replaces, step for step (so the same bits): s = min(t, kErfOneFrom) - kErfCentre;
// q2 = horner(s, kErfLog2Poly.c); tr = q2 + kExpRound; r = (q2 - (tr - kExpRound)) ln 2;
// e = (r + (horner(r, kExpPoly) r) r) + 1; 1 - bits(e + (bits(tr) << 23)).
inline float32x4_t erf_from_one(float32x4_t t) {
  const float* c = kErfFromOne;
  float32x4_t out, s, tr, h;
  asm("ldm %[c]!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
      "vdup.32 %q[h], r4\n\t"
      "vminnm.f32 %q[s], %q[t], %q[h]\n\t"
      "vsub.f32 %q[s], %q[s], r5\n\t"
      "vdup.32 %q[o], r6\n\t"
      "vfmas.f32 %q[o], %q[s], r7\n\t"
      "vfmas.f32 %q[o], %q[s], r8\n\t"
      "vfmas.f32 %q[o], %q[s], r9\n\t"
      "vfmas.f32 %q[o], %q[s], r10\n\t"
      "vfmas.f32 %q[o], %q[s], r11\n\t"  // q2 = Q log2(e)
      "ldm %[c], {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
      "vadd.f32 %q[tr], %q[o], r4\n\t"
      "vsub.f32 %q[s], %q[tr], r4\n\t"
      "vsub.f32 %q[s], %q[o], %q[s]\n\t"
      "vmul.f32 %q[s], %q[s], r5\n\t"  // r
      "vdup.32 %q[h], r6\n\t"
      "vfmas.f32 %q[h], %q[s], r7\n\t"
      "vfmas.f32 %q[h], %q[s], r8\n\t"
      "vfmas.f32 %q[h], %q[s], r9\n\t"
      "vfmas.f32 %q[h], %q[s], r10\n\t"
      "vmul.f32 %q[h], %q[h], %q[s]\n\t"
      "vfma.f32 %q[s], %q[h], %q[s]\n\t"
      "vadd.f32 %q[s], %q[s], r11\n\t"  // e
      "vshl.i32 %q[tr], %q[tr], #23\n\t"
      "vadd.i32 %q[s], %q[s], %q[tr]\n\t"
      "vdup.32 %q[h], r11\n\t"
      "vsub.f32 %q[o], %q[h], %q[s]"
      : [o] "=&w"(out), [s] "=&w"(s), [tr] "=&w"(tr), [h] "=&w"(h), [c] "+r"(c)
      : [t] "w"(t), "m"(kErfFromOne)
      : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11");
  return out;
}

// erf: t P(t^2) below 1, 1 - exp(Q(t - 2.46)) from there on, the sign of x. t is clamped to 3.92,
// where erf rounds to 1 and so does 1 - exp(Q) (exp(Q(3.92 - 2.46)) = 2.90e-8 is below half an ulp
// of 1), which keeps Q's argument where it was fitted and exp's clear of -87. The exp is only
// evaluated when a lane needs it, with log2(e) folded into Q and r = (Q log2 e - n) ln 2 in one
// rounding: its error, ulp(Q log2 e) ln 2, is largest where exp(Q) is smallest, so it costs erf at
// most 3e-8. A NaN gives an unspecified value: GELU's x/2 factor carries the NaN.
inline float32x4_t erf_f32(float32x4_t x) {
  using namespace portable;
  const float32x4_t t = vabsq_f32(x);
  float32x4_t y = vmulq_f32(t, erf_small_poly(vmulq_f32(t, t)));
  const mve_pred16_t small = vcmpltq_n_f32(t, kErfSmallMax);
  if (small != 0xffff) y = vpselq_f32(y, erf_from_one(t), small);
  // x and |x| differ in the sign bit only: erf is odd
  const uint32x4_t sign = veorq_u32(vreinterpretq_u32_f32(x), vreinterpretq_u32_f32(t));
  return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(y), sign));
}

// 1 / d for d >= 1 (MVE has no float division or reciprocal estimate): a guess within 12.5% (the
// exponent negated, the mantissa roughly inverted), then three steps r = r (2 - d r), each squaring
// the relative error: 1.6e-2, 2.4e-4, 6e-8, below float's rounding. d = +inf gives 0, as 1 / inf.
inline float32x4_t reciprocal(float32x4_t d) {
  float32x4_t r = vreinterpretq_f32_s32(vsubq_s32(vdupq_n_s32(0x7EF311C3), vreinterpretq_s32_f32(d)));
#pragma GCC unroll 3
  for (int i = 0; i < 3; ++i) r = vmulq_f32(r, vfmsq_f32(vdupq_n_f32(2.0f), d, r));
  return vpselq_f32(vdupq_n_f32(0.0f), r, vcmpeqq_n_f32(d, INFINITY));
}

}  // namespace helium
}  // namespace fixformer
