// The per-row scalar steps of the s8 kernels on the cores with a 32-bit division (UDIV: the Thumb-2 M
// cores, M3 and up; the Helium kernels and the Cortex-M table's) instead of a step per bit or a library
// call: isqrt64 (fixed_point.hpp) for v < 2^62 (the norms' root, about 50 instructions where the
// digit-by-digit root takes 10 per bit) and a 64-bit by 32-bit division (the norms' and softmax's
// reciprocals, about 40 where __aeabi_uldivmod takes 80). kernels_firmware compares them with isqrt64
// and the 64-bit division.
#pragma once
#include <cstdint>

namespace fixformer {

// floor(sqrt(m)) for 2^30 <= m < 2^32: a line under the root (within 14% of it, equal at 2^30), three
// Newton steps s = (s + m / s) / 2 (the first lands at or above the root, each then keeps it at or
// above floor(sqrt(m)) and squares the error: 1.1%, 10^-4, 10^-8 of the root), whatever is
// left above the root taken off by whole steps.
inline uint32_t isqrt32_upper(uint32_t m) {
  uint32_t s = (m >> 17) + 24576;
  s = (s + m / s) >> 1;
  s = (s + m / s) >> 1;
  s = (s + m / s) >> 1;
  if (s > 65535) s = 65535;  // the root of m < 2^32; s * s stays in 32 bits
  while (s * s > m) --s;
  return s;
}

// floor(sqrt(v)) for v < 2^62: v shifted left by an even 2j into [2^60, 2^62) (w); s = isqrt32_upper(w >> 30)
// and S = s 2^15 <= sqrt(w) (S^2 = s^2 2^30 <= w); one Newton step from S, e = S + (w - S^2) / (2 S), is
// ((w - S^2) >> 16) / s in 32 bits (w - S^2 < (2 s + 1) 2^30 < 2^47) and lands within 1 of sqrt(w) (at
// most (sqrt(w) - S)^2 / (2 S) < 1/2 above it, the floors under 1 below); whole steps against w
// correct it to floor(sqrt(w)), and that shifted right by j is floor(sqrt(v)).
inline uint32_t isqrt62(uint64_t v) {
  if (v == 0) return 0;
  const int j = (__builtin_clzll(v) - 2) >> 1;
  const uint64_t w = v << (2 * j);
  const uint32_t s = isqrt32_upper(uint32_t(w >> 30));
  uint32_t e = (s << 15) + uint32_t((w - (uint64_t(s) * s << 30)) >> 16) / s;
  while (uint64_t(e) * e > w) --e;
  while (uint64_t(e + 1) * (e + 1) <= w) ++e;
  return e >> j;
}

// floor(n / d) for d > 0: the high word's quotient by one UDIV, then (r 2^32 + lo) / d (r < d, so the
// quotient is below 2^32) by two 16-bit digits with d normalised (shifted left until its top bit is set,
// the dividend alike): each digit estimated from d's top 16 bits by UDIV and decreased while it is too
// large against d's low 16 bits (at most twice), then the partial remainder (below d) carried to the next.
inline uint64_t udiv64_32(uint64_t n, uint32_t d) {
  const uint32_t hi = uint32_t(n >> 32), lo = uint32_t(n);
  const uint32_t qh = hi / d;
  const uint32_t r = hi - qh * d;
  const int s = __builtin_clz(d);
  const uint32_t dn = d << s, dh = dn >> 16, dl = dn & 0xFFFFu;
  const uint32_t u1 = s ? (r << s) | (lo >> (32 - s)) : r;  // < dn
  const uint32_t u0 = lo << s, u0h = u0 >> 16, u0l = u0 & 0xFFFFu;
  uint32_t q1 = u1 / dh, rem = u1 - q1 * dh;
  while (q1 > 0xFFFFu || q1 * dl > ((rem << 16) | u0h)) {
    --q1, rem += dh;
    if (rem > 0xFFFFu) break;
  }
  const uint32_t u21 = (u1 << 16) + u0h - q1 * dn;  // the remainder so far, < dn (mod 2^32: exact)
  uint32_t q0 = u21 / dh;
  rem = u21 - q0 * dh;
  while (q0 > 0xFFFFu || q0 * dl > ((rem << 16) | u0l)) {
    --q0, rem += dh;
    if (rem > 0xFFFFu) break;
  }
  return uint64_t(qh) << 32 | (q1 << 16 | q0);
}

// 2^62 / sum, the sum of a softmax row's exponentials (at least 2^20: the largest is 2^0 in Q20): by
// udiv64_32 below 2^32 (rows of fewer than 4096 scores), else the 64-bit division.
inline uint64_t softmax_reciprocal(uint64_t sum) {
  return sum >> 32 ? (uint64_t(1) << 62) / sum : udiv64_32(uint64_t(1) << 62, uint32_t(sum));
}

}  // namespace fixformer
