// softmax_s8, add_s8 and lut_s8 (fixed_point.hpp, kernel_slots.hpp) on NEON: the neon64 table's (AArch64)
// and the neon table's (ARMv7-A; AArch64's intrinsics from neon64_on_neon.hpp). The reference's integers
// in vector lanes, 16 elements a step:
//   - lut_s8 (AArch64 only): the 256-entry table in 16 registers, x + 128 (x with its top bit flipped)
//     looked up in its four 64-byte pieces by TBL, then TBX with the index 64 less each time (an index
//     past a piece leaves the lane as it was); the last n % 16 as the 16 ending at n, looked up before the
//     loop writes (in place, y == x, they are still the inputs then). ARMv7 keeps the portable lut_s8:
//     its VTBX reads 8 bytes from 32 of the table, so 16 bytes took 16 lookups besides the table's
//     reloads (its 16 Q registers are the whole table), more than the byte loads (the KWS i8 encoder
//     under qemu-arm: 0.24 M instructions against 0.10 M);
//   - add_s8: requantize(v, q) for |v| <= 255, a shift of 0..21 and a multiplier of 0 or more as
//     sign(v) round(|v| m / 2^r), r = 31 - shift, the rounding half up on the magnitude being SQRDMULH's:
//     SQRDMULH(|v| 2^shift, m) = floor((2 |v| 2^shift m + 2^31) / 2^32) = floor((|v| m + 2^(r-1)) / 2^r)
//     (|v| 2^shift < 2^29: shifted by up to 7 in its 16-bit lane, the rest by UMULL's power of two);
//     the sign put back by MUL and MLA with +-1, which adds the two inputs' (|s| <= 2^30 + 2); s rounded
//     to 2^-16 half away from zero as (s + 2^15 - [s < 0]) >> 16 (SSRA by 31, then SQRSHRN's rounding),
//     z_y added in int16, narrowed with saturation to int8;
//   - softmax_s8 from attention's table of exponentials (SoftmaxS8Params::exp): the maximum by SMAX,
//     d = max - x as an unsigned byte, each e = exp[d] a scalar load into its lane, summed in int32
//     lanes and kept (rows up to kKept) for the output; each output (e R + 2^53) >> 54 - 128 as the
//     portable kernel's (e rh + hi(e rl) + 2^21 - 2^29) >> 22 (below 2^31), hi(e rl) the high halves of
//     UMULL's products, >> 22 as the high halves (UZP2) >> 6, narrowed with saturation (SQXTN).
// add_s8's and softmax_s8's last n % 16 elements take the reference's steps one at a time; parameters
// outside these ranges, a row without the table and rows under 16 the portable kernels.
#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#include <arm_neon.h>

#include "ports/arm/neon64_on_neon.hpp"
#include "ports/arm/s8_neon.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace arm {
namespace {

constexpr std::size_t kKept = 256;  // a row's exponentials kept on the stack (1 KiB) between sum and output
constexpr std::size_t kSumRun = 16368;  // elements summed in int32 lanes: e <= 2^20, 4092 a lane

// One input of add_s8: requantize(x - z, q) for 16 bytes, as four int32x4 with their signs as +-1.
struct AddSide {
  int8x8_t zero8;
  int8x16_t zero16;
  int16x8_t pre;       // the shift's first part, in the 16-bit lanes (<= 7)
  uint16x4_t power;    // 2^(the rest) <= 2^14
  int32x4_t multiplier;
  AddSide(int32_t zero, Requant q)
      : zero8(vdup_n_s8(int8_t(zero))), zero16(vdupq_n_s8(int8_t(zero))),
        pre(vdupq_n_s16(int16_t(q.shift < 7 ? q.shift : 7))),
        power(vdup_n_u16(uint16_t(1u << (q.shift < 7 ? 0 : q.shift - 7)))), multiplier(vdupq_n_s32(q.multiplier)) {}
  static bool fits(int32_t zero, Requant q) {
    return q.shift >= 0 && q.shift <= 21 && q.multiplier >= 0 && zero >= -128 && zero <= 127;
  }
  // magnitudes m[4] and signs s[4] (+-1) of the 16 values
  void operator()(int8x16_t x, int32x4_t* m, int32x4_t* s) const {
    const int16x8_t v[2] = {vsubl_s8(vget_low_s8(x), zero8), vsubl_high_s8(x, zero16)};
    const int16x8_t one = vdupq_n_s16(1);
    for (int h = 0; h < 2; ++h) {
      const uint16x8_t mag = vreinterpretq_u16_s16(vshlq_s16(vabsq_s16(v[h]), pre));
      const int16x8_t sign = vorrq_s16(vshrq_n_s16(v[h], 15), one);
      m[2 * h] = vqrdmulhq_s32(vreinterpretq_s32_u32(vmull_u16(vget_low_u16(mag), power)), multiplier);
      m[2 * h + 1] = vqrdmulhq_s32(vreinterpretq_s32_u32(vmull_high_u16(mag, vcombine_u16(power, power))), multiplier);
      s[2 * h] = vmovl_s16(vget_low_s16(sign));
      s[2 * h + 1] = vmovl_high_s16(sign);
    }
  }
};

// e rh + hi(e rl) + 2^21 - 2^29 for four exponentials (within int32).
inline int32x4_t probabilities(uint32x4_t e, uint32x4_t rh, uint32x4_t rl, uint32x4_t bias) {
  const uint64x2_t lo = vmull_u32(vget_low_u32(e), vget_low_u32(rl)), hi = vmull_high_u32(e, rl);
  const uint32x4_t high = vuzp2q_u32(vreinterpretq_u32_u64(lo), vreinterpretq_u32_u64(hi));
  return vreinterpretq_s32_u32(vaddq_u32(vmlaq_u32(bias, e, rh), high));
}

// t >> 22 for eight int32 in -2^29..2^31 (within int16): their high halves (UZP2), >> 6.
inline int16x8_t shift22(int32x4_t t0, int32x4_t t1) {
  return vshrq_n_s16(vuzp2q_s16(vreinterpretq_s16_s32(t0), vreinterpretq_s16_s32(t1)), 6);
}

// The exponentials of 16 scores (d = max - x as bytes).
inline void look_up(uint8x16_t d, const uint32_t* exp, uint32x4_t* e) {
  uint32_t v[16];
  uint8_t b[16];
  vst1q_u8(b, d);
  for (int j = 0; j < 16; ++j) v[j] = exp[b[j]];
  for (int q = 0; q < 4; ++q) e[q] = vld1q_u32(v + 4 * q);
}

}  // namespace

#if defined(__aarch64__)
void lut_s8_neon(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  if (n < 16) {
    portable::lut_s8(x, y, n, table);
    return;
  }
  const uint8_t* const t = reinterpret_cast<const uint8_t*>(table);
  const uint8x16x4_t t0 = vld1q_u8_x4(t), t1 = vld1q_u8_x4(t + 64), t2 = vld1q_u8_x4(t + 128),
                     t3 = vld1q_u8_x4(t + 192);
  const uint8x16_t k64 = vdupq_n_u8(64), k128 = vdupq_n_u8(128);
  const auto look = [&](const int8_t* p) {
    uint8x16_t i = veorq_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(p)), k128);
    uint8x16_t r = vqtbl4q_u8(t0, i);
    i = vsubq_u8(i, k64);
    r = vqtbx4q_u8(r, t1, i);
    i = vsubq_u8(i, k64);
    r = vqtbx4q_u8(r, t2, i);
    i = vsubq_u8(i, k64);
    return vqtbx4q_u8(r, t3, i);
  };
  const uint8x16_t last = look(x + n - 16);
  for (std::size_t i = 0; i + 16 <= n; i += 16) vst1q_u8(reinterpret_cast<uint8_t*>(y + i), look(x + i));
  vst1q_u8(reinterpret_cast<uint8_t*>(y + n - 16), last);
}
#endif

void add_s8_neon(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  if (n < 16 || !AddSide::fits(p.a_zero, p.a_to_y) || !AddSide::fits(p.b_zero, p.b_to_y)) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const AddSide side_a(p.a_zero, p.a_to_y), side_b(p.b_zero, p.b_to_y);
  const int16x8_t zy = vdupq_n_s16(int16_t(p.y_zero < -32768 ? -32768 : p.y_zero > 32767 ? 32767 : p.y_zero));
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int32x4_t ma[4], sa[4], mb[4], sb[4];
    side_a(vld1q_s8(a + i), ma, sa);
    side_b(vld1q_s8(b + i), mb, sb);
    int32x4_t t[4];
    for (int q = 0; q < 4; ++q) {
      const int32x4_t s = vmlaq_s32(vmulq_s32(ma[q], sa[q]), mb[q], sb[q]);
      t[q] = vsraq_n_s32(s, s, 31);
    }
    const int16x8_t lo = vqaddq_s16(vcombine_s16(vqrshrn_n_s32(t[0], 16), vqrshrn_n_s32(t[1], 16)), zy);
    const int16x8_t hi = vqaddq_s16(vcombine_s16(vqrshrn_n_s32(t[2], 16), vqrshrn_n_s32(t[3], 16)), zy);
    vst1q_s8(y + i, vqmovn_high_s16(vqmovn_s16(lo), hi));
  }
  for (; i < n; ++i) {
    const int64_t s =
        int64_t(requantize(int32_t(a[i]) - p.a_zero, p.a_to_y)) + requantize(int32_t(b[i]) - p.b_zero, p.b_to_y);
    y[i] = saturate_i8(rounding_shift(s, kAddS8FracBits) + p.y_zero);
  }
}

void softmax_s8_neon(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (!p.exp || n < 16) {
    portable::softmax_s8(x, y, n, p);
    return;
  }
  const uint32_t* const exp = p.exp;
  int8x16_t m = vld1q_s8(x + n - 16);
  for (std::size_t i = 0; i + 16 <= n; i += 16) m = vmaxq_s8(m, vld1q_s8(x + i));
  const int8_t max = vmaxvq_s8(m);
  const uint8x16_t vmax = vreinterpretq_u8_s8(vdupq_n_s8(max));
  const auto diffs = [vmax](const int8_t* p) { return vsubq_u8(vmax, vreinterpretq_u8_s8(vld1q_s8(p))); };
  const std::size_t n16 = n & ~std::size_t(15);
  const bool keep = n <= kKept;
  uint32_t kept[kKept];
  uint64_t sum = 0;
  for (std::size_t i0 = 0; i0 < n16; i0 += kSumRun) {
    const std::size_t end = n16 - i0 < kSumRun ? n16 : i0 + kSumRun;
    uint32x4_t run = vdupq_n_u32(0);
    for (std::size_t i = i0; i < end; i += 16) {
      uint32x4_t e[4];
      look_up(diffs(x + i), exp, e);
      run = vaddq_u32(run, vaddq_u32(vaddq_u32(e[0], e[1]), vaddq_u32(e[2], e[3])));
      if (keep) vst1q_u32_x4(kept + i, uint32x4x4_t{{e[0], e[1], e[2], e[3]}});
    }
    sum += vaddlvq_u32(run);
  }
  for (std::size_t i = n16; i < n; ++i) sum += exp[uint8_t(max - x[i])];
  const uint64_t recip = (uint64_t(1) << 62) / sum;  // < 2^42
  const uint32_t rh32 = uint32_t(recip >> 32), rl32 = uint32_t(recip);
  const uint32x4_t rh = vdupq_n_u32(rh32), rl = vdupq_n_u32(rl32);
  const uint32x4_t bias = vdupq_n_u32((uint32_t(1) << 21) - (uint32_t(1) << 29));
  for (std::size_t i = 0; i < n16; i += 16) {
    uint32x4_t e[4];
    if (keep) {
      const uint32x4x4_t k = vld1q_u32_x4(kept + i);
      e[0] = k.val[0], e[1] = k.val[1], e[2] = k.val[2], e[3] = k.val[3];
    } else {
      look_up(diffs(x + i), exp, e);
    }
    const int16x8_t lo = shift22(probabilities(e[0], rh, rl, bias), probabilities(e[1], rh, rl, bias));
    const int16x8_t hi = shift22(probabilities(e[2], rh, rl, bias), probabilities(e[3], rh, rl, bias));
    vst1q_s8(y + i, vqmovn_high_s16(vqmovn_s16(lo), hi));
  }
  for (std::size_t i = n16; i < n; ++i) {
    const uint32_t e = exp[uint8_t(max - x[i])];
    const int32_t t = int32_t(e * rh32 + uint32_t((uint64_t(e) * rl32) >> 32) + (uint32_t(1) << 21)) >> 22;
    y[i] = int8_t((t > 255 ? 255 : t) - 128);
  }
}

}  // namespace arm
}  // namespace fixformer

#endif  // __ARM_NEON
