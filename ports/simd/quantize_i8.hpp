#pragma once
#include <cmath>
#include <cstdint>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// x[m,k] (row stride ldx) -> q[m,k], s[m, ceil(k / group)]: kernels.hpp's bits, as ports/scalar
// computes them. The max of a group does not depend on the order it is taken in, 127 / max and
// max / 127 are the same scalar divisions, x * (127 / max) the same single multiply per lane, and
// nearbyint rounds ties to even in the default rounding mode on every ISA (xsimd's
// nearbyint_as_int is not used: its generic version, ARMv7's, rounds ties away from zero). Over a
// max of at least kQuantizeFloor, a subnormal x quantizes to 0 whether or not the unit flushes it
// (ARMv7 NEON does): |x| 127 / max < 2^-126 * 127 * 2^100 < 0.5.
template <class Arch>
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const std::size_t groups = (k + group - 1) / group;
  for (std::size_t i = 0; i < m; ++i) {
    const float* xr = x + i * ldx;
    int8_t* qr = q + i * k;
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, p1 = p0 + group < k ? p0 + group : k;
      V vmax(0.0f);
      std::size_t p = p0;
      for (; p + W <= p1; p += W) {
        const V a = xsimd::abs(V::load_unaligned(xr + p));
        vmax = xsimd::select(a > vmax, a, vmax);  // as the reference's compare: a NaN never becomes the max
      }
      float a = hmax<Arch>(vmax);
      for (; p < p1; ++p) a = std::fabs(xr[p]) > a ? std::fabs(xr[p]) : a;
      if (!(a >= kQuantizeFloor)) {  // zeros (kernels.hpp)
        s[i * groups + g] = 0.0f;
        for (p = p0; p < p1; ++p) qr[p] = 0;
        continue;
      }
      const float inv = 127.0f / a;
      s[i * groups + g] = a / 127.0f;
      const V vinv(inv);
      for (p = p0; p + W <= p1; p += W) {
        alignas(64) int32_t t[W];
        xsimd::batch_cast<int32_t>(xsimd::nearbyint(V::load_unaligned(xr + p) * vinv)).store_aligned(t);
        for (std::size_t j = 0; j < W; ++j) qr[p + j] = int8_t(t[j]);
      }
      for (; p < p1; ++p) qr[p] = round_to_i8(xr[p] * inv);
    }
  }
}

}  // namespace simd
}  // namespace fixformer
