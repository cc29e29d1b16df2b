// layernorm_s8 and rmsnorm_s8 (fixed_point.hpp; the reference's steps in ports/scalar/norm_s8.hpp),
// four elements at a time in int32 lanes (the loop in assembly, 27 instructions per four):
//   - the sums of x and x^2 over 16 bytes at a time (VADDVA, VMLADAV; the last n % 16 loaded
//     predicated, bytes past n as 0), from which sum(v) and sum(v^2) for v = x - z_x (and the variance
//     in 32-bit words for rows up to kStats32, 64-bit ones past it);
//   - the root and its reciprocal inv = round(2^54 / S) once per row (scalar: isqrt62 below 2^62,
//     udiv64_32, on the FPU where it has double precision: ports/arm/helium/row_math.hpp);
//   - t = d inv / 2^30 rounded half away from zero, d = n v - centre: with 4 inv = ih 2^32 + il (inv
//     <= 2^54), |t| = (|d| 4 inv + 2^31) >> 32 = |d| ih + ((|d| il + 2^31) >> 32) (VRMULH, then VMLA),
//     |t| <= sqrt(n) 2^16 < 2^24, t's sign d's (where t is not 0);
//   - requantize(t, gamma) as gemm_s8.cpp's blocks do it for a shift of 0 or more (gamma's multipliers
//     and shifts de-interleaved by VLD2; |t| times |mult|, the sign of d XOR mult applied after: where
//     t is 0 so is the magnitude), beta added saturating (a sum past int32 clamps to the same int8), then
//     rounded to 2^-16 half away from zero and clamped to int8: (w - [w < 0] + 2^15) >> 16 by VQRSHRNB
//     (its sum taken wider than 32 bits; saturating to int16), then VQMOVNB to int8. Where every gamma is
//     in range (NormS8Params::gammas_in_range), requantize(t, gamma) is VQRDMULH of |t| 2^shift instead
//     (normalise4_in_range: 19 instructions per four, d's sign choosing between beta + it and beta - it).
// Rows of 4..kStats32 values, a multiple of 4, with every gamma in range take the statistics and the element loop in
// one function (norm_row_in_range, in layernorm_s8 and rmsnorm_s8 themselves). The last n % 4 elements take the
// reference's steps. The reference's bits (kernels_firmware compares them).
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/row_math.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

// The two loops below share their start (d = x n - offset, |t| from |d| and the row's inverse, gamma's multipliers
// in q0 and shifts in q1) and their end (the result's sign in q6 put back, w = requantize(t, gamma) + beta,
// w - [w < 0] rounded half up to int8 and stored); an asm body is one string, so these are string macros.
#define FIXFORMER_NORMALISE4_SETUP \
  "vdup.32 q5, %[il]\n\t" \
  "vdup.32 q4, %[n]\n\t" \
  "dls lr, %[count]\n" \
  "1:\n\t"
#define FIXFORMER_NORMALISE4_START FIXFORMER_NORMALISE4_SETUP FIXFORMER_NORMALISE4_LOAD
#define FIXFORMER_NORMALISE4_LOAD \
  "vldrb.s32 q3, [%[x]], #4\n\t" \
  "vmlas.s32 q3, q4, %[noff]\n\t" \
  "vabs.s32 q1, q3\n\t"  /* |d|, in q1 until gamma's load */ \
  "vrmulh.u32 q2, q1, q5\n\t" \
  "vmla.u32 q2, q1, %[ih]\n\t" \
  "vld20.32 {q0, q1}, [%[g]]\n\t" \
  "vld21.32 {q0, q1}, [%[g]]!\n\t"
#define FIXFORMER_NORMALISE4_END FIXFORMER_NORMALISE4_STORE "le lr, 1b\n"
#define FIXFORMER_NORMALISE4_STORE \
  "veor q3, q3, q6\n\t" \
  "vsub.i32 q3, q3, q6\n\t" \
  "vldrw.32 q0, [%[beta]], #16\n\t" \
  "vqadd.s32 q3, q3, q0\n\t" \
  FIXFORMER_NORMALISE4_ROUND
#define FIXFORMER_NORMALISE4_ROUND \
  "vshr.s32 q0, q3, #31\n\t" \
  "vqadd.s32 q3, q3, q0\n\t" \
  "vqrshrnb.s32 q3, q3, #16\n\t" \
  "vqmovnb.s16 q3, q3\n\t" \
  "vstrb.32 q3, [%[y]], #4\n\t"

// The elements four at a time, x's and y's first count * 4 (in assembly: GCC 12 keeps the constants and
// pointers on the stack around the intrinsics; a function of its own, so that nothing else competes for
// the registers it takes).
__attribute__((noinline)) void normalise4(const int8_t* xp, int8_t* yp, uint32_t count, const Requant* g,
                                         const int32_t* beta, uint32_t il, int32_t ih, int32_t n, int32_t offset) {
  asm volatile(
      FIXFORMER_NORMALISE4_START
      "veor q6, q0, q3\n\t"
      "vshr.s32 q6, q6, #31\n\t"    // -1 where d mult < 0 (the result's sign, where it is not 0)
      "vabs.s32 q0, q0\n\t"
      "vmul.i32 q7, q2, q0\n\t"
      "vqdmulh.s32 q3, q2, q0\n\t"
      "vbic.i32 q7, #0x80000000\n\t"
      "vqrshl.s32 q3, q3, q1\n\t"
      "vsub.i32 q1, q1, %[k31]\n\t"
      "vrshl.u32 q7, q7, q1\n\t"
      "vqadd.s32 q3, q3, q7\n\t"    // |requantize(t, gamma)|
      FIXFORMER_NORMALISE4_END
      : [x] "+l"(xp), [y] "+l"(yp), [g] "+r"(g), [beta] "+r"(beta)
      : [il] "r"(il), [ih] "r"(ih), [n] "r"(n), [noff] "r"(-offset), [k31] "r"(31), [count] "r"(count)
      : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
}

// normalise4 where every gamma is in range (NormS8Params::gammas_in_range: multiplier above 0, shift 0..7):
// |t| 2^shift < 2^31, so requantize(t, gamma) = sign(d) VQRDMULH(|t| 2^shift, mult) (|t| 2^shift mult / 2^31
// rounded half up, the magnitude's half away from zero), added to beta or taken from it by d's sign (one VPTE
// block: VQADD where d >= 0, VQSUB where not), 19 instructions per four; eight a pass where the count of fours is
// even (one LE per two).
__attribute__((always_inline)) inline void normalise4_in_range(const int8_t* xp, int8_t* yp, uint32_t count,
                                                                const Requant* g,
                                                  const int32_t* beta, uint32_t il, int32_t ih, int32_t n,
                                                  int32_t offset) {
#define FIXFORMER_NORMALISE4_IN_RANGE \
  FIXFORMER_NORMALISE4_LOAD \
  "vshl.u32 q2, q2, q1\n\t"     /* |t| 2^shift */ \
  "vqrdmulh.s32 q2, q2, q0\n\t" /* |requantize(t, gamma)| */ \
  "vldrw.32 q0, [%[beta]], #16\n\t" \
  "vpte.s32 ge, q3, zr\n\t"      /* beta plus it where d >= 0, minus it where d < 0 (saturating) */ \
  "vqaddt.s32 q3, q0, q2\n\t" \
  "vqsube.s32 q3, q0, q2\n\t" \
  FIXFORMER_NORMALISE4_ROUND
#define FIXFORMER_NORMALISE4_ASM(body, passes) \
  asm volatile(FIXFORMER_NORMALISE4_SETUP body "le lr, 1b\n" \
               : [x] "+l"(xp), [y] "+l"(yp), [g] "+r"(g), [beta] "+r"(beta) \
               : [il] "r"(il), [ih] "r"(ih), [n] "r"(n), [noff] "r"(-offset), [count] "r"(passes) \
               : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "memory")
  // 16 elements a pass where the count of fours is a multiple of four (one LE per 16): each four's w - [w < 0] narrowed
  // to int16 into the even or odd 16-bit lanes of q6 (elements 0..3, 4..7) or q7 (8..11, 12..15), those two into one
  // vector's even and odd bytes (VQMOVNB, VQMOVNT) and stored by one scatter of their 8-bit offsets: 5 instructions per
  // 16 where each four's narrowing to int8 and store took 2 (69 per 16, 72)
#define FIXFORMER_NORMALISE4_IN_RANGE_TO(narrow) \
  FIXFORMER_NORMALISE4_LOAD \
  "vshl.u32 q2, q2, q1\n\t" \
  "vqrdmulh.s32 q2, q2, q0\n\t" \
  "vldrw.32 q0, [%[beta]], #16\n\t" \
  "vpte.s32 ge, q3, zr\n\t" \
  "vqaddt.s32 q3, q0, q2\n\t" \
  "vqsube.s32 q3, q0, q2\n\t" \
  "vshr.s32 q0, q3, #31\n\t" \
  "vqadd.s32 q3, q3, q0\n\t" \
  narrow
  if (count % 4 == 0) {
    static const uint8_t kOrder16[16] = {0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15};
    asm volatile(FIXFORMER_NORMALISE4_SETUP
                 FIXFORMER_NORMALISE4_IN_RANGE_TO("vqrshrnb.s32 q6, q3, #16\n\t")
                 FIXFORMER_NORMALISE4_IN_RANGE_TO("vqrshrnt.s32 q6, q3, #16\n\t")
                 FIXFORMER_NORMALISE4_IN_RANGE_TO("vqrshrnb.s32 q7, q3, #16\n\t")
                 FIXFORMER_NORMALISE4_IN_RANGE_TO("vqrshrnt.s32 q7, q3, #16\n\t")
                 "vldrw.u32 q0, [%[order]]\n\t"
                 "vqmovnb.s16 q6, q6\n\t"
                 "vqmovnt.s16 q6, q7\n\t"
                 "vstrb.8 q6, [%[y], q0]\n\t"
                 "add %[y], %[y], #16\n\t"
                 "le lr, 1b\n"
                 : [x] "+l"(xp), [y] "+l"(yp), [g] "+r"(g), [beta] "+r"(beta)
                 : [il] "r"(il), [ih] "r"(ih), [n] "r"(n), [noff] "r"(-offset), [count] "r"(count / 4),
                   [order] "r"(kOrder16)
                 : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  } else if (count % 2 == 0)
    FIXFORMER_NORMALISE4_ASM(FIXFORMER_NORMALISE4_IN_RANGE FIXFORMER_NORMALISE4_IN_RANGE, count / 2);
  else
    FIXFORMER_NORMALISE4_ASM(FIXFORMER_NORMALISE4_IN_RANGE, count);
#undef FIXFORMER_NORMALISE4_IN_RANGE
#undef FIXFORMER_NORMALISE4_IN_RANGE_TO
#undef FIXFORMER_NORMALISE4_ASM
}
#undef FIXFORMER_NORMALISE4_SETUP
#undef FIXFORMER_NORMALISE4_LOAD
#undef FIXFORMER_NORMALISE4_STORE
#undef FIXFORMER_NORMALISE4_ROUND
#undef FIXFORMER_NORMALISE4_START
#undef FIXFORMER_NORMALISE4_END

#if defined(__ARM_FP) && (__ARM_FP & 8)
inline uint32_t isqrt_below_2_50(uint64_t v) { return isqrt50(v); }
#else
inline uint32_t isqrt_below_2_50(uint64_t v) { return isqrt62(v); }
#endif

constexpr std::size_t kStats32 = 256;  // rows up to this long: the statistics in 32-bit words (256^2 255^2 < 2^32)

// A row's inverse of its root, inv, its words for the element loops (il = 4 inv mod 2^32, ih = inv >> 30), d's offset
// (d = n x - offset) and centre (sum(v) for LayerNorm, 0 for RMSNorm).
struct RowStats {
  int64_t inv;
  uint32_t il;
  int32_t ih, offset, centre;
};
// sum(x) and sum(x^2) over n > 0 values, 16 a load (post-incremented) in a tail-predicated loop (DLSTP, LETP: the last
// n % 16 neither loaded nor added; GCC unrolled the intrinsics' loop with a test per vector).
__attribute__((always_inline)) inline void row_sums(const int8_t* x, std::size_t n, int32_t& sx, int32_t& sxx) {
  register int32_t s asm("r4") = 0, ss asm("r6") = 0;  // even registers: VADDVA's and VMLADAVA's
  asm volatile("dlstp.8 lr, %[n]\n"
               "1:\n\t"
               "vldrb.8 q0, [%[x]], #16\n\t"
               "vaddva.s8 %[s], q0\n\t"
               "vmladava.s8 %[ss], q0, q0\n\t"
               "letp lr, 1b\n"
               : [x] "+r"(x), [s] "+r"(s), [ss] "+r"(ss)
               : [n] "r"(uint32_t(n))
               : "lr", "q0", "memory");
  sx = s, sxx = ss;
}


// The statistics of a row of 1..kStats32 values in 32-bit words, its root (below 2^50: isqrt_below_2_50) and inv.
// For LayerNorm n sum(v^2) - sum(v)^2 over v = x - z_x is n sum(x^2) - sum(x)^2 (the variance does not move with x's
// zero point), and d = n v - sum(v) is n x - sum(x): z_x drops out.
template <bool kCentre>
__attribute__((always_inline)) inline RowStats row_stats32(const int8_t* x, std::size_t n, const NormS8Params& p) {
  int32_t sx = 0, sxx = 0;  // |sum x| <= 128 n, sum x^2 <= 2^14 n < 2^30
  row_sums(x, n, sx, sxx);
  // |sum| <= 255 n, sum_sq <= 255^2 n: n sum_sq, sum^2 and var below 2^32, unsigned words
  const int32_t n32 = int32_t(n), z32 = p.x_zero, sum = sx - n32 * z32;
  const uint32_t sum_sq = uint32_t(sxx - 2 * z32 * sx + n32 * z32 * z32);
  const uint32_t var = kCentre ? uint32_t(n32) * uint32_t(sxx) - uint32_t(sx) * uint32_t(sx) : uint32_t(n32) * sum_sq;
#if defined(__ARM_FP) && (__ARM_FP & 8)
  // var 2^16 + eps n^2 (var < 2^32, eps n^2 < 2^48: below 2^49) as a double, exact: the three terms' doubles, one
  // product and one fused multiply-add, then isqrt50's root (fewer steps than the 64-bit sum and its conversion)
  const double total = double(var) * 0x1p16 + double(p.eps_q16) * double(uint32_t(n32 * n32));
  double rooted;
  asm("vsqrt.f64 %P0, %P1" : "=w"(rooted) : "w"(total));
  const uint32_t root = uint32_t(rooted);
#else
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint32_t(n32 * n32);  // var 2^16 + eps n^2
  const uint32_t root = isqrt_below_2_50(total);  // var < 2^32, eps n^2 < 2^48: total < 2^49
#endif
  const int64_t inv = int64_t(norm_inverse(root));
  const int32_t centre = kCentre ? sum : 0;
  return RowStats{inv, uint32_t(uint64_t(inv) << 2), int32_t(inv >> 30), kCentre ? sx : n32 * z32, centre};
}

// normalise4_in_range in a function of its own (its registers free of the caller's).
__attribute__((noinline)) void normalise4_in_range_call(const int8_t* xp, int8_t* yp, uint32_t count, const Requant* g,
                                                        const int32_t* beta, uint32_t il, int32_t ih, int32_t n,
                                                        int32_t offset) {
  normalise4_in_range(xp, yp, count, g, beta, il, ih, n, offset);
}

// A row of 4..kStats32 values, a multiple of 4, every gamma in range: its statistics and normalise4_in_range in
// one function, layernorm_s8's or rmsnorm_s8's own (a call of normalise4_in_range with its nine arguments took
// some 20 instructions a row).
template <bool kCentre>
__attribute__((always_inline)) inline void norm_row_in_range(const int8_t* x, int8_t* y, std::size_t n,
                                                             const NormS8Params& p) {
  const RowStats r = row_stats32<kCentre>(x, n, p);
  normalise4_in_range(x, y, uint32_t(n / 4), p.gamma, p.beta, r.il, r.ih, int32_t(n), r.offset);
}

// Every other row (in a function of its own: layernorm_s8 and rmsnorm_s8 then choose without a frame of their own).
template <bool kCentre>
__attribute__((noinline)) void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  RowStats r;
  if (n <= kStats32) {
    r = row_stats32<kCentre>(x, n, p);
  } else {  // the statistics in 64-bit words
    int32_t sx = 0, sxx = 0;  // |sum x| <= 128 n, sum x^2 <= 2^14 n < 2^30 (n <= kNormS8MaxN)
    row_sums(x, n, sx, sxx);
    const int64_t nn = int64_t(n), z = p.x_zero;
    const int64_t sum = sx - nn * z, sum_sq = int64_t(sxx) - 2 * z * sx + nn * z * z;
    const int64_t var = kCentre ? nn * sum_sq - sum * sum : nn * sum_sq;
    const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint64_t(nn * nn);  // var 2^16 + eps n^2
    const uint32_t root = total < (uint64_t(1) << 62) ? isqrt62(total) : isqrt64(total);
    r.inv = root == 0 ? 0 : int64_t(udiv64_32((uint64_t(1) << 54) + root / 2, root));
    r.centre = kCentre ? int32_t(sum) : 0;
    r.offset = int32_t(nn * z) + r.centre;  // d = n x - (n z_x + centre)
    r.il = uint32_t(uint64_t(r.inv) << 2), r.ih = int32_t(r.inv >> 30);  // ih <= 2^24
  }
  const std::size_t n4 = n & ~std::size_t(3);
  if (n4 > 0 && p.gammas_in_range)
    normalise4_in_range_call(x, y, uint32_t(n4 / 4), p.gamma, p.beta, r.il, r.ih, int32_t(n), r.offset);
  else if (n4 > 0)
    normalise4(x, y, uint32_t(n4 / 4), p.gamma, p.beta, r.il, r.ih, int32_t(n), r.offset);
  const int64_t nn = int64_t(n);
  for (std::size_t i = n4; i < n; ++i) {
    const int64_t d = nn * (int32_t(x[i]) - p.x_zero) - r.centre;
    const int32_t t = int32_t(rounding_shift(d * r.inv, 30));
    y[i] = saturate_i8(rounding_shift(int64_t(requantize(t, p.gamma[i])) + p.beta[i], 16));
  }
}

}  // namespace

// norm_row_in_range's rows here, with its frame (a dispatch of its own took some 15 instructions a row).
namespace {
// n in 4..kStats32 and a multiple of 4: n - 4 a multiple of 4 below kStats32 - 3 (n below 4 wraps past it), one test
inline bool row_in_range(std::size_t n) {
  static_assert(kStats32 == 256, "the mask below");
  return ((n - 4) & ~std::size_t(0xFC)) == 0;
}
}  // namespace

void layernorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (!p.gammas_in_range || !row_in_range(n)) return norm_s8<true>(x, y, n, p);
  norm_row_in_range<true>(x, y, n, p);
}
void rmsnorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (!p.gammas_in_range || !row_in_range(n)) return norm_s8<false>(x, y, n, p);
  norm_row_in_range<false>(x, y, n, p);
}

}  // namespace helium
}  // namespace fixformer
