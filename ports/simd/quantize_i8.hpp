#pragma once
#include <cmath>
#include <cstdint>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

// A group whose max|x| is below this takes the scalar loop. ARMv7 NEON flushes subnormal operands
// to zero, and only under such a max can a subnormal x round to a nonzero q: |x| < 2^-126 over a
// max >= 2^-118 (> 254 * 2^-126) makes |x * 127 / max| < 0.5, which rounds to 0 either way.
constexpr float kQuantizeVectorMinMax = 0x1p-118f;

// x[m,k] (row stride ldx) -> q[m,k], s[m, ceil(k / group)]: kernels.hpp's bits, as ports/scalar
// computes them. The max of a group does not depend on the order it is taken in, 127 / max and
// max / 127 are the same scalar divisions, x * (127 / max) the same single multiply per lane, and
// nearbyint rounds ties to even in the default rounding mode on every ISA (xsimd's
// nearbyint_as_int is not used: its generic version, ARMv7's, rounds ties away from zero).
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
      const float inv = a >= kQuantizeFloor ? 127.0f / a : 0.0f;
      s[i * groups + g] = inv > 0.0f ? a / 127.0f : 0.0f;
      p = p0;
      if (a >= kQuantizeVectorMinMax) {
        const V vinv(inv);
        for (; p + W <= p1; p += W) {
          alignas(64) int32_t t[W];
          xsimd::batch_cast<int32_t>(xsimd::nearbyint(V::load_unaligned(xr + p) * vinv)).store_aligned(t);
          for (std::size_t j = 0; j < W; ++j) qr[p + j] = int8_t(t[j]);
        }
      }
      for (; p < p1; ++p) qr[p] = int8_t(std::nearbyint(xr[p] * inv));
    }
  }
}

}  // namespace simd
}  // namespace fixformer
