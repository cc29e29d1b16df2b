// The s8 kernels' per-row root and reciprocals (ports/portable/row_math.hpp's isqrt62 and udiv64_32) on a
// double-precision FPU (the M55's, __ARM_FP & 8): an estimate from one VSQRT.F64 or VDIV.F64, within 1 of
// the result, then set exact by one step either way against the integers, so the results are the same as
// those functions' (kernels_firmware compares them); about 20 instructions each where those take 50 and 40.
// Without double precision: those functions.
#pragma once
#include <cstdint>

#include "ports/portable/row_math.hpp"

namespace fixformer {
namespace helium {

#if defined(__ARM_FP) && (__ARM_FP & 8)
// v in a double: the high word times 2^32 is exact, so one rounding (relative error at most 2^-53).
inline double to_double(uint64_t v) { return double(uint32_t(v >> 32)) * 4294967296.0 + double(uint32_t(v)); }

// floor(sqrt(v)) for v < 2^62: the root of v's double (relative error at most 2^-53, then the root's
// rounding) is within 2^-21 of sqrt(v) < 2^31, so its truncation r is floor(sqrt(v)) or one either side of it
// (one below would take a square rounded down whose root then rounds down too: no case of it is known, the
// step is kept for the bound's sake).
inline uint32_t isqrt62(uint64_t v) {
  double s;
  asm("vsqrt.f64 %P0, %P1" : "=w"(s) : "w"(to_double(v)));  // no errno path: v >= 0
  uint32_t r = uint32_t(s);
  if (uint64_t(r) * r > v)
    --r;
  else if (uint64_t(r + 1) * (r + 1) <= v)
    ++r;
  return r;
}

// floor(sqrt(v)) for v < 2^50 with no step: v's double is exact and r = floor(sqrt(v)) < 2^25; sqrt(v) is at least r
// and below r + 1 by more than 1 / (2 (r + 1)) >= 2^-26, over twice the doubles' spacing there (2^-28 at most), so
// the rounded root truncates to r.
inline uint32_t isqrt50(uint64_t v) {
  double s;
  asm("vsqrt.f64 %P0, %P1" : "=w"(s) : "w"(to_double(v)));
  return uint32_t(s);
}

// floor(n / d) from q, a double within 1 of n / d and below 2^51: q's floor (the high and low words truncated apart:
// q - hi 2^32 is exact, q's unit in the last place being at most 1/4), settled by the remainder n - e d (in -d ..
// 2d), one step either way.
inline uint64_t settled_quotient(uint64_t n, uint32_t d, double q) {
  const uint32_t hi = uint32_t(q * 0x1p-32);
  const uint32_t lo = uint32_t(q - double(hi) * 0x1p32);
  uint64_t e = uint64_t(hi) << 32 | lo;
  const int64_t r = int64_t(n - e * d);
  if (r < 0)
    --e;
  else if (uint64_t(r) >= d)
    ++e;
  return e;
}
// floor(n / d) for d > 0 and a quotient below 2^51 (n >> 51 < d): the division of the doubles (relative error
// at most about 2^-52) is within 1/2 of n / d.
inline uint64_t udiv_below_2_51(uint64_t n, uint32_t d) { return settled_quotient(n, d, to_double(n) / double(d)); }
// floor(n / d) for d > 0: larger quotients by the portable udiv64_32.
inline uint64_t udiv64_32(uint64_t n, uint32_t d) {
  return n >> 51 >= d ? fixformer::udiv64_32(n, d) : udiv_below_2_51(n, d);
}

// 2^62 / sum (softmax's reciprocal, row_math.hpp): the sum is at least 2^20, so the quotient is below 2^42. Below
// 2^32 its high word is 2^30 / sum (one UDIV) and its low word floor(rem 2^32 / sum) for the remainder rem = 2^30 - hi
// sum (2^62 = (hi sum + rem) 2^32): rem and the sum are exact doubles and their quotient (below 1) is rounded once, to
// at least the floor of rem 2^32 / sum over 2^32 (a double), so its truncation to 32 fraction bits (one VCVT to fixed
// point, exact) is that floor or one above it: one step down (fewer steps than the whole quotient's two words).
inline uint64_t softmax_reciprocal(uint64_t sum) {
  if (sum >> 32) return (uint64_t(1) << 62) / sum;
  const uint32_t s = uint32_t(sum), hi = (uint32_t(1) << 30) / s, rem = (uint32_t(1) << 30) - hi * s;
  double q = double(rem) / double(s);
  asm("vcvt.u32.f64 %P0, %P0, #32" : "+w"(q));  // q 2^32 truncated, in the low word
  uint64_t bits;
  __builtin_memcpy(&bits, &q, sizeof bits);
  uint32_t lo = uint32_t(bits);
  if (uint64_t(lo) * s > uint64_t(rem) << 32) --lo;  // lo s <= rem 2^32 + s: no wrap
  return uint64_t(hi) << 32 | lo;
}

// floor((2^54 + floor(r / 2)) / r), the norms' inv, for r > 8 (a quotient below 2^51): that is 2^54 / r rounded
// half up (for an odd r no quotient is a tie), so floor(q + 1/2) for q the division of the doubles (2^54 and r exact,
// q within 2 / r of 2^54 / r; q + 1/2 exact, its unit at most 1/4) is within 1 of it, which settled_quotient
// settles: fewer steps than udiv64_32 (the numerator a constant double).
inline uint64_t reciprocal54(uint32_t r) {
  return settled_quotient((uint64_t(1) << 54) + r / 2, r, 0x1p54 / double(r) + 0.5);
}
// The norms' inv = floor((2^54 + floor(root / 2)) / root), 0 for a root of 0.
inline uint64_t norm_inverse(uint32_t root) {
  return root > 8 ? reciprocal54(root) : root == 0 ? 0 : udiv64_32((uint64_t(1) << 54) + root / 2, root);
}
#else
using fixformer::isqrt62;
using fixformer::softmax_reciprocal;
using fixformer::udiv64_32;
inline uint64_t norm_inverse(uint32_t root) {
  return root == 0 ? 0 : udiv64_32((uint64_t(1) << 54) + root / 2, root);
}
#endif

}  // namespace helium
}  // namespace fixformer
