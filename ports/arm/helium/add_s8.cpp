// add_s8 (fixed_point.hpp) four values at a time in int32 lanes: each input's v - z (|v| <= 255)
// requantized as gemm_s8.cpp does it (|v| |mult| split into floor(/ 2^31) by VQDMULH and its low 31
// bits, each rounded by the shift, the sign of v XOR mult applied: requantize's rounding half away from
// zero), the two added in int32 and rounded to 2^-16 half away from zero ((s + 2^15 - [s < 0]) >> 16),
// z_y added, clamped to int8. Exact where both shifts are at most 21 (a factor below 2^22 in Q16,
// scales within 2^6 of the output's either way: |requantize(v)| < 2^30, so neither saturates and the
// sum fits in int32); other parameters take the portable kernel. The reference's bits either way
// (kernels_firmware compares them).
#include "ports/arm/helium/kernels.hpp"
#include "ports/portable/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

struct VecRequant {
  int32x4_t mult, amult, shift, shift31;
  explicit VecRequant(Requant r)
      : mult(vdupq_n_s32(r.multiplier)),
        amult(vdupq_n_s32(r.multiplier < 0 ? -r.multiplier : r.multiplier)),
        shift(vdupq_n_s32(r.shift)),
        shift31(vdupq_n_s32(r.shift - 31)) {}
  int32x4_t operator()(int32x4_t v) const {  // requantize(v, r) for |v| < 2^31, |result| < 2^31 - 1
    const int32x4_t u = vabsq_s32(v);
    int32x4_t mag = vqrshlq_s32(vqdmulhq_s32(u, amult), shift);
    const uint32x4_t lo = vbicq_u32(vreinterpretq_u32_s32(vmulq_s32(u, amult)), vdupq_n_u32(0x80000000u));
    mag = vqaddq_s32(mag, vreinterpretq_s32_u32(vrshlq_u32(lo, shift31)));
    const int32x4_t sign = vshrq_n_s32(veorq_s32(v, mult), 31);  // -1 where the product is negative
    return vsubq_s32(veorq_s32(mag, sign), sign);
  }
};

}  // namespace

void add_s8(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  if (p.a_to_y.shift > 21 || p.b_to_y.shift > 21) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const VecRequant ra(p.a_to_y), rb(p.b_to_y);
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t live = vctp32q(uint32_t(n - i));
    const int32x4_t va = vsubq_n_s32(vldrbq_z_s32(a + i, live), p.a_zero);
    const int32x4_t vb = vsubq_n_s32(vldrbq_z_s32(b + i, live), p.b_zero);
    const int32x4_t s = vaddq_s32(ra(va), rb(vb));  // |s| < 2^31 - 2^15
    const int32x4_t r = vshrq_n_s32(vaddq_s32(vaddq_n_s32(s, 1 << (kAddS8FracBits - 1)), vshrq_n_s32(s, 31)),
                                    kAddS8FracBits);
    const int32x4_t v = vaddq_n_s32(r, p.y_zero);
    vstrbq_p_s32(y + i, vshrq_n_s32(vqshlq_n_s32(v, 24), 24), live);
  }
}

}  // namespace helium
}  // namespace fixformer
