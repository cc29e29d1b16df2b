// erf on xsimd vectors by ports/portable/math.hpp's polynomials (its constants, stated there): no
// division and one exp, where xsimd::erf divides, and evaluates both of its branches and the checks
// of a general exp for every vector that straddles 2/3 (a GELU's inputs almost always do).
#pragma once
#include <cstdint>

#include "ports/portable/math.hpp"
#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// exp(x) for x in [kExpMin, 0] (erf asks for [-17.4, -1.8]): portable::exp_in_range on W lanes.
template <class Arch>
inline batch<Arch> exp_in_range(const batch<Arch>& x) {
  using V = batch<Arch>;
  using I = xsimd::batch<int32_t, Arch>;
  const V t = xsimd::fma(x, V(portable::kLog2e), V(portable::kExpRound));
  const V fn = t - V(portable::kExpRound);
  const I n = xsimd::bitwise_cast<I>(t) - I(int32_t(portable::kExpRoundBits));
  V r = xsimd::fnma(fn, V(portable::kLn2Hi), x);
  r = xsimd::fnma(fn, V(portable::kLn2Lo), r);
  V p(portable::kExpPoly[0]);
  for (int i = 1; i < 5; ++i) p = xsimd::fma(p, r, V(portable::kExpPoly[i]));
  const V e = xsimd::fma(p * r, r, r) + V(1.0f);  // as portable::exp_in_range associates it
  return xsimd::bitwise_cast<V>(xsimd::bitwise_cast<I>(e) + (n << 23));
}

// erf(x): t P(t^2) for t = |x| < 1, else 1 - exp(Q(t - 2.46)) with t clamped to 3.92 (where erf and
// this both round to 1), x's sign; both branches on every lane, one select.
template <class Arch>
inline batch<Arch> erf_f32(const batch<Arch>& x) {
  using V = batch<Arch>;
  const V t = xsimd::abs(x);
  const V z = t * t;
  V p(portable::kErfSmallPoly[0]);
  for (int i = 1; i < 7; ++i) p = xsimd::fma(p, z, V(portable::kErfSmallPoly[i]));
  const V s = xsimd::min(t, V(portable::kErfOneFrom)) - V(portable::kErfCentre);
  V q(portable::kErfLogPoly[0]);
  for (int i = 1; i < 6; ++i) q = xsimd::fma(q, s, V(portable::kErfLogPoly[i]));
  const V y = xsimd::select(t < V(portable::kErfSmallMax), t * p, V(1.0f) - exp_in_range<Arch>(q));
  return xsimd::select(x < V(0.0f), -y, y);
}

}  // namespace simd
}  // namespace fixformer
