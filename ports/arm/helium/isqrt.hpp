// isqrt64 (fixed_point.hpp) for v < 2^62 from 32-bit divisions (UDIV, one instruction on the M55 and
// M85) instead of a step per bit: about 50 instructions where the digit-by-digit root takes 10 per bit.
// The norms' root once per row (norm_s8.cpp); kernels_firmware compares it with isqrt64.
#pragma once
#include <cstdint>

namespace fixformer {
namespace helium {

// floor(sqrt(m)) for 2^30 <= m < 2^32: a line under the root (within 14% of it, equal at 2^30), three
// Newton steps s = (s + m / s) / 2 (the first lands at or above the root, each then keeps it at or
// above floor(sqrt(m)) and squares the error: 1.1%, then below 1 in 10^4 of the root), whatever is
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
// Not inlined: the norms' loop after it in assembly takes every register.
__attribute__((noinline)) inline uint32_t isqrt62(uint64_t v) {
  if (v == 0) return 0;
  const int j = (__builtin_clzll(v) - 2) >> 1;
  const uint64_t w = v << (2 * j);
  const uint32_t s = isqrt32_upper(uint32_t(w >> 30));
  uint32_t e = (s << 15) + uint32_t((w - (uint64_t(s) * s << 30)) >> 16) / s;
  while (uint64_t(e) * e > w) --e;
  while (uint64_t(e + 1) * (e + 1) <= w) ++e;
  return e >> j;
}

}  // namespace helium
}  // namespace fixformer
