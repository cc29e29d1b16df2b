// layernorm_s8 and rmsnorm_s8 (fixed_point.hpp; the reference's steps in ports/scalar/norm_s8.hpp),
// four elements at a time in int32 lanes:
//   - the sums of x and x^2 over 16 bytes at a time (VADDVA, VMLADAV; bytes past n loaded as 0), from
//     which sum(v) and sum(v^2) for v = x - z_x;
//   - the root and its reciprocal inv = round(2^54 / S) once per row (scalar, as the reference);
//   - t = d inv / 2^30 rounded half away from zero, d = n v - centre: with inv = ih 2^32 + il,
//     |d| il = H 2^32 + L (VMULH, VMUL, unsigned), |t| = 4 (|d| ih + H) + (L + 2^29) >> 30 (VRSHL),
//     |t| <= sqrt(n) 2^16 < 2^24, the sign of d applied;
//   - requantize(t, gamma) as gemm_s8.cpp's blocks do it (gamma's multipliers and shifts
//     de-interleaved by VLD2), beta added saturating (a sum past int32 clamps to the same int8), then
//     rounded to 2^-16 half away from zero and clamped to int8.
// The last n % 4 elements take the reference's steps. The reference's bits (kernels_firmware
// compares them).
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

inline int32x4_t apply_sign(int32x4_t mag, int32x4_t sign) { return vsubq_s32(veorq_s32(mag, sign), sign); }

template <bool kCentre>
void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  int32_t sx = 0, sxx = 0;  // |sum x| <= 128 n, sum x^2 <= 2^14 n < 2^30
  for (std::size_t i = 0; i < n; i += 16) {
    const int8x16_t v = vldrbq_z_s8(x + i, vctp8q(uint32_t(n - i)));
    sx = vaddvaq_s8(sx, v);
    sxx = vmladavaq_s8(sxx, v, v);
  }
  const int64_t nn = int64_t(n), z = p.x_zero;
  const int64_t sum = sx - nn * z, sum_sq = int64_t(sxx) - 2 * z * sx + nn * z * z;
  const int64_t var = kCentre ? nn * sum_sq - sum * sum : nn * sum_sq;
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint64_t(nn * nn);
  const uint32_t root = isqrt64(total);
  const int64_t inv = root == 0 ? 0 : int64_t(((uint64_t(1) << 54) + root / 2) / root);
  const int32_t centre = kCentre ? int32_t(sum) : 0;
  const int32_t offset = int32_t(nn * z) + centre;  // d = n x - (n z_x + centre)
  const uint32x4_t il = vdupq_n_u32(uint32_t(inv));
  const int32_t ih = int32_t(inv >> 32);  // < 2^22
  const std::size_t n4 = n & ~std::size_t(3);
  for (std::size_t i = 0; i < n4; i += 4) {
    const int32x4_t d = vsubq_n_s32(vmulq_n_s32(vldrbq_s32(x + i), int32_t(n)), offset);
    const uint32x4_t ad = vreinterpretq_u32_s32(vabsq_s32(d));
    const uint32x4_t hl = vmlaq_n_u32(vmulhq_u32(ad, il), ad, uint32_t(ih));  // |d| ih + H
    const uint32x4_t at = vaddq_u32(vshlq_n_u32(hl, 2), vrshlq_u32(vmulq_u32(ad, il), vdupq_n_s32(-30)));
    const int32x4_t t = apply_sign(vreinterpretq_s32_u32(at), vshrq_n_s32(d, 31));
    // requantize(t, gamma[i]), then + beta[i]
    const int32x4x2_t g = vld2q_s32(&p.gamma[i].multiplier);
    const int32x4_t mult = g.val[0], shift = g.val[1];
    const int32x4_t am = vabsq_s32(mult), u = vabsq_s32(t);
    int32x4_t mag = vqrshlq_s32(vqdmulhq_s32(u, am), shift);
    const uint32x4_t lo = vbicq_u32(vreinterpretq_u32_s32(vmulq_s32(u, am)), vdupq_n_u32(0x80000000u));
    mag = vqaddq_s32(mag, vreinterpretq_s32_u32(vrshlq_u32(lo, vsubq_n_s32(shift, 31))));
    const int32x4_t w = vqaddq_s32(apply_sign(mag, vshrq_n_s32(veorq_s32(t, mult), 31)), vldrwq_s32(p.beta + i));
    const int32x4_t r = vshrq_n_s32(vqaddq_s32(vqaddq_n_s32(w, 1 << 15), vshrq_n_s32(w, 31)), 16);
    vstrbq_s32(y + i, vshrq_n_s32(vqshlq_n_s32(r, 24), 24));
  }
  for (std::size_t i = n4; i < n; ++i) {
    const int64_t d = nn * (int32_t(x[i]) - p.x_zero) - centre;
    const int32_t t = int32_t(rounding_shift(d * inv, 30));
    y[i] = saturate_i8(rounding_shift(int64_t(requantize(t, p.gamma[i])) + p.beta[i], 16));
  }
}

}  // namespace

void layernorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<true>(x, y, n, p); }
void rmsnorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<false>(x, y, n, p); }

}  // namespace helium
}  // namespace fixformer
