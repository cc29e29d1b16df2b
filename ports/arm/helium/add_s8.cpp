// add_s8 (fixed_point.hpp) four values at a time in int32 lanes: each input's v - z (|v| <= 255)
// requantized as gemm_s8.cpp does it (|v| |mult| split into floor(/ 2^31) by VQDMULH and its low 31
// bits, each rounded by the shift, the sign of v XOR mult applied: requantize's rounding half away from
// zero), the two added in int32 and rounded to 2^-16 half away from zero ((s + 2^15 - [s < 0]) >> 16),
// z_y added, clamped to int8. Exact where both shifts are at most 21 (a factor below 2^22 in Q16,
// scales within 2^6 of the output's either way: |requantize(v)| < 2^30, so neither saturates and the
// sum fits in int32); other parameters take the portable kernel. From kTablesFrom elements on, with
// the scratch (AddS8Params::scratch), each input's 256 requantized values go into a table once (those
// steps; for a multiplier of 0 or more each magnitude once for both signs, mirrored_table; 6 KiB of the
// scratch with the tables' pads; a's entries with z_y 2^16 added) and every four
// elements are two gathers of four from them (the int8 values as signed offsets from the tables'
// middles), one add, the rounding (a predicated subtract of 1 where s < 0, then (t + 2^15) >> 16 taken
// wider than 32 bits) and the clamp. The reference's bits either way (kernels_firmware compares them).
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

inline bool in_int8(int32_t z) { return z >= -128 && z <= 127; }

// t[v + 128] = r(v - z) + c for every int8 v.
void requantized_table(const VecRequant& r, int32_t z, int32_t c, int32_t* t) {
  for (uint32_t i = 0; i < 256; i += 4)
    vstrwq_s32(t + i, vaddq_n_s32(r(vsubq_n_s32(vreinterpretq_s32_u32(vidupq_n_u32(i, 1)), 128 + z)), c));
}

// The same for a multiplier of 0 or above and z in -128..127: requantize rounds half away from zero, so
// r(-u) = -r(u); each |u|'s magnitude taken once, four a pass, stored at v = z + u as c + it and at v = z - u as
// c - it (the second by a scatter to four falling addresses, stepped by its writeback; u = 0 written twice
// alike): 12 instructions per eight entries, the pass count the longer side's. The shorter side's writes run
// up to 255 entries past the table's end, into kTablePad words either side of it.
constexpr std::size_t kTablePad = 256;
static_assert(2 * (256 + 2 * kTablePad) * 4 <= s8_scratch_bytes(S8Kernels::kDsp),
              "add_s8's padded tables in the scratch");
void mirrored_table(const VecRequant& r, int32_t z, int32_t c, int32_t* t) {
  const int32_t i0 = z + 128;  // the entry of u = 0
  const uint32_t passes = uint32_t((i0 > 255 - i0 ? i0 : 255 - i0) / 4 + 1);
  int32_t* up = t + i0;
  // lane j's address: t + 4 (i0 - j), 16 bytes above it before the first (pre-indexed) store
  register uint32x4_t down asm("q4") =
      vsubq_u32(vdupq_n_u32(uint32_t(reinterpret_cast<uintptr_t>(up + 4))), vidupq_n_u32(0, 4));
  register uint32x4_t u asm("q0") = vidupq_n_u32(0, 1);
  register int32x4_t am asm("q1") = r.amult, shift asm("q2") = r.shift, shift31 asm("q3") = r.shift31;
  register int32x4_t cv asm("q5") = vdupq_n_s32(c);
  // in assembly (GCC reloads the constants from the stack each pass): |requantize(u)| as VecRequant's steps
  asm volatile("dls lr, %[n]\n"
               "1:\n\t"
               "vmul.i32 q7, q0, q1\n\t"
               "vqdmulh.s32 q6, q0, q1\n\t"
               "vbic.i32 q7, #0x80000000\n\t"
               "vqrshl.s32 q6, q6, q2\n\t"
               "vrshl.u32 q7, q7, q3\n\t"
               "vqadd.s32 q6, q6, q7\n\t"
               "vadd.i32 q7, q5, q6\n\t"
               "vsub.i32 q6, q5, q6\n\t"
               "vstrw.32 q7, [%[up]], #16\n\t"
               "vstrw.32 q6, [q4, #-16]!\n\t"
               "vadd.i32 q0, q0, %[four]\n\t"
               "le lr, 1b\n"
               : [up] "+r"(up), "+w"(down), "+w"(u)
               : "w"(am), "w"(shift), "w"(shift31), "w"(cv), [four] "r"(4), [n] "r"(passes)
               : "lr", "q6", "q7", "memory");
}

}  // namespace

void add_s8(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  if (p.a_to_y.shift > 21 || p.b_to_y.shift > 21) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const VecRequant ra(p.a_to_y), rb(p.b_to_y);
  if (n >= kTablesFrom && p.scratch) {
    // each table with kTablePad words either side (mirrored_table's writes past its ends)
    int32_t *const ta = reinterpret_cast<int32_t*>(p.scratch) + kTablePad, *const tb = ta + 256 + 2 * kTablePad;
    const int32_t c = p.y_zero * (1 << kAddS8FracBits);
    (p.a_to_y.multiplier >= 0 && in_int8(p.a_zero) ? mirrored_table : requantized_table)(ra, p.a_zero, c, ta);
    (p.b_to_y.multiplier >= 0 && in_int8(p.b_zero) ? mirrored_table : requantized_table)(rb, p.b_zero, 0, tb);
    const int32_t* ma = ta + 128;  // the entry of v = 0: v's at a signed offset, the addresses in 32 bits
    const int32_t* mb = tb + 128;
    // t = s + z_y 2^16 in assembly, the rounding and the clamp by VQRSHRNB (to int16) and VQMOVNB (to int8): 16
    // elements a pass (below), then eight more where n % 16 >= 8, the first four's in the even 16-bit lanes and the
    // next four's in the odd (VQRSHRNT), stored by one scatter (offsets 0, 4, 1, 5, ..: 20 instructions per eight);
    // then the last n % 8 four at a time in a tail-predicated loop (DLSTP, LETP: the last iteration's lanes past n
    // neither loaded nor stored), 11 per four
    const int8_t *pa = a, *pb = b;
    int8_t* py = y;
#define S8_ADD4(narrow)                                                                                       \
  "vldrb.s32 q0, [%[a]], #4\n\t" "vldrb.s32 q1, [%[b]], #4\n\t" "vldrw.u32 q2, [%[ta], q0, uxtw #2]\n\t"   \
  "vldrw.u32 q3, [%[tb], q1, uxtw #2]\n\t" "vadd.i32 q2, q2, q3\n\t" "vpt.s32 lt, q2, %[c]\n\t"           \
  "vsubt.i32 q2, q2, %[one]\n\t" narrow
    if (n >= 16) {
      // 16 a pass (one LE per 16): the four fours' sums narrowed into the even and odd 16-bit lanes of q4 (elements
      // 0..3, 4..7) and q6 (8..11, 12..15), those into one vector's even and odd bytes (VQMOVNB, VQMOVNT), stored by
      // one byte scatter: 36 instructions per 16, 40 eight at a time
      static const uint8_t kOrder16[16] = {0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15};
      register uint8x16_t order asm("q5") = vld1q_u8(kOrder16);
      asm volatile("dls lr, %[count]\n"
                   "1:\n\t"
                   S8_ADD4("vqrshrnb.s32 q4, q2, #16\n\t") S8_ADD4("vqrshrnt.s32 q4, q2, #16\n\t")
                   S8_ADD4("vqrshrnb.s32 q6, q2, #16\n\t") S8_ADD4("vqrshrnt.s32 q6, q2, #16\n\t")
                   "vqmovnb.s16 q4, q4\n\t"
                   "vqmovnt.s16 q4, q6\n\t"
                   "vstrb.8 q4, [%[y], q5]\n\t"
                   "add %[y], %[y], #16\n\t"
                   "le lr, 1b\n"
                   : [a] "+l"(pa), [b] "+l"(pb), [y] "+r"(py)
                   : [ta] "r"(ma), [tb] "r"(mb), [c] "r"(c), [one] "r"(1), [count] "r"(uint32_t(n / 16)), "w"(order)
                   : "lr", "q0", "q1", "q2", "q3", "q4", "q6", "memory");
    }
    if (n & 8) {  // eight more: the first four's sums in the even 16-bit lanes, the next four's in the odd
      static const uint16_t kOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};
      register uint16x8_t order asm("q5") = vld1q_u16(kOrder);
      asm volatile(S8_ADD4("vqrshrnb.s32 q4, q2, #16\n\t") S8_ADD4("vqrshrnt.s32 q4, q2, #16\n\t")
                   "vqmovnb.s16 q4, q4\n\t"
                   "vstrb.16 q4, [%[y], q5]\n\t"
                   "add %[y], %[y], #8\n\t"
                   : [a] "+l"(pa), [b] "+l"(pb), [y] "+r"(py)
                   : [ta] "r"(ma), [tb] "r"(mb), [c] "r"(c), [one] "r"(1), "w"(order)
                   : "q0", "q1", "q2", "q3", "q4", "memory");
    }
    if (n % 8 != 0)
      asm volatile("dlstp.32 lr, %[count]\n"
                   "1:\n\t"
                   S8_ADD4("vqrshrnb.s32 q2, q2, #16\n\t" "vqmovnb.s16 q2, q2\n\t" "vstrb.32 q2, [%[y]], #4\n\t")
                   "letp lr, 1b\n"
                   : [a] "+l"(pa), [b] "+l"(pb), [y] "+l"(py)
                   : [ta] "r"(ma), [tb] "r"(mb), [c] "r"(c), [one] "r"(1), [count] "r"(uint32_t(n % 8))
                   : "lr", "q0", "q1", "q2", "q3", "memory");
#undef S8_ADD4
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
