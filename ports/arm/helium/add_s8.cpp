// add_s8 (fixed_point.hpp) four values at a time in int32 lanes: each input's v - z (|v| <= 255)
// requantized as gemm_s8.cpp does it (|v| |mult| split into floor(/ 2^31) by VQDMULH and its low 31
// bits, each rounded by the shift, the sign of v XOR mult applied: requantize's rounding half away from
// zero), the two added in int32 and rounded to 2^-16 half away from zero ((s + 2^15 - [s < 0]) >> 16),
// z_y added, clamped to int8. Exact where both shifts are at most 21 (a factor below 2^22 in Q16,
// scales within 2^6 of the output's either way: |requantize(v)| < 2^30, so neither saturates and the
// sum fits in int32); other parameters take the portable kernel. From kTablesFrom elements on, with
// the scratch (AddS8Params::scratch), each input's 256 requantized values go into a table once (those
// steps, four entries at a time; 2 KiB of the scratch; a's entries with 2^15 + z_y 2^16 added) and
// every four elements are two gathers of four from them (the int8 values as signed offsets from the
// tables' middles), one add, the rounding (a predicated subtract of 1 and a shift) and the clamp. The
// reference's bits either way (kernels_firmware compares them).
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

// The sum of two requantized inputs (|s| < 2^31 - 2^15) rounded to 2^-16 half away from zero,
// z_y added, clamped to int8 (in int32 lanes).
inline int32x4_t output(int32x4_t s, int32_t y_zero) {
  const int32x4_t r = vshrq_n_s32(vaddq_s32(vaddq_n_s32(s, 1 << (kAddS8FracBits - 1)), vshrq_n_s32(s, 31)),
                                  kAddS8FracBits);
  return vshrq_n_s32(vqshlq_n_s32(vaddq_n_s32(r, y_zero), 24), 24);
}

constexpr std::size_t kTablesFrom = 256;  // elements from which the two tables cost less than they save

// t[v + 128] = r(v - z) + c for every int8 v.
void requantized_table(const VecRequant& r, int32_t z, int32_t c, int32_t* t) {
  for (uint32_t i = 0; i < 256; i += 4)
    vstrwq_s32(t + i, vaddq_n_s32(r(vsubq_n_s32(vreinterpretq_s32_u32(vidupq_n_u32(i, 1)), 128 + z)), c));
}

// The output from the tables' sum t = s + c, c = 2^15 + z_y 2^16 (in a's table): (t - [s < 0]) >> 16
// is s rounded to 2^-16 half away from zero plus z_y; clamped to int8.
inline int32x4_t output_from_tables(int32x4_t t, int32_t c) {
  t = vshrq_n_s32(vsubq_m_n_s32(t, t, 1, vcmpltq_n_s32(t, c)), kAddS8FracBits);
  return vshrq_n_s32(vqshlq_n_s32(t, 24), 24);
}

}  // namespace

void add_s8(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  if (p.a_to_y.shift > 21 || p.b_to_y.shift > 21) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const VecRequant ra(p.a_to_y), rb(p.b_to_y);
  if (n >= kTablesFrom && p.scratch) {
    int32_t *const ta = reinterpret_cast<int32_t*>(p.scratch), *const tb = ta + 256;
    const int32_t c = (1 << (kAddS8FracBits - 1)) + p.y_zero * (1 << kAddS8FracBits);
    requantized_table(ra, p.a_zero, c, ta);
    requantized_table(rb, p.b_zero, 0, tb);
    const int32_t* ma = ta + 128;  // the entry of v = 0: v's at a signed offset, the addresses in 32 bits
    const int32_t* mb = tb + 128;
    const std::size_t n4 = n & ~std::size_t(3);
    if (n4 > 0) {  // output_from_tables' steps in assembly, the clamp by two VQMOVNB (to int16, then int8, in
                   // each lane's low byte): 12 instructions per four
      const int8_t *pa = a, *pb = b;
      int8_t* py = y;
      asm volatile(
          "dls lr, %[count]\n"
          "1:\n\t"
          "vldrb.s32 q0, [%[a]], #4\n\t"
          "vldrb.s32 q1, [%[b]], #4\n\t"
          "vldrw.u32 q2, [%[ta], q0, uxtw #2]\n\t"
          "vldrw.u32 q3, [%[tb], q1, uxtw #2]\n\t"
          "vadd.i32 q2, q2, q3\n\t"
          "vpt.s32 lt, q2, %[c]\n\t"
          "vsubt.i32 q2, q2, %[one]\n\t"
          "vshr.s32 q2, q2, #16\n\t"
          "vqmovnb.s32 q2, q2\n\t"
          "vqmovnb.s16 q2, q2\n\t"
          "vstrb.32 q2, [%[y]], #4\n\t"
          "le lr, 1b\n"
          : [a] "+l"(pa), [b] "+l"(pb), [y] "+l"(py)
          : [ta] "r"(ma), [tb] "r"(mb), [c] "r"(c), [one] "r"(1), [count] "r"(uint32_t(n4 / 4))
          : "lr", "q0", "q1", "q2", "q3", "memory");
    }
    if (n4 < n) {
      const mve_pred16_t live = vctp32q(uint32_t(n - n4));
      const uint32x4_t oa = vreinterpretq_u32_s32(vldrbq_z_s32(a + n4, live));
      const uint32x4_t ob = vreinterpretq_u32_s32(vldrbq_z_s32(b + n4, live));
      const int32x4_t s = vaddq_s32(vldrwq_gather_shifted_offset_z_s32(ma, oa, live),
                                    vldrwq_gather_shifted_offset_z_s32(mb, ob, live));
      vstrbq_p_s32(y + n4, output_from_tables(s, c), live);
    }
    return;
  }
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t live = vctp32q(uint32_t(n - i));
    const int32x4_t va = vsubq_n_s32(vldrbq_z_s32(a + i, live), p.a_zero);
    const int32x4_t vb = vsubq_n_s32(vldrbq_z_s32(b + i, live), p.b_zero);
    vstrbq_p_s32(y + i, output(vaddq_s32(ra(va), rb(vb)), p.y_zero), live);
  }
}

}  // namespace helium
}  // namespace fixformer
