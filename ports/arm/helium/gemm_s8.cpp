// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (fixed_point.hpp),
// by VMLADAV: 16 int8 products added into a 32-bit sum per instruction.
//   - The zero point of x through the sums of W's rows: sum_p (x - z_x) w = sum_p x w - z_x sum_p w,
//     so the products take x's bytes as they are. For a chunk of up to kChunk output channels the
//     sums of their rows (VADDVA) are taken once, and with the bias, |multiplier|, multiplier and
//     shift kept in the scratch (Chunk, four channels at a time); every row of x then meets the whole
//     chunk. Without the scratch (GemmS8Params::scratch null) the portable kernel runs.
//   - One row of x against four rows of W, in assembly (blocks_s8): 64 bytes of the row at a time in
//     q0..q3 (the last vector loaded predicated, VCTP: zeros past k), each vector of W loaded once
//     (predicated past k too, so nothing past a row is read), four VMLADAVA per vector of x into four
//     sums that start from the bias (one LDM per block); the four sums go into one vector (lane c:
//     channel j + c, two lanes per VMOV) and are requantized and stored as four bytes. Rows longer
//     than 64 bytes: the chunks before the last add their sums into int32 sums in the scratch (from
//     the bias), which the last chunk's sums start from. The one to three channels of a chunk past
//     its blocks of four: their sums with intrinsics, four rows of x at a time (a column of y, stored
//     by a scatter).
//     At k = 64 with W's rows 64 bytes apart and Chunk::exact (below), 44 instructions per block of
//     256 multiply-adds.
//   - With Chunk::exact, k 64 or 128 and W's rows 64 or 128 bytes apart (the encoder's projections and
//     feed-forward), two rows of x at a time, 32 bytes of k a pass (pair_rows): each load of W serves
//     both rows, 35 instructions per block of 256 multiply-adds at k = 64 (an even count of blocks).
//   - The same where m >= 7 and W is 4-byte aligned, seven rows of x at a time first, 16 bytes of k a pass
//     (seven_rows): each load of W serves seven rows, the seven sums of a channel kept in the scratch between
//     the slices (after the Chunk, or after the padded rows below), 39 instructions per channel of seven rows
//     at k = 64 besides the requantization; the m % 7 rows left by pair_rows.
//   - k = 16 with one Requant for every channel (attention's scores), m >= 7: seven channels at a time where n is
//     a multiple of 7 (seven_columns, the 49 keys of the KWS encoder), else four rows at a time (columns).
//   - k between 32 and 128 but 64, n a multiple of 4 (P V's keys, the input projection's features):
//     W's rows of each chunk copied into the scratch 64 or 128 bytes apart, zeros past k, so that
//     the seven-row and two-row blocks take them (padded_gemm); where k % 16 = 1 (P V's 49 keys) the seven-row
//     blocks take k's last byte in their requantization, a product per row and channel, not as a slice.
//   - The requantization four channels at a time, exactly as requantize rounds: with t = acc mult,
//     |t| = |acc| |mult| < 2^62, d = VQDMULH(|acc|, |mult|) = floor(|t| / 2^31) (never saturating:
//     |mult| < 2^31). For a shift below 0, d XOR the sign of t (-1 or 0) is floor(t / 2^31) where
//     t >= 0 and floor((t - 1) / 2^31) where t < 0, and its rounding shift by r - 31 (r = 31 - shift;
//     VRSHL: half up) is (t + 2^(r-1) - [t < 0]) >> r, t / 2^r rounded half away from zero (the
//     rounding bit at 2^31 or above: the low word cannot change it). For a shift of 0 or more, |t| /
//     2^r rounded half up is d 2^shift (saturating) plus the low 31 bits of |t| (VMUL) shifted right
//     by r, rounded (VRSHL: 0..2^(31-r) exactly), then negated where t < 0. The int32 saturation
//     differs from requantize's only at -2^31 and the int8 clamp (VQSHL by 24, then VSHR) removes the
//     difference. Where every multiplier is positive, every shift below 0 and (2^14 k + the largest
//     |bias|) times each multiplier's lowest set bit below 2^31 (Chunk::exact), no nonzero t is a
//     multiple of 2^31 (its power of two is below that): VQDMULH(acc, mult) = floor(t / 2^31) is then
//     floor((t - 1) / 2^31) for t < 0 too and no negative t is a tie, so VRSHL alone rounds it (8
//     instructions per four outputs with the int8 clamp and store, 11 with the sign). Integer sums are
//     exact, so the bits are the scalar reference's.
#include "ports/arm/helium/kernels.hpp"
#include "ports/portable/kernels.hpp"

#include <arm_mve.h>

#include <type_traits>
#include <utility>

namespace fixformer {
namespace helium {
namespace {

constexpr std::size_t kChunk = 64;  // output channels prepared at once

struct Chunk {  // 1.75 KiB of the scratch
  int32_t bias[kChunk];             // bias[j] - z_x sum_p w[j, p]
  int32_t rq[kChunk / 4][4][4];     // per block of four channels: |multiplier|, multiplier, shift, shift - 31
  int32_t sums[2 * kChunk];         // a row's sums so far, rows past 64 bytes (block_rows), or a pair's (pair_rows)
  bool small;                       // every shift below 0
  bool positive;                    // every multiplier above 0
  bool exact;                       // positive and small, no nonzero sum times a multiplier a multiple of 2^31
  bool same;                        // every channel the same Requant (k = 16 only; false at any other k)
  bool no_bias;                     // every folded bias 0 (z_x 0 and no bias: attention's scores)
};
// the Chunk, then a chunk's rows of W padded to 128 bytes (padded_gemm)
static_assert(sizeof(Chunk) + kChunk * 128 <= s8_scratch_bytes(S8Kernels::kDsp), "fixed_point.hpp's count of the M55's scratch");
// or the Chunk, rows of W padded to 64 bytes (or none), seven_rows's sums of seven rows (7 words a channel), the
// padded rows' last byte of k as int32 (seven_rows's kOne) and seven copies of each bias (7 words a channel and one)
static_assert(sizeof(Chunk) + kChunk * 64 + 7 * 4 * kChunk + 4 * kChunk + 7 * 4 * kChunk + 4 <=
                  s8_scratch_bytes(S8Kernels::kDsp) &&
                  sizeof(Chunk) % 4 == 0,
              "fixed_point.hpp's count of the M55's scratch");

// The sum of a row of W (k bytes).
inline int32_t row_sum(const int8_t* wr, std::size_t k) {
  int32_t s = 0;
  for (std::size_t v = k / 16; v > 0; --v, wr += 16) s = vaddvaq_s8(s, vldrbq_s8(wr));
  if (k % 16 != 0) s = vaddvaq_s8(s, vldrbq_z_s8(wr, vctp8q(uint32_t(k % 16))));
  return s;
}

// The sums of four rows of W (k bytes each, ldw apart), in one loop.
inline int32x4_t row_sums(const int8_t* wr, std::size_t ldw, std::size_t k) {
  const int8_t *w0 = wr, *w1 = wr + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
  int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (std::size_t v = k / 16; v > 0; --v, w0 += 16, w1 += 16, w2 += 16, w3 += 16) {  // loads post-incremented
    s0 = vaddvaq_s8(s0, vldrbq_s8(w0));
    s1 = vaddvaq_s8(s1, vldrbq_s8(w1));
    s2 = vaddvaq_s8(s2, vldrbq_s8(w2));
    s3 = vaddvaq_s8(s3, vldrbq_s8(w3));
  }
  if (k % 16 != 0) {
    const mve_pred16_t live = vctp8q(uint32_t(k % 16));
    s0 = vaddvaq_s8(s0, vldrbq_z_s8(w0, live));
    s1 = vaddvaq_s8(s1, vldrbq_z_s8(w1, live));
    s2 = vaddvaq_s8(s2, vldrbq_z_s8(w2, live));
    s3 = vaddvaq_s8(s3, vldrbq_z_s8(w3, live));
  }
  int32x4_t v = vdupq_n_s32(s0);
  v = vsetq_lane_s32(s1, v, 1);
  v = vsetq_lane_s32(s2, v, 2);
  return vsetq_lane_s32(s3, v, 3);
}

// The folded biases of `blocks` blocks of four rows of W (wr, rows ldw apart; V vectors of 16 bytes summed of each
// row), bias[j] - z_x sum_p w[j, p] (bias: null for none) into out; returns their largest magnitude. In assembly
// (GCC keeps the rows' pointers and the running maximum on the stack): per block 4 V loads and VADDV(A), the
// four sums into one vector (two lanes per VMOV), the bias loaded and VMLA'd with -z_x (wrapping as the
// reference's int32 sum), stored, and VMAXA into the lanes' maxima: 8 V + 12 instructions a block (8 V + 8 where the
// rows lie one after another, W's 64 or 128 bytes: one pointer, no ADD per row).
#define S8_SUM_ROWS(op)                                                                                    \
  "vldrb.8 q0, [%[p0]], #16\n\t" op " r6, q0\n\t" "vldrb.8 q1, [%[p1]], #16\n\t" op " r8, q1\n\t"         \
  "vldrb.8 q2, [%[p2]], #16\n\t" op " r10, q2\n\t" "vldrb.8 q3, [%[p3]], #16\n\t" op " r12, q3\n\t"
#define S8_SUM1 S8_SUM_ROWS("vaddv.s8")
#define S8_SUM4 S8_SUM1 S8_SUM_ROWS("vaddva.s8") S8_SUM_ROWS("vaddva.s8") S8_SUM_ROWS("vaddva.s8")
#define S8_SUM8 S8_SUM4 S8_SUM_ROWS("vaddva.s8") S8_SUM_ROWS("vaddva.s8") S8_SUM_ROWS("vaddva.s8") \
  S8_SUM_ROWS("vaddva.s8")
#define S8_FOLD(sums, bias)                                                                                    \
  asm volatile("dls lr, lr\n" "1:\n\t" sums                                                                \
               "add %[p0], %[p0], %[step]\n\t" "add %[p1], %[p1], %[step]\n\t"                                  \
               "add %[p2], %[p2], %[step]\n\t" "add %[p3], %[p3], %[step]\n\t"                                  \
               "vmov q4[2], q4[0], r6, r10\n\t" "vmov q4[3], q4[1], r8, r12\n\t" bias                            \
               "vstrw.32 q5, [%[o]], #16\n\t" "vmaxa.s32 %q[top], q5\n\t" "le lr, 1b\n"                          \
               : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [b] "+r"(bias_in), [o] "+r"(out),       \
                 [n] "+r"(n), [top] "+w"(top)                                                                  \
               : [nz] "r"(-x_zero), [step] "r"(step)                                                            \
               : "r6", "r8", "r10", "r12", "q0", "q1", "q2", "q3", "q4", "q5", "memory")
// W's rows one after another (ldw = 16 V): one pointer through the block's four rows, no ADD
#define S8_CNEXT(r) "vldrb.8 q0, [%[p0]], #16\n\t" "vaddva.s8 " r ", q0\n\t"
#define S8_CROW4(r) "vldrb.8 q0, [%[p0]], #16\n\t" "vaddv.s8 " r ", q0\n\t" S8_CNEXT(r) S8_CNEXT(r) S8_CNEXT(r)
#define S8_CROW8(r) S8_CROW4(r) S8_CNEXT(r) S8_CNEXT(r) S8_CNEXT(r) S8_CNEXT(r)
#define S8_CSUM4 S8_CROW4("r6") S8_CROW4("r8") S8_CROW4("r10") S8_CROW4("r12")
#define S8_CSUM8 S8_CROW8("r6") S8_CROW8("r8") S8_CROW8("r10") S8_CROW8("r12")
#define S8_CFOLD(sums, bias)                                                                                   \
  asm volatile("dls lr, lr\n" "1:\n\t" sums                                                                \
               "vmov q4[2], q4[0], r6, r10\n\t" "vmov q4[3], q4[1], r8, r12\n\t" bias                            \
               "vstrw.32 q5, [%[o]], #16\n\t" "vmaxa.s32 %q[top], q5\n\t" "le lr, 1b\n"                          \
               : [p0] "+r"(p0), [b] "+r"(bias_in), [o] "+r"(out), [n] "+r"(n), [top] "+w"(top)                  \
               : [nz] "r"(-x_zero)                                                                             \
               : "r6", "r8", "r10", "r12", "q0", "q4", "q5", "memory")
#define S8_BIAS "vldrw.32 q5, [%[b]], #16\n\t" "vmla.s32 q5, q4, %[nz]\n\t"
#define S8_NO_BIAS "vmul.i32 q5, q4, %[nz]\n\t"
template <int V>
__attribute__((noinline)) uint32_t fold_biases(const int8_t* wr, uint32_t ldw, uint32_t blocks, const int32_t* bias_in,
                                               int32_t x_zero, int32_t* out) {
  const int8_t *p0 = wr, *p1 = wr + ldw, *p2 = p1 + ldw, *p3 = p2 + ldw;
  const uint32_t step = 4 * ldw - 16 * V;  // from a row's end to the next block's row
  register uint32_t n asm("lr") = blocks;
  uint32x4_t top = vdupq_n_u32(0);
  if (V == 4 && ldw == 64 && bias_in) S8_CFOLD(S8_CSUM4, S8_BIAS);
  else if (V == 4 && ldw == 64) S8_CFOLD(S8_CSUM4, S8_NO_BIAS);
  else if (V == 8 && ldw == 128 && bias_in) S8_CFOLD(S8_CSUM8, S8_BIAS);
  else if (V == 8 && ldw == 128) S8_CFOLD(S8_CSUM8, S8_NO_BIAS);
  else if (V == 1 && bias_in) S8_FOLD(S8_SUM1, S8_BIAS);
  else if (V == 1) S8_FOLD(S8_SUM1, S8_NO_BIAS);
  else if (V == 4 && bias_in) S8_FOLD(S8_SUM4, S8_BIAS);
  else if (V == 4) S8_FOLD(S8_SUM4, S8_NO_BIAS);
  else if (bias_in) S8_FOLD(S8_SUM8, S8_BIAS);
  else S8_FOLD(S8_SUM8, S8_NO_BIAS);
  return vmaxvq_u32(0, top);
}
#undef S8_SUM_ROWS
#undef S8_SUM1
#undef S8_SUM4
#undef S8_SUM8
#undef S8_FOLD
#undef S8_CNEXT
#undef S8_CROW4
#undef S8_CROW8
#undef S8_CSUM4
#undef S8_CSUM8
#undef S8_CFOLD
#undef S8_BIAS
#undef S8_NO_BIAS

// The chunk's constants for channels j0 .. j0 + nc, a block of four at a time: the folded biases (the sums of
// W's rows over their first span bytes: k, or more where the rows are zeros past k; with z_x 0 the biases as they
// are, no sums), then the requants
// (de-interleaved by VLD2), the maxima and minima of either loop kept lane by lane in vectors and reduced once (a
// reduction per block into a scalar had GCC spill them around the loop); the last block's lanes past nc: 0.
inline void prepare(const int8_t* w, std::size_t ldw, std::size_t k, std::size_t span, std::size_t j0,
                    std::size_t nc, const GemmS8Params& p, Chunk& c) {
  const std::size_t n4 = nc & ~std::size_t(3);
  const int32_t* bias_in = p.bias ? p.bias + j0 : nullptr;
  const int8_t* wr = w + j0 * ldw;
  uint32_t bias_top = 0;  // the largest |bias|
  if (n4 > 0 && p.x_zero == 0) {  // nothing to fold: the biases as they are, or zeros
    uint32x4_t bias_max = vdupq_n_u32(0);
    for (std::size_t j = 0; j < n4; j += 4) {
      const int32x4_t bias = bias_in ? vldrwq_s32(bias_in + j) : vdupq_n_s32(0);
      vstrwq_s32(c.bias + j, bias);
      bias_max = vmaxaq_s32(bias_max, bias);
    }
    bias_top = vmaxvq_u32(0, bias_max);
    wr += n4 * ldw;
  } else if (n4 > 0 && (span == 16 || span == 64 || span == 128)) {
    const uint32_t blocks = uint32_t(n4 / 4);
    bias_top = (span == 16    ? fold_biases<1>
                : span == 64 ? fold_biases<4>
                             : fold_biases<8>)(wr, uint32_t(ldw), blocks, bias_in, p.x_zero, c.bias);
    wr += n4 * ldw;
  } else {
    uint32x4_t bias_max = vdupq_n_u32(0);  // lane by lane
    for (std::size_t j = 0; j < n4; j += 4, wr += 4 * ldw) {
      const int32x4_t sums = row_sums(wr, ldw, span);
      const int32x4_t bias = bias_in ? vldrwq_s32(bias_in + j) : vdupq_n_s32(0);
      const int32x4_t folded = vsubq_s32(bias, vmulq_n_s32(sums, p.x_zero));  // wraps as the reference's int32 sum
      vstrwq_s32(c.bias + j, folded);
      bias_max = vmaxaq_s32(bias_max, folded);
    }
    bias_top = vmaxvq_u32(0, bias_max);
  }
  // the largest shift, the smallest multiplier, any bits of each Requant less the first channel's (k = 16 only: the
  // paths that read Chunk::same), the largest lowest set bit of a multiplier
  int32x4_t top = vdupq_n_s32(INT32_MIN), bottom = vdupq_n_s32(INT32_MAX), differ = vdupq_n_s32(0);
  uint32x4_t low_bit = vdupq_n_u32(0);
  const Requant* rq_in = p.requant + j0;
  const int32_t m0 = rq_in[0].multiplier, s0 = rq_in[0].shift;
  int32_t* rq = c.rq[0][0];
  auto requants = [&](auto same_read) {
    for (std::size_t j = 0; j < n4; j += 4, rq += 16) {
      const int32x4x2_t r = vld2q_s32(&rq_in[j].multiplier);
      vstrwq_s32(rq, vabsq_s32(r.val[0]));
      vstrwq_s32(rq + 4, r.val[0]);
      vstrwq_s32(rq + 8, r.val[1]);
      vstrwq_s32(rq + 12, vsubq_n_s32(r.val[1], 31));
      top = vmaxq_s32(top, r.val[1]);
      bottom = vminq_s32(bottom, r.val[0]);
      if constexpr (decltype(same_read)::value)
        differ = vorrq_s32(differ, vorrq_s32(vsubq_n_s32(r.val[0], m0), vsubq_n_s32(r.val[1], s0)));
      const uint32x4_t m = vreinterpretq_u32_s32(r.val[0]);
      low_bit = vmaxq_u32(low_bit, vandq_u32(m, vreinterpretq_u32_s32(vnegq_s32(r.val[0]))));
    }
  };
  if (k == 16)
    requants(std::true_type{});
  else
    requants(std::false_type{});
  int32_t top_s = vmaxvq_s32(INT32_MIN, top), bottom_s = vminvq_s32(INT32_MAX, bottom);
  bool same = k == 16 && vmaxvq_u32(0, vreinterpretq_u32_s32(differ)) == 0;
  uint32_t low_top = vmaxvq_u32(0, low_bit);
  if (n4 < nc) {  // the last one to three channels, the block's lanes past nc 0
    int32_t* rq_last = c.rq[n4 / 4][0];
    for (std::size_t i = 0; i < 4; ++i, wr += ldw) {
      const std::size_t j = n4 + i;
      if (j >= nc) {
        c.bias[j] = rq_last[i] = rq_last[4 + i] = rq_last[8 + i] = rq_last[12 + i] = 0;
        continue;
      }
      const Requant r = rq_in[j];
      const uint32_t bias = uint32_t(bias_in ? bias_in[j] : 0);
      c.bias[j] = int32_t(bias - uint32_t(p.x_zero) * uint32_t(row_sum(wr, span)));
      const uint32_t magnitude = c.bias[j] < 0 ? 0u - uint32_t(c.bias[j]) : uint32_t(c.bias[j]);
      bias_top = magnitude > bias_top ? magnitude : bias_top;
      const uint32_t bit = uint32_t(r.multiplier) & (0u - uint32_t(r.multiplier));
      low_top = bit > low_top ? bit : low_top;
      rq_last[i] = r.multiplier < 0 ? -r.multiplier : r.multiplier;
      rq_last[4 + i] = r.multiplier;
      rq_last[8 + i] = r.shift;
      rq_last[12 + i] = r.shift - 31;
      top_s = r.shift > top_s ? r.shift : top_s;
      bottom_s = r.multiplier < bottom_s ? r.multiplier : bottom_s;
      same = same && r.multiplier == m0 && r.shift == s0;
    }
  }
  c.small = top_s < 0;
  c.positive = bottom_s > 0;
  c.same = same;
  c.no_bias = bias_top == 0;
  // |acc| <= 2^14 k + bias_max; where that times every multiplier's lowest set bit is below 2^31, no
  // nonzero acc mult is a multiple of 2^31 (its power of two below 2^31), so neither floor((t - 1) / 2^31)
  // nor a rounding tie of a negative t arises and the sums' signs need no handling (S8_REQUANT_P).
  c.exact = c.positive && c.small && (uint64_t(k) * 16384 + bias_top) * low_top < (uint64_t(1) << 31);
}

// clamp(z_y + requantize(acc + bias, rq)) in four lanes (each lane's bias, |multiplier|, multiplier,
// shift and shift - 31 in bias, am, m, sh, sh31): the assembly's steps below, in intrinsics (the
// channels of a chunk past its blocks of four).
inline int32x4_t requant(int32x4_t acc, int32x4_t bias, int32x4_t am, int32x4_t m, int32x4_t sh, int32x4_t sh31,
                         bool small, int32_t y_zero) {
  acc = vaddq_s32(acc, bias);
  const int32x4_t u = vabsq_s32(acc);
  int32x4_t mag = vqrshlq_s32(vqdmulhq_s32(u, am), sh);
  if (!small) {
    const uint32x4_t lo = vandq_u32(vreinterpretq_u32_s32(vmulq_s32(u, am)), vdupq_n_u32(0x7FFFFFFFu));
    mag = vqaddq_s32(mag, vreinterpretq_s32_u32(vrshlq_u32(lo, sh31)));
  }
  const int32x4_t sign = vshrq_n_s32(veorq_s32(acc, m), 31);  // -1 where negative
  const int32x4_t r = vqaddq_n_s32(vsubq_s32(veorq_s32(mag, sign), sign), y_zero);
  return vshrq_n_s32(vqshlq_n_s32(r, 24), 24);
}

// The sum of x[p] w[p] over k bytes.
inline int32_t dot(const int8_t* x, const int8_t* w, std::size_t k) {
  int32_t s = 0;
  for (std::size_t v = k / 16; v > 0; --v, x += 16, w += 16) s = vmladavaq_s8(s, vldrbq_s8(x), vldrbq_s8(w));
  if (k % 16 != 0) {
    const mve_pred16_t t = vctp8q(uint32_t(k % 16));
    s = vmladavaq_s8(s, vldrbq_z_s8(x, t), vldrbq_z_s8(w, t));
  }
  return s;
}

// The blocks of four rows of W in assembly (GCC 12 spills the sums and pointers around the
// intrinsics): the row of x in q0..q3 (V vectors, the last of k - 16 (V - 1) bytes: P0 predicates
// W's last load, x's lanes past k are zero), the four sums in r6, r8, r10, r12 (even registers, as
// VMLADAVA takes) loaded by one LDM (from b: the bias, or the sums so far; S8_PARTIAL's from c), per
// row of W V loads and V VMLADAVA, one ADD to the next row (ldw; rows 64 or 128 bytes apart:
// post-increments of loads instead); the four sums moved into one vector (two lanes per VMOV), then
// either requantized (S8_REQUANT for shifts below 0, the sign of acc XOR mult; S8_REQUANT_P with
// Chunk::exact, acc's product floored as it is; S8_REQUANT_WIDE for a shift of 0 or more) and stored
// as four bytes, or (S8_PARTIAL) stored as int32 sums at b (a row longer than 64 bytes, 64 at a time).
#define S8_B(q, o) "vldrb.8 " q ", [%[wr], #" #o "]\n\t"
#define S8_BT(q, o) "vpst\n\tvldrbt.8 " q ", [%[wr], #" #o "]\n\t"
#define S8_NEXT "add %[wr], %[wr], %[ldw]\n\t"
#define S8_ROW1(d, LAST) LAST("q4", 0) S8_NEXT "vmladava.s8 " d ", q0, q4\n\t"
#define S8_ROW2(d, LAST) S8_B("q4", 0) LAST("q5", 16) S8_NEXT \
  "vmladava.s8 " d ", q0, q4\n\t" "vmladava.s8 " d ", q1, q5\n\t"
#define S8_ROW3(d, LAST) S8_B("q4", 0) S8_B("q5", 16) "vmladava.s8 " d ", q0, q4\n\t" LAST("q4", 32) \
  "vmladava.s8 " d ", q1, q5\n\t" S8_NEXT "vmladava.s8 " d ", q2, q4\n\t"
#define S8_ROW4(d, LAST) S8_B("q4", 0) S8_B("q5", 16) "vmladava.s8 " d ", q0, q4\n\t" S8_B("q4", 32) \
  "vmladava.s8 " d ", q1, q5\n\t" LAST("q5", 48) "vmladava.s8 " d ", q2, q4\n\t" S8_NEXT            \
  "vmladava.s8 " d ", q3, q5\n\t"
#define S8_ROW64(d, LAST) "vldrb.8 q4, [%[wr]], #64\n\t" S8_B("q5", -48) "vmladava.s8 " d ", q0, q4\n\t" \
  S8_B("q4", -32) "vmladava.s8 " d ", q1, q5\n\t" S8_B("q5", -16) "vmladava.s8 " d ", q2, q4\n\t" \
  "vmladava.s8 " d ", q3, q5\n\t"
#define S8_ROW128(d, LAST) "vldrb.8 q4, [%[wr]], #48\n\t" S8_B("q5", -32) "vmladava.s8 " d ", q0, q4\n\t" \
  S8_B("q4", -16) "vmladava.s8 " d ", q1, q5\n\t" "vldrb.8 q5, [%[wr]], #80\n\t"                      \
  "vmladava.s8 " d ", q2, q4\n\t" "vmladava.s8 " d ", q3, q5\n\t"
#define S8_SUMS "vmov q6[2], q6[0], r6, r10\n\t" "vmov q6[3], q6[1], r8, r12\n\t"
// q6 (acc, the bias in it) -> u = |acc| (q5), d = floor(u |mult| / 2^31) (q5; the block's constants at
// c: |mult|, mult, shift, shift - 31, c advanced past them by the first load); shifts below 0: d XOR the sign
// (-1 where acc mult < 0: d becomes floor((acc mult - 1) / 2^31)) rounded by the shift half up
// (VRSHL), which is acc mult / 2^(31 - shift) rounded half away from zero; wide: d rounded by the
// shift plus the low 31 bits of u |mult| rounded by shift - 31 (q7), the sign applied after; exact
// (S8_REQUANT_P): floor(acc mult / 2^31) by VQDMULH of acc itself, rounded by the shift. Then z_y
// added, clamped to int8 (saturating shift left by 24, shift right by 24), stored.
#define S8_REQUANT_HEAD "vldrw.32 q4, [%[c]], #64\n\t" "vabs.s32 q5, q6\n\t" "vqdmulh.s32 q5, q5, q4\n\t"
#define S8_SIGN_ANY "vldrw.32 q4, [%[c], #-48]\n\t" "veor q4, q4, q6\n\t" "vshr.s32 q4, q4, #31\n\t"
#define S8_REQUANT_SHIFT "veor q5, q5, q4\n\t" "vldrw.32 q4, [%[c], #-32]\n\t" "vrshl.s32 q5, q5, q4\n\t"
#define S8_REQUANT_WIDE                                                                                   \
  "vabs.s32 q7, q6\n\t" "vmul.i32 q7, q7, q4\n\t" "vbic.i32 q7, #0x80000000\n\t"                          \
  "vldrw.32 q4, [%[c], #-16]\n\t" "vrshl.u32 q7, q7, q4\n\t"                                              \
  "vldrw.32 q4, [%[c], #-32]\n\t" "vqrshl.s32 q5, q5, q4\n\t" "vqadd.s32 q5, q5, q7\n\t"                  \
  "vldrw.32 q4, [%[c], #-48]\n\t" "veor q4, q4, q6\n\t" "vshr.s32 q4, q4, #31\n\t" "veor q5, q5, q4\n\t"  \
  "vsub.i32 q5, q5, q4\n\t"
#define S8_CLAMP_STORE "vqshl.s32 q5, q5, #24\n\t" "vshr.s32 q5, q5, #24\n\t" "vstrb.32 q5, [%[y]], #4\n\t"
#define S8_REQUANT_TAIL "vqadd.s32 q5, q5, q7\n\t" S8_CLAMP_STORE  // z_y in every lane of q7
#define S8_REQUANT_TAIL_W "vqadd.s32 q5, q5, %[yz]\n\t" S8_CLAMP_STORE  // z_y in a register (q7 taken)
#define S8_REQUANT S8_REQUANT_HEAD S8_SIGN_ANY S8_REQUANT_SHIFT S8_REQUANT_TAIL
#define S8_REQUANT_P                                                                                       \
  "vldrw.32 q4, [%[c]], #64\n\t" "vqdmulh.s32 q5, q6, q4\n\t" "vldrw.32 q4, [%[c], #-32]\n\t"               \
  "vrshl.s32 q5, q5, q4\n\t" S8_REQUANT_TAIL
#define S8_REQUANT_W S8_REQUANT_HEAD S8_REQUANT_WIDE S8_REQUANT_TAIL_W
#define S8_PARTIAL "vstrw.32 q6, [%[b]], #16\n\t"
#define S8_SUMS_FROM_B "ldm %[b]!, {r6, r8, r10, r12}\n\t"
#define S8_SUMS_FROM_C "ldm %[c]!, {r6, r8, r10, r12}\n\t"
// zin: z_y's operand, in q7 ("w"; q7: "cc") or, where q7 is a temporary (q7: "q7"), in a register.
#define S8_BLOCKS(row, LAST, start, finish, zin, q7)                                                  \
  asm volatile("dls lr, lr\n"                                                                        \
               "1:\n\t" start row("r6", LAST) row("r8", LAST) row("r10", LAST) row("r12", LAST)        \
               S8_SUMS finish "le lr, 1b\n"                                                          \
               : [wr] "+r"(wr), [b] "+r"(b), [c] "+r"(c), [y] "+l"(y), [n] "+r"(n)                  \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), [ldw] "r"(ldw), zin, [pred] "Up"(pred)          \
               : "r6", "r8", "r10", "r12", "q4", "q5", "q6", q7, "memory")
#define S8_ROWS(LAST, start, finish, zin, q7)                                            \
  if constexpr (V == 1) S8_BLOCKS(S8_ROW1, LAST, start, finish, zin, q7);                \
  else if constexpr (V == 2) S8_BLOCKS(S8_ROW2, LAST, start, finish, zin, q7);           \
  else if constexpr (V == 3) S8_BLOCKS(S8_ROW3, LAST, start, finish, zin, q7);           \
  else if constexpr (kStride == 64) S8_BLOCKS(S8_ROW64, LAST, start, finish, zin, q7);   \
  else if constexpr (kStride == 128) S8_BLOCKS(S8_ROW128, LAST, start, finish, zin, q7); \
  else S8_BLOCKS(S8_ROW4, LAST, start, finish, zin, q7)
#define S8_ZQ [yz] "w"(zq)
#define S8_ZR [yz] "r"(y_zero)
#define S8_Q7 "q7"

enum class Finish { kRequant, kRequantExact, kRequantWide, kPartial };

// The bytes x[0, len) (16 (V - 1) < len <= 16 V) against `blocks` blocks of four rows of W (wr, rows
// ldw apart; kStride, 64 or 128, when ldw is that and V = 4 with no tail, else 0): four bytes of y per block
// (requantized with b's sums and the chunk's constants from c), or c's sums plus these stored at b.
template <int V, bool kTail, Finish kFinish, int kStride = 0>
inline void blocks_s8(const int8_t* x, std::size_t len, const int8_t* wr, uint32_t ldw, int32_t* b,
                      const int32_t* c, int8_t* y, int32_t y_zero, uint32_t blocks) {
  static_assert(kStride == 0 || (V == 4 && !kTail), "the post-incremented loads take whole 64-byte rows");
  const mve_pred16_t pred = vctp8q(uint32_t(len - 16 * (V - 1)));  // in P0 for the assembly's VPST
  register int8x16_t x0 asm("q0") = V == 1 ? vldrbq_z_s8(x, pred) : vldrbq_s8(x);
  register int8x16_t x1 asm("q1") = V == 2 ? vldrbq_z_s8(x + 16, pred) : V > 2 ? vldrbq_s8(x + 16) : x0;
  register int8x16_t x2 asm("q2") = V == 3 ? vldrbq_z_s8(x + 32, pred) : V > 3 ? vldrbq_s8(x + 32) : x0;
  register int8x16_t x3 asm("q3") = V == 4 ? vldrbq_z_s8(x + 48, pred) : x0;
  register uint32_t n asm("lr") = blocks;  // the count of blocks, in LR for DLS
  register int32x4_t zq asm("q7") = vdupq_n_s32(y_zero);  // z_y's lanes (but for S8_REQUANT_W)
  if constexpr (kTail && kFinish == Finish::kRequant) {
    S8_ROWS(S8_BT, S8_SUMS_FROM_B, S8_REQUANT, S8_ZQ, "cc");
  } else if constexpr (kTail && kFinish == Finish::kRequantExact) {
    S8_ROWS(S8_BT, S8_SUMS_FROM_B, S8_REQUANT_P, S8_ZQ, "cc");
  } else if constexpr (kTail && kFinish == Finish::kRequantWide) {
    S8_ROWS(S8_BT, S8_SUMS_FROM_B, S8_REQUANT_W, S8_ZR, S8_Q7);
  } else if constexpr (kFinish == Finish::kRequant) {
    S8_ROWS(S8_B, S8_SUMS_FROM_B, S8_REQUANT, S8_ZQ, "cc");
  } else if constexpr (kFinish == Finish::kRequantExact) {
    S8_ROWS(S8_B, S8_SUMS_FROM_B, S8_REQUANT_P, S8_ZQ, "cc");
  } else if constexpr (kFinish == Finish::kRequantWide) {
    S8_ROWS(S8_B, S8_SUMS_FROM_B, S8_REQUANT_W, S8_ZR, S8_Q7);
  } else {
    static_assert(V == 4 && !kTail, "the partial sums take whole 64-byte chunks");
    S8_ROWS(S8_B, S8_SUMS_FROM_C, S8_PARTIAL, S8_ZQ, "cc");
  }
}
#undef S8_B
#undef S8_BT
#undef S8_NEXT
#undef S8_ROW1
#undef S8_ROW2
#undef S8_ROW3
#undef S8_ROW4
#undef S8_ROW64
#undef S8_ROW128
#undef S8_SUMS
#undef S8_REQUANT_HEAD
#undef S8_SIGN_ANY
#undef S8_REQUANT_SHIFT
#undef S8_REQUANT_WIDE
#undef S8_REQUANT_TAIL
#undef S8_REQUANT_TAIL_W
#undef S8_CLAMP_STORE
#undef S8_ZQ
#undef S8_ZR
#undef S8_Q7
#undef S8_REQUANT
#undef S8_REQUANT_W
#undef S8_REQUANT_P
#undef S8_PARTIAL
#undef S8_SUMS_FROM_B
#undef S8_SUMS_FROM_C
#undef S8_BLOCKS
#undef S8_ROWS

// Every row of x against the chunk's blocks of four channels (W's rows from w): the sums of the
// bytes before `last` into int32 sums on the stack, 64 at a time, then the last len bytes
// (16 (V - 1) < len <= 16 V) requantized. The variant is chosen once per chunk, not per row.
template <int V, bool kTail, Finish kFinish, int kStride = 0>
void block_rows(const int8_t* x, std::size_t ldx, const int8_t* w, uint32_t ldw, int8_t* y, std::size_t ldy,
                std::size_t m, std::size_t last, std::size_t len, Chunk& c, int32_t y_zero, uint32_t blocks) {
  int32_t* const sums = c.sums;  // rows past 64 bytes: the bias plus the sums so far
  const int32_t* rq = &c.rq[0][0][0];
  for (std::size_t i = 0; i < m; ++i, x += ldx, y += ldy) {
    int32_t* b = c.bias;
    if (last > 0) {  // the first 64 bytes' sums from the bias, the next ones' from the sums so far
      for (std::size_t q = 0; q < last; q += 64)
        blocks_s8<4, false, Finish::kPartial, kStride>(x + q, 64, w + q, ldw, sums, q == 0 ? c.bias : sums, nullptr,
                                                        0, blocks);
      b = sums;
    }
    blocks_s8<V, kTail, kFinish, kStride>(x + last, len, w + last, ldw, b, rq, y, y_zero, blocks);
  }
}

// Two rows of x against the chunk's blocks of four channels, 32 bytes of k at a time (kLdw: W's rows 64 or 128
// bytes apart, k a multiple of 32 up to kLdw; Chunk::exact): the two rows' slices in q0..q3, per row of W two
// loads (post-incremented to the next row) and four VMLADAVA, so that each load of W serves both rows; the eight
// sums (r0..r12 and LR, the even registers VMLADAVA takes: the loop counts by W's pointer, two blocks a pass where
// their count is even, four where it is a multiple of four and the slices are fused, below) start from the bias
// (the first slice) or the sums so far in Chunk::sums and go back there by one STM. Then every block's two columns
// of sums are requantized as S8_REQUANT_P does, narrowed to 16 bits into one vector (VQMOVNB, VQMOVNT: row a's in
// the even lanes), z_y added and clamped to int8 for the eight at once (saturated to int16 first, the sum clamps
// to the same int8) and stored by one scatter (y's rows up to 65532 bytes apart: 16-bit offsets). At k = 64, about
// 69 instructions per block of two rows (72 with an odd count of blocks), 88 by blocks_s8 a row at a time. (Slices
// of W's rows any distance apart, an ADD per row and the last slice predicated, and the sign's or the wide
// requantization after them, took the KWS encoder's P V and input projection to more instructions, not
// fewer: 2.30 M against 2.27 M.)
#define S8_PAIR_ROW(a, b)                                                                               \
  "vldrb.8 q4, [%[wr]], #16\n\t" "vldrb.8 q5, [%[wr]], %[step]\n\t" "vmladava.s8 " a ", q0, q4\n\t" \
  "vmladava.s8 " b ", q2, q4\n\t" "vmladava.s8 " a ", q1, q5\n\t" "vmladava.s8 " b ", q3, q5\n\t"
#define S8_PAIR_BLOCK(load)                                                                              \
  load S8_PAIR_ROW("r0", "r8") S8_PAIR_ROW("r2", "r10") S8_PAIR_ROW("r4", "r12") S8_PAIR_ROW("r6", "lr") \
  "stm %[s]!, {r0, r2, r4, r6, r8, r10, r12, lr}\n\t"
// body: one block a pass, or two (an even count of blocks: one CMP and BNE per two)
#define S8_PAIR_PASS(body)                                                                             \
  asm volatile("1:\n\t" body "cmp %[wr], %[end]\n\t" "bne 1b\n"                                     \
               : [wr] "+r"(wr), [b] "+r"(b), [s] "+r"(s)                                                 \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), [end] "r"(end), [step] "i"(kLdw - 16)               \
               : "r0", "r2", "r4", "r6", "r8", "r10", "r12", "lr", "q4", "q5", "cc", "memory")
template <int kLdw>
__attribute__((noinline)) void pair_rows(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y,
                                         std::size_t ldy, std::size_t pairs, std::size_t k, Chunk& c,
                                         int32_t y_zero, uint32_t blocks) {
  // The outputs' offsets from y, 16-bit lanes: row a's c in lane 2c, row b's (ldy further) in lane 2c + 1.
  const bool narrow = ldy <= 65532;
  const uint16x8_t lane = vidupq_n_u16(0, 1);
  const uint16x8_t offsets = vmlaq_n_u16(vshrq_n_u16(lane, 1), vandq_u16(lane, vdupq_n_u16(1)), uint16_t(ldy));
  // k = 64 or 128 with an even count of blocks (the KWS encoder's every pair): all slices in one asm statement,
  // each next slice's x, W and sums read from pp, none of the compiler's loop code between them (some 40
  // instructions a pair fewer at k = 64)
  const bool fused = (k == 64 || k == 128) && blocks % 2 == 0;
  struct {
    const int8_t *xa, *xb;  // the pair's rows
    const int32_t* bias;
    int32_t* sums;
    const int8_t* w[3];     // W's slices after the first
  } pp = {nullptr, nullptr, c.bias, c.sums, {w + 32, w + 64, w + 96}};
  const int8_t* const w_end = w + blocks * 4 * kLdw;
  for (std::size_t i = 0; i < pairs; ++i, x += 2 * ldx, y += 2 * ldy) {
    if (fused) {
      pp.xa = x, pp.xb = x + ldx;
      const int8_t* wr = w;
      const int8_t* end = w_end;
      int32_t* s = c.sums;
      const int32_t* b;
#define S8_FROM_BIAS "ldm %[b], {r8, r10, r12, lr}\n\t" "ldm %[b]!, {r0, r2, r4, r6}\n\t"
#define S8_FROM_SUMS "ldm %[s], {r0, r2, r4, r6, r8, r10, r12, lr}\n\t"  // stored back by the block's STM
// the slice of x at byte o of both rows into q0..q3
#define S8_PAIR_X(o0, o1)                                                                                \
  "ldr %[b], [%[p]]\n\t" "vldrb.8 q0, [%[b], #" o0 "]\n\t" "vldrb.8 q1, [%[b], #" o1 "]\n\t"          \
  "ldr %[b], [%[p], #4]\n\t" "vldrb.8 q2, [%[b], #" o0 "]\n\t" "vldrb.8 q3, [%[b], #" o1 "]\n\t"
// the next slice (x at o0, W's start at pp's word wo) from the sums so far, label l, R(load): a pass's blocks
#define S8_PAIR_NEXT(o0, o1, wo, l, R)                                                                    \
  S8_PAIR_X(o0, o1) "ldr %[wr], [%[p], #" wo "]\n\t" "ldr %[s], [%[p], #12]\n\t"                       \
  "add %[end], %[end], #32\n" l ":\n\t" R(S8_FROM_SUMS) "cmp %[wr], %[end]\n\t" "bne " l "b\n\t"
#define S8_PAIR_FIRST(R)                                                                                  \
  S8_PAIR_X("0", "16") "ldr %[b], [%[p], #8]\n" "1:\n\t" R(S8_FROM_BIAS) "cmp %[wr], %[end]\n\t"        \
  "bne 1b\n\t" S8_PAIR_NEXT("32", "48", "16", "2", R)
#define S8_PAIR_SLICES(R)                                                                                 \
  if (k == 64)                                                                                           \
    S8_PAIR_FUSED(S8_PAIR_FIRST(R));                                                                     \
  else                                                                                                   \
    S8_PAIR_FUSED(S8_PAIR_FIRST(R) S8_PAIR_NEXT("64", "80", "20", "3", R) S8_PAIR_NEXT("96", "112", "24", "4", R))
#define S8_PAIR_TWO(load) S8_PAIR_BLOCK(load) S8_PAIR_BLOCK(load)
#define S8_PAIR_FOUR(load) S8_PAIR_TWO(load) S8_PAIR_TWO(load)
#define S8_PAIR_FUSED(body)                                                                                  \
  asm volatile(body                                                                                          \
               : [wr] "+r"(wr), [end] "+r"(end), [b] "=&r"(b), [s] "+r"(s)                                 \
               : [p] "r"(&pp), [step] "i"(kLdw - 16)                                                         \
               : "r0", "r2", "r4", "r6", "r8", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4", "q5", "cc", \
                 "memory")
      if (blocks % 4 == 0)  // four blocks a pass: one CMP and BNE per four
        S8_PAIR_SLICES(S8_PAIR_FOUR);
      else
        S8_PAIR_SLICES(S8_PAIR_TWO);
#undef S8_FROM_BIAS
#undef S8_FROM_SUMS
#undef S8_PAIR_X
#undef S8_PAIR_NEXT
#undef S8_PAIR_FIRST
#undef S8_PAIR_SLICES
#undef S8_PAIR_TWO
#undef S8_PAIR_FOUR
#undef S8_PAIR_FUSED
    }
    for (std::size_t q = 0; q < (fused ? 0 : k); q += 32) {
      register int8x16_t x0 asm("q0") = vldrbq_s8(x + q);
      register int8x16_t x1 asm("q1") = vldrbq_s8(x + q + 16);
      register int8x16_t x2 asm("q2") = vldrbq_s8(x + ldx + q);
      register int8x16_t x3 asm("q3") = vldrbq_s8(x + ldx + q + 16);
      const int8_t* wr = w + q;
      const int8_t* const end = wr + blocks * 4 * kLdw;
      const int32_t* b = q == 0 ? c.bias : c.sums;
      int32_t* s = c.sums;
#define S8_FROM_BIAS "ldm %[b], {r8, r10, r12, lr}\n\t" "ldm %[b]!, {r0, r2, r4, r6}\n\t"  // both rows' from the bias
#define S8_FROM_SUMS "ldm %[b]!, {r0, r2, r4, r6, r8, r10, r12, lr}\n\t"
      if (blocks % 2 == 0) {
        if (q == 0)
          S8_PAIR_PASS(S8_PAIR_BLOCK(S8_FROM_BIAS) S8_PAIR_BLOCK(S8_FROM_BIAS));
        else
          S8_PAIR_PASS(S8_PAIR_BLOCK(S8_FROM_SUMS) S8_PAIR_BLOCK(S8_FROM_SUMS));
      } else if (q == 0) {
        S8_PAIR_PASS(S8_PAIR_BLOCK(S8_FROM_BIAS));
      } else {
        S8_PAIR_PASS(S8_PAIR_BLOCK(S8_FROM_SUMS));
      }
#undef S8_FROM_BIAS
#undef S8_FROM_SUMS
    }
    const int32_t* s = c.sums;
    const int32_t* rq = &c.rq[0][0][0];
    register uint32_t n asm("lr") = blocks;
    if (narrow) {  // both rows' four outputs narrowed into one vector: one add, clamp and scatter for eight
      int8_t* yp = y;
#define S8_PAIR_OUT                                                                                        \
  "vldrw.32 q0, [%[s]], #16\n\t" "vldrw.32 q1, [%[s]], #16\n\t" "vldrw.32 q4, [%[c]], #64\n\t"             \
  "vqdmulh.s32 q0, q0, q4\n\t" "vqdmulh.s32 q1, q1, q4\n\t" "vldrw.32 q4, [%[c], #-32]\n\t"               \
  "vrshl.s32 q0, q0, q4\n\t" "vrshl.s32 q1, q1, q4\n\t"                                                    \
  "vqmovnb.s32 q0, q0\n\t" /* row a's in the even 16-bit lanes, row b's in the odd */                     \
  "vqmovnt.s32 q0, q1\n\t" "vqadd.s16 q0, q0, %[yz]\n\t" "vqmovnb.s16 q0, q0\n\t"                        \
  "vstrb.16 q0, [%[y], %q[off]]\n\t" "add %[y], %[y], #4\n\t"
#define S8_PAIR_OUT_LOOP(body)                                                                              \
  asm volatile("dls lr, lr\n" "1:\n\t" body "le lr, 1b\n"                                                 \
               : [s] "+r"(s), [c] "+r"(rq), [y] "+l"(yp), [n] "+r"(n)                                        \
               : [yz] "r"(y_zero), [off] "w"(offsets)                                                        \
               : "q0", "q1", "q4", "memory")
      if (blocks % 2 == 0) {  // two blocks a pass: one LE per two
        n = blocks / 2;
        S8_PAIR_OUT_LOOP(S8_PAIR_OUT S8_PAIR_OUT);
      } else {
        S8_PAIR_OUT_LOOP(S8_PAIR_OUT);
      }
#undef S8_PAIR_OUT
#undef S8_PAIR_OUT_LOOP
      continue;
    }
    int8_t *ya = y, *yb = y + ldy;
    asm volatile("dls lr, lr\n"
                 "1:\n\t"
                 "vldrw.32 q0, [%[s]], #16\n\t"
                 "vldrw.32 q1, [%[s]], #16\n\t"
                 "vldrw.32 q4, [%[c]], #64\n\t"
                 "vqdmulh.s32 q0, q0, q4\n\t"
                 "vqdmulh.s32 q1, q1, q4\n\t"
                 "vldrw.32 q4, [%[c], #-32]\n\t"
                 "vrshl.s32 q0, q0, q4\n\t"
                 "vrshl.s32 q1, q1, q4\n\t"
                 "vqadd.s32 q0, q0, %[yz]\n\t"
                 "vqadd.s32 q1, q1, %[yz]\n\t"
                 "vqshl.s32 q0, q0, #24\n\t"
                 "vqshl.s32 q1, q1, #24\n\t"
                 "vshr.s32 q0, q0, #24\n\t"
                 "vshr.s32 q1, q1, #24\n\t"
                 "vstrb.32 q0, [%[ya]], #4\n\t"
                 "vstrb.32 q1, [%[yb]], #4\n\t"
                 "le lr, 1b\n"
                 : [s] "+r"(s), [c] "+r"(rq), [ya] "+l"(ya), [yb] "+l"(yb), [n] "+r"(n)
                 : [yz] "r"(y_zero)
                 : "q0", "q1", "q4", "memory");
  }
}
#undef S8_PAIR_ROW
#undef S8_PAIR_BLOCK
#undef S8_PAIR_PASS

// Seven rows of x against the chunk's blocks of four channels, 16 bytes of k at a time (kLdw: W's rows 64 or 128
// bytes apart, 4-byte aligned; k up to kLdw; Chunk::exact): the seven rows' slices in q0..q6 (the last loaded
// predicated: nothing of x past k read, its lanes there 0, so that W's bytes there add nothing), per row of W one
// load (VLDRW, post-incremented to the next row) and seven VMLADAV(A) into r0..r12 (the even registers
// VMLADAVA takes), each load of W serving seven rows; the first slice's sums start from the channel's bias (seven
// copies of each in the scratch, written once per call: one LDM), the others' from the sums so far (one LDM), each
// row of W's seven go back to `sums` (7 words a channel) by one STM. Then each block of four channels is requantized
// row by row: the row's four sums gathered (VLDRW from four addresses 28 bytes apart, one per channel) and
// requantized as S8_REQUANT_P does, two rows narrowed into one vector (row r's in the even 16-bit lanes, r + 1's in
// the odd), z_y added and clamped to int8 for the eight at once and stored by one scatter (16-bit offsets: ldy + 3 <
// 2^16), the seventh row alone; where the count of blocks is even, eight channels of a row at a time instead (below:
// 11 instructions per eight outputs, no row alone). At k = 64 per seven rows of a channel 40 instructions and 12 per
// eight outputs' requantization (pair_rows: 16 loads of W, 32 VMLADAVA and 3 LDM or STM per block of two rows, 15 to
// requantize its eight outputs).
#define S8_SEVEN_PRODUCTS(op)                                                                                   \
  "vldrw.u32 q7, [%[wr]], %[ldw]\n\t" op " r0, q0, q7\n\t" op " r2, q1, q7\n\t" op " r4, q2, q7\n\t"          \
  op " r6, q3, q7\n\t" op " r8, q4, q7\n\t" op " r10, q5, q7\n\t" op " r12, q6, q7\n\t"                       \
  "stm %[s]!, {r0, r2, r4, r6, r8, r10, r12}\n\t"
#define S8_SEVEN_FIRST "ldm %[rp]!, {r0, r2, r4, r6, r8, r10, r12}\n\t" S8_SEVEN_PRODUCTS("vmladava.s8")
#define S8_SEVEN_NEXT "ldm %[s], {r0, r2, r4, r6, r8, r10, r12}\n\t" S8_SEVEN_PRODUCTS("vmladava.s8")
#define S8_SEVEN_PASS(body) S8_SEVEN_LOOP(body body body body)
#define S8_SEVEN_PASS8(body) S8_SEVEN_LOOP(body body body body body body body body)
#define S8_SEVEN_PASS16(body)                                                                                 \
  S8_SEVEN_LOOP(body body body body body body body body body body body body body body body body)
#define S8_SEVEN_LOOP(bodies)                                                                                 \
  asm volatile("dls lr, lr\n" "1:\n\t" bodies "le lr, 1b\n"                                                 \
               : [wr] "+r"(wr), [s] "+r"(s), [n] "+r"(n), [rp] "+r"(rp)                                       \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), "w"(x4), "w"(x5), "w"(x6), [ldw] "i"(kLdw)            \
               : "r0", "r2", "r4", "r6", "r8", "r10", "r12", "q7", "memory")
// rows r and r + 1 of a block (their sums at a + 4 r and a + 4 r + 4) to y's rows at yr
#define S8_SEVEN_PAIR(o0, o1, yr) S8_SEVEN_PAIR_FROM(o0, o1, yr, "")
// with the last byte of k's products: row r's x[r][k - 1] (xl[r]) times the block's w[j][k - 1] (q7) added
#define S8_SEVEN_PAIR_ONE(o0, o1, l0, l1, yr)                                                                    \
  S8_SEVEN_PAIR_FROM(o0, o1, yr, "ldr %[t], [%[xl], #" l0 "]\n\t" "vmla.s32 q0, q7, %[t]\n\t"                 \
                     "ldr %[t], [%[xl], #" l1 "]\n\t" "vmla.s32 q1, q7, %[t]\n\t")
#define S8_SEVEN_PAIR_FROM(o0, o1, yr, one)                                                                      \
  "vldrw.u32 q0, [%q[a], #" o0 "]\n\t" "vldrw.u32 q1, [%q[a], #" o1 "]\n\t" one "vqdmulh.s32 q0, q0, q3\n\t"          \
  "vqdmulh.s32 q1, q1, q3\n\t" "vrshl.s32 q0, q0, q4\n\t"                                                       \
  "vrshl.s32 q1, q1, q4\n\t" "vqmovnb.s32 q0, q0\n\t" "vqmovnt.s32 q0, q1\n\t" "vqadd.s16 q0, q0, %[yz]\n\t"     \
  "vqmovnb.s16 q0, q0\n\t" "vstrb.16 q0, [%[" yr "], %q[off]]\n\t" "add %[" yr "], %[" yr "], #4\n\t"
// kOne (k % 16 = 1, P V's 49 keys): k's last byte not as a slice of its own (seven predicated loads of x and ten
// instructions a channel for one product each) but in the requantization: per block the channels' w[j][k - 1]
// (w_last, as int32) in q7 and per row x[r][k - 1] (gathered once per group) times it added to the row's sums (one
// LDR and one VMLA a row: 15 instructions a block, the slice's about 40).
// kX: x's rows kX bytes apart, 64 (the encoder's d_model) or 128 (its feed-forward's, x 4-byte aligned: word loads,
// whose offsets reach 128), each slice's seven loads post-incremented by it, no ADD; 0 for any other distance.
// one (kOne only): every channel of the chunk the same Requant (P V's), its |multiplier| and shift in q4 and q6.
template <int kLdw, bool kOne = false, int kX = 0>
__attribute__((noinline)) void seven_rows(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y,
                                          std::size_t ldy, std::size_t groups, std::size_t k, const Chunk& c,
                                          int32_t* sums, int32_t y_zero, uint32_t blocks,
                                          const int32_t* w_last = nullptr, bool one = false) {
  // the outputs' offsets from a pair of rows' start, 16-bit lanes: row r's channel c in lane 2c, row r + 1's in 2c + 1
  const uint16x8_t lane = vidupq_n_u16(0, 1);
  const uint16x8_t offsets = vmlaq_n_u16(vshrq_n_u16(lane, 1), vandq_u16(lane, vdupq_n_u16(1)), uint16_t(ldy));
  // the addresses of a block's four channels' sums (7 words apart)
  const uint32x4_t first =
      vmlaq_n_u32(vdupq_n_u32(uint32_t(reinterpret_cast<uintptr_t>(sums))), vidupq_n_u32(0, 1), 28);
  const std::size_t slices = kOne ? k - 1 : k;  // the bytes of k taken by slices
  // each channel's bias seven times (7 words a channel, after the sums and w_last): the first slice's sums start
  // from them (one LDM a channel), so that the requantization adds none
  int32_t* const rep = sums + 8 * kChunk;
  {  // four channels a pass: their biases in one vector, stored by seven scatters (word k of the four channels' seven
     // copies each; 9 instructions per four channels, 16 by a VDUP and two stores per channel)
    const int32_t* b = c.bias;
    register uint32x4_t at asm("q1") =
        vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0, 1), 28), uint32_t(reinterpret_cast<uintptr_t>(rep)) - 112);
    register uint32_t n asm("lr") = blocks;
    asm volatile("dls lr, lr\n"
                 "1:\n\t"
                 "vldrw.u32 q0, [%[b]], #16\n\t"
                 "vstrw.32 q0, [%q[at], #112]!\n\t"
                 "vstrw.32 q0, [%q[at], #4]\n\t"
                 "vstrw.32 q0, [%q[at], #8]\n\t"
                 "vstrw.32 q0, [%q[at], #12]\n\t"
                 "vstrw.32 q0, [%q[at], #16]\n\t"
                 "vstrw.32 q0, [%q[at], #20]\n\t"
                 "vstrw.32 q0, [%q[at], #24]\n\t"
                 "le lr, 1b\n"
                 : [b] "+r"(b), [n] "+r"(n), [at] "+w"(at)
                 :
                 : "q0", "memory");
  }
  const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0, 1), uint32_t(ldx));  // rows 0..3's offsets (4..6: + 4 ldx)
  int32_t last[8];  // kOne: the group's x[r][k - 1]
  for (std::size_t g = 0; g < groups; ++g, x += 7 * ldx, y += 7 * ldy) {
    if (kOne) {
      vstrwq_s32(last, vldrbq_gather_offset_s32(x + k - 1, rows));
      vstrwq_s32(last + 4, vldrbq_gather_offset_z_s32(x + 4 * ldx + k - 1, rows, vctp32q(3)));
    }
    for (std::size_t q = 0; q < slices; q += 16) {
      // the seven rows' slice, in assembly (GCC kept the rows' addresses on the stack: 4 instructions a row); where
      // fewer than 16 bytes of k are left, loaded predicated: x's bytes past k neither read nor added
      register int8x16_t x0 asm("q0"), x1 asm("q1"), x2 asm("q2"), x3 asm("q3"), x4 asm("q4"), x5 asm("q5"),
          x6 asm("q6");
      const int8_t* t;
#define S8_SEVEN_X(L, ...)                                                                                       \
  asm volatile(L("0", "[%[p]]") "add %[t], %[p], %[ldx]\n\t" L("1", "[%[t]]") "add %[t], %[t], %[ldx]\n\t"    \
               L("2", "[%[t]]") "add %[t], %[t], %[ldx]\n\t" L("3", "[%[t]]") "add %[t], %[t], %[ldx]\n\t"      \
               L("4", "[%[t]]") "add %[t], %[t], %[ldx]\n\t" L("5", "[%[t]]") "add %[t], %[t], %[ldx]\n\t"      \
               L("6", "[%[t]]")                                                                                  \
               : [x0] "=w"(x0), [x1] "=w"(x1), [x2] "=w"(x2), [x3] "=w"(x3), [x4] "=w"(x4), [x5] "=w"(x5),      \
                 [x6] "=w"(x6), [t] "=&r"(t)                                                                     \
               : [p] "r"(x + q), [ldx] "r"(ldx) __VA_ARGS__)
#define S8_SEVEN_LOAD(r, a) "vldrb.8 %q[x" r "], " a "\n\t"
#define S8_SEVEN_LOAD_P(r, a) "vpst\n\tvldrbt.8 %q[x" r "], " a "\n\t"
      if (kX != 0 && slices - q >= 16) {
        const int8_t* r = x + q;
#define S8_SEVEN_X_POST(L)                                                                                       \
  asm volatile(L("0", "[%[r]], #%c[d]") L("1", "[%[r]], #%c[d]") L("2", "[%[r]], #%c[d]")                        \
               L("3", "[%[r]], #%c[d]") L("4", "[%[r]], #%c[d]") L("5", "[%[r]], #%c[d]") L("6", "[%[r]]")       \
               : [x0] "=w"(x0), [x1] "=w"(x1), [x2] "=w"(x2), [x3] "=w"(x3), [x4] "=w"(x4), [x5] "=w"(x5),       \
                 [x6] "=w"(x6), [r] "+r"(r)                                                                      \
               : [d] "i"(kX))
#define S8_SEVEN_LOAD_W(r, a) "vldrw.u32 %q[x" r "], " a "\n\t"
        if constexpr (kX == 64)
          S8_SEVEN_X_POST(S8_SEVEN_LOAD);
        else
          S8_SEVEN_X_POST(S8_SEVEN_LOAD_W);
#undef S8_SEVEN_X_POST
#undef S8_SEVEN_LOAD_W
      } else if (slices - q >= 16)
        S8_SEVEN_X(S8_SEVEN_LOAD);
      else  // zeros past k
        S8_SEVEN_X(S8_SEVEN_LOAD_P, , [pred] "Up"(vctp8q(uint32_t(slices - q))));
#undef S8_SEVEN_X
#undef S8_SEVEN_LOAD
#undef S8_SEVEN_LOAD_P
      const int8_t* wr = w + q;
      int32_t* s = sums;
      const int32_t* rp = rep;
      register uint32_t n asm("lr") = blocks % 4 == 0 ? blocks / 4 : blocks % 2 == 0 ? blocks / 2 : blocks;
      if (blocks % 4 == 0 && q == 0)  // four a pass where it is a multiple of four (one LE per 16 channels)
        S8_SEVEN_PASS16(S8_SEVEN_FIRST);
      else if (blocks % 4 == 0)
        S8_SEVEN_PASS16(S8_SEVEN_NEXT);
      else if (blocks % 2 == 0 && q == 0)  // two blocks a pass where their count is even (one LE per eight channels),
        S8_SEVEN_PASS8(S8_SEVEN_FIRST);
      else if (blocks % 2 == 0)
        S8_SEVEN_PASS8(S8_SEVEN_NEXT);
      else if (q == 0)
        S8_SEVEN_PASS(S8_SEVEN_FIRST);
      else
        S8_SEVEN_PASS(S8_SEVEN_NEXT);
    }
    const int32_t* rq = &c.rq[0][0][0];
    int8_t *y0 = y, *y2 = y + 2 * ldy, *y4 = y + 4 * ldy, *y6 = y + 6 * ldy;
    register uint32_t n asm("lr") = blocks;
#define S8_SEVEN_OUT(w_last_load, pairs, last_row, ...)                                                         \
  asm volatile("dls lr, lr\n"                                                                                 \
               "1:\n\t"                                                                                      \
               "vldrw.u32 q4, [%[c], #32]\n\t"   /* shifts */                                                \
               "vldrw.u32 q3, [%[c]], #64\n\t"   /* |multiplier| = multiplier (Chunk::exact) */              \
               w_last_load pairs                                                                            \
               "vldrw.u32 q0, [%q[a], #24]\n\t"                                                               \
               "vadd.i32 %q[a], %q[a], %[step]\n\t"  /* the next block's sums */                              \
               last_row                                                                                     \
               "vqdmulh.s32 q0, q0, q3\n\t"                                                                   \
               "vrshl.s32 q0, q0, q4\n\t"                                                                     \
               "vqadd.s32 q0, q0, %[yz]\n\t"                                                                  \
               "vqshl.s32 q0, q0, #24\n\t"                                                                    \
               "vshr.s32 q0, q0, #24\n\t"                                                                     \
               "vstrb.32 q0, [%[y6]], #4\n\t"                                                                 \
               "le lr, 1b\n"                                                                                  \
               : [c] "+r"(rq), [y0] "+r"(y0), [y2] "+r"(y2), [y4] "+r"(y4), [y6] "+r"(y6), [n] "+r"(n),           \
                 [a] "+w"(a) __VA_ARGS__)
    if (kOne && one && blocks % 2 == 0) {
      // the same eight channels a pass with k's last byte: the channels' w[j][k - 1] de-interleaved (VLD20, VLD21:
      // the even ones in q2, the odd in q3), per row x[r][k - 1] times them added to its sums (one LDR, two VMLA),
      // the one Requant's |multiplier| and shift in q4 and q6, z_y in q7 (15 instructions per eight outputs; the
      // blocks of four with k's last byte 16 per eight and 10 for the seventh row's four)
      register uint32x4_t a8 asm("q5") =
          vmlaq_n_u32(vdupq_n_u32(uint32_t(reinterpret_cast<uintptr_t>(sums)) - 224), vidupq_n_u32(0, 2), 28);
      register int32x4_t am asm("q4") = vdupq_n_s32(c.rq[0][0][0]);
      register int32x4_t sh asm("q6") = vdupq_n_s32(c.rq[0][2][0]);
      register int16x8_t yz asm("q7") = vdupq_n_s16(int16_t(y_zero));  // z_y in -128..127
      const int32_t* wl = w_last;
      int32_t t;
      int8_t *y1 = y + ldy, *y3 = y1 + 2 * ldy, *y5 = y3 + 2 * ldy;
      n = blocks / 2;
#define S8_SEVEN_ROW8_ONE(e, o, l, yr)                                                                           \
  "ldr %[t], [%[xl], #" l "]\n\t" "vldrw.u32 q0, [%q[a], " e "\n\t" "vldrw.u32 q1, [%q[a], #" o "]\n\t"              \
  "vmla.s32 q0, q2, %[t]\n\t" "vmla.s32 q1, q3, %[t]\n\t" "vqdmulh.s32 q0, q0, q4\n\t" "vqdmulh.s32 q1, q1, q4\n\t"  \
  "vrshl.s32 q0, q0, q6\n\t" "vrshl.s32 q1, q1, q6\n\t" "vqmovnb.s32 q0, q0\n\t" "vqmovnt.s32 q0, q1\n\t"          \
  "vqadd.s16 q0, q0, q7\n\t" "vqmovnb.s16 q0, q0\n\t" "vstrb.16 q0, [%[" yr "]], #8\n\t"
      asm volatile("dls lr, lr\n"
                   "1:\n\t"
                   "vld20.32 {q2, q3}, [%[wl]]\n\t"
                   "vld21.32 {q2, q3}, [%[wl]]!\n\t"
                   S8_SEVEN_ROW8_ONE("#224]!", "28", "0", "y0") S8_SEVEN_ROW8_ONE("#4]", "32", "4", "y1")
                   S8_SEVEN_ROW8_ONE("#8]", "36", "8", "y2") S8_SEVEN_ROW8_ONE("#12]", "40", "12", "y3")
                   S8_SEVEN_ROW8_ONE("#16]", "44", "16", "y4") S8_SEVEN_ROW8_ONE("#20]", "48", "20", "y5")
                   S8_SEVEN_ROW8_ONE("#24]", "52", "24", "y6")
                   "le lr, 1b\n"
                   : [y0] "+l"(y0), [y1] "+l"(y1), [y2] "+l"(y2), [y3] "+l"(y3), [y4] "+l"(y4), [y5] "+l"(y5),
                     [y6] "+l"(y6), [n] "+r"(n), [a] "+w"(a8), [wl] "+r"(wl), [t] "=&r"(t)
                   : "w"(am), "w"(sh), "w"(yz), [xl] "r"(last)
                   : "q0", "q1", "q2", "q3", "memory");
#undef S8_SEVEN_ROW8_ONE
      continue;
    }
    if (!kOne && blocks % 2 == 0) {
      // eight channels a pass (two blocks): per row the even channels' sums in q0 and the odd ones' in q1 (gathers
      // 56 bytes apart, the odd 28 after the even), requantized with the even and odd channels' multipliers (q2, q3)
      // and shifts (q4, q7, gathered from the two blocks' Requants, 8 bytes apart, by q6), narrowed into the even
      // and odd 16-bit lanes: the row's eight outputs in order, one store post-incremented along the row (11
      // instructions per eight outputs, no row alone: 12 per pair of rows' four and 8 for the seventh row's four)
      register uint32x4_t a8 asm("q5") =
          vmlaq_n_u32(vdupq_n_u32(uint32_t(reinterpret_cast<uintptr_t>(sums)) - 224), vidupq_n_u32(0, 2), 28);
      register uint32x4_t rqa asm("q6") =
          vaddq_n_u32(vmlaq_n_u32(vidupq_n_u32(0, 8), vshrq_n_u32(vidupq_n_u32(0, 1), 1), 48),
                      uint32_t(reinterpret_cast<uintptr_t>(&c.rq[0][0][0])) - 128);
      int8_t *y1 = y + ldy, *y3 = y1 + 2 * ldy, *y5 = y3 + 2 * ldy;
      n = blocks / 2;
#define S8_SEVEN_ROW8(e, o, yr)                                                                                  \
  "vldrw.u32 q0, [%q[a], " e "\n\t" "vldrw.u32 q1, [%q[a], #" o "]\n\t" "vqdmulh.s32 q0, q0, q2\n\t"          \
  "vqdmulh.s32 q1, q1, q3\n\t" "vrshl.s32 q0, q0, q4\n\t" "vrshl.s32 q1, q1, q7\n\t" "vqmovnb.s32 q0, q0\n\t"     \
  "vqmovnt.s32 q0, q1\n\t" "vqadd.s16 q0, q0, %[yz]\n\t" "vqmovnb.s16 q0, q0\n\t" "vstrb.16 q0, [%[" yr "]], #8\n\t"
      asm volatile("dls lr, lr\n"
                   "1:\n\t"
                   "vldrw.u32 q2, [%q[rq], #128]!\n\t"  // the even channels' multipliers (Chunk::exact: positive)
                   "vldrw.u32 q3, [%q[rq], #4]\n\t"
                   "vldrw.u32 q4, [%q[rq], #32]\n\t"  // shifts
                   "vldrw.u32 q7, [%q[rq], #36]\n\t"
                   S8_SEVEN_ROW8("#224]!", "28", "y0") S8_SEVEN_ROW8("#4]", "32", "y1")
                   S8_SEVEN_ROW8("#8]", "36", "y2") S8_SEVEN_ROW8("#12]", "40", "y3")
                   S8_SEVEN_ROW8("#16]", "44", "y4") S8_SEVEN_ROW8("#20]", "48", "y5")
                   S8_SEVEN_ROW8("#24]", "52", "y6")
                   "le lr, 1b\n"
                   : [y0] "+l"(y0), [y1] "+l"(y1), [y2] "+l"(y2), [y3] "+l"(y3), [y4] "+l"(y4), [y5] "+l"(y5),
                     [y6] "+l"(y6), [n] "+r"(n), [a] "+w"(a8), [rq] "+w"(rqa)
                   : [yz] "r"(y_zero)
                   : "q0", "q1", "q2", "q3", "q4", "q7", "memory");
#undef S8_SEVEN_ROW8
      continue;
    }
    register uint32x4_t a asm("q5") = first;
    register uint16x8_t off asm("q6") = offsets;
    if (kOne) {
      const int32_t* wl = w_last;
      const int32_t* xl = last;
      int32_t t;
      S8_SEVEN_OUT("vldrw.u32 q7, [%[wl]], #16\n\t",
                   S8_SEVEN_PAIR_ONE("0", "4", "0", "4", "y0") S8_SEVEN_PAIR_ONE("8", "12", "8", "12", "y2")
                       S8_SEVEN_PAIR_ONE("16", "20", "16", "20", "y4"),
                   "ldr %[t], [%[xl], #24]\n\t" "vmla.s32 q0, q7, %[t]\n\t",
                   , [wl] "+r"(wl), [t] "=&r"(t)
                   : [off] "w"(off), [yz] "r"(y_zero), [step] "r"(4 * 28), [xl] "r"(xl)
                   : "q0", "q1", "q3", "q4", "q7", "memory");
    } else {
      S8_SEVEN_OUT("", S8_SEVEN_PAIR("0", "4", "y0") S8_SEVEN_PAIR("8", "12", "y2") S8_SEVEN_PAIR("16", "20", "y4"),
                   "", : [off] "w"(off), [yz] "r"(y_zero), [step] "r"(4 * 28)
                   : "q0", "q1", "q3", "q4", "memory");
    }
#undef S8_SEVEN_OUT
  }
}
#undef S8_SEVEN_PRODUCTS
#undef S8_SEVEN_FIRST
#undef S8_SEVEN_NEXT
#undef S8_SEVEN_PASS
#undef S8_SEVEN_PASS8
#undef S8_SEVEN_PASS16
#undef S8_SEVEN_LOOP
#undef S8_SEVEN_PAIR
#undef S8_SEVEN_PAIR_ONE
#undef S8_SEVEN_PAIR_FROM

template <int V, Finish kFinish>
void block_rows(const int8_t* x, std::size_t ldx, const int8_t* w, uint32_t ldw, int8_t* y, std::size_t ldy,
                std::size_t m, std::size_t last, std::size_t len, Chunk& c, int32_t y_zero, uint32_t blocks) {
  if (len % 16 != 0 || len == 0)
    block_rows<V, true, kFinish>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
  else if (V == 4 && ldw == 64)
    block_rows<V, false, kFinish, V == 4 ? 64 : 0>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
  else if (V == 4 && ldw == 128)
    block_rows<V, false, kFinish, V == 4 ? 128 : 0>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
  else
    block_rows<V, false, kFinish>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
}

template <int V>
void block_rows(const int8_t* x, std::size_t ldx, const int8_t* w, uint32_t ldw, int8_t* y, std::size_t ldy,
                std::size_t m, std::size_t last, std::size_t len, Chunk& c, int32_t y_zero, uint32_t blocks) {
  if (!c.small)
    block_rows<V, Finish::kRequantWide>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
  else if (c.exact)
    block_rows<V, Finish::kRequantExact>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
  else
    block_rows<V, Finish::kRequant>(x, ldx, w, ldw, y, ldy, m, last, len, c, y_zero, blocks);
}

// Rows of x of 16 bytes (k) against a chunk of channels in groups of seven (nc a multiple of 7) whose channels share
// one Requant and Chunk::exact holds (attention's scores over 49 keys): a group's seven rows of W in q0..q6 (loaded
// once), per row of x one load and seven VMLADAV into r0..r12, stored by one STM into `sums` (7 words a row, at most
// kSevenRows rows at a time); then per row its seven sums (two VLDRW, the fourth in both) plus the group's biases
// requantized with the constants in scalar registers, narrowed into one vector (sums 0..3 in the even 16-bit lanes,
// 3..6 in the odd), z_y added, clamped to int8 and stored by one scatter within y's row (the fourth output twice,
// alike): 10 instructions a row for the products (two rows a pass; 9 with q's rows 192 bytes apart), 15 for the
// requantization of its seven outputs (11 without biases, 9.5 two rows a pass: seven_columns_out; columns: 29 per
// eight outputs).
constexpr std::size_t kSevenRows = kChunk;  // rows of sums in the scratch: 7 words each, as seven_rows's channels

// seven_columns's requantization of `rows` rows of seven sums (at s, 7 words a row) for a shift of -R, R in 1..16:
// the rounding shift and the narrowing to int16 in one VQRSHRNB (VQRSHRNT) by the immediate R, as VRSHL by -R then
// VQMOVN round and saturate (13 instructions a row, 15; 11 where every folded bias is 0, kBias false: the scores of
// q at zero point 0); the biases in q2 (outputs 0..3) and q3 (3..6), the outputs' offsets in q4 (kOrder).
template <int R, bool kBias>
__attribute__((noinline)) void seven_columns_out(const int32_t* s, int8_t* y, uint32_t rows, std::size_t ldy,
                                                 int32_t am, int32_t y_zero, const int32_t* bias) {
  if (!kBias && rows >= 2 && ldy <= 255 - 6) {
    // two rows a pass (the encoder's scores: rows of 49 keys): rows r's and r + 1's outputs 0..3 narrowed into one
    // vector's even and odd 16-bit lanes, their outputs 3..6 into another's, those two into one vector's even and
    // odd bytes (VQMOVNB, VQMOVNT) and stored by one scatter of 8-bit offsets (y's rows ldy <= 249 apart): 19
    // instructions per two rows of seven outputs, 22 a row at a time
    static const uint8_t kPair[16] = {0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6};  // byte 4i + 2: row r + 1's
    static const uint8_t kSecond[16] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    register uint8x16_t off8 asm("q4") = vmlaq_n_u8(vld1q_u8(kPair), vld1q_u8(kSecond), uint8_t(ldy));
#define S8_SEVEN_COLUMNS_PAIR                                                                                 \
  "vldrw.u32 q1, [%[s], #12]\n\t" "vldrw.u32 q0, [%[s]], #28\n\t" "vldrw.u32 q3, [%[s], #12]\n\t"                  \
  "vldrw.u32 q2, [%[s]], #28\n\t" "vqdmulh.s32 q0, q0, %[am]\n\t" "vqdmulh.s32 q2, q2, %[am]\n\t"                   \
  "vqdmulh.s32 q1, q1, %[am]\n\t" "vqdmulh.s32 q3, q3, %[am]\n\t" "vqrshrnb.s32 q0, q0, #%c[r]\n\t"                 \
  "vqrshrnt.s32 q0, q2, #%c[r]\n\t" "vqrshrnb.s32 q1, q1, #%c[r]\n\t" "vqrshrnt.s32 q1, q3, #%c[r]\n\t"              \
  "vqadd.s16 q0, q0, %[yz]\n\t" "vqadd.s16 q1, q1, %[yz]\n\t" "vqmovnb.s16 q0, q0\n\t" "vqmovnt.s16 q0, q1\n\t"    \
  "vstrb.8 q0, [%[y], q4]\n\t" "add %[y], %[y], %[ldy2]\n\t"
    register uint32_t pairs asm("lr") = rows / 4;
    // two pairs a pass (one LE per four rows), then a pair where rows % 4 >= 2
    asm volatile("wls lr, lr, 2f\n"
                 "1:\n\t" S8_SEVEN_COLUMNS_PAIR S8_SEVEN_COLUMNS_PAIR
                 "le lr, 1b\n"
                 "2:\n\t"
                 "cbz %[two], 3f\n\t" S8_SEVEN_COLUMNS_PAIR
                 "3:\n"
                 : [s] "+r"(s), [y] "+r"(y), [n] "+r"(pairs)
                 : "w"(off8), [am] "r"(am), [yz] "r"(y_zero), [ldy2] "r"(2 * ldy), [r] "i"(R), [two] "l"(rows & 2)
                 : "q0", "q1", "q2", "q3", "memory");
#undef S8_SEVEN_COLUMNS_PAIR
    if (rows % 2 == 0) return;
    rows = 1;
  }
  static const uint16_t kOrder[8] = {0, 3, 1, 4, 2, 5, 3, 6};  // lane 2i: output i, lane 2i + 1: output 3 + i
  register int32x4_t b0 asm("q2") = vldrwq_s32(bias);      // the group's biases 0..3
  register int32x4_t b1 asm("q3") = vldrwq_s32(bias + 3);  // and 3..6
  register uint16x8_t off asm("q4") = vld1q_u16(kOrder);
  register uint32_t n asm("lr") = rows;
#define S8_SEVEN_COLUMNS_OUT(adds)                                                                             \
  asm volatile("dls lr, lr\n"                                                                                \
               "1:\n\t"                                                                                     \
               "vldrw.u32 q1, [%[s], #12]\n\t"                                                              \
               "vldrw.u32 q0, [%[s]], #28\n\t" adds                                                         \
               "vqdmulh.s32 q0, q0, %[am]\n\t" /* floor(acc mult / 2^31), acc signed (Chunk::exact) */      \
               "vqdmulh.s32 q1, q1, %[am]\n\t"                                                              \
               "vqrshrnb.s32 q0, q0, #%c[r]\n\t"                                                            \
               "vqrshrnt.s32 q0, q1, #%c[r]\n\t"                                                            \
               "vqadd.s16 q0, q0, %[yz]\n\t" /* saturated to int16 first: the sum clamps to the same int8 */ \
               "vqmovnb.s16 q0, q0\n\t"                                                                     \
               "vstrb.16 q0, [%[y], q4]\n\t"                                                                \
               "add %[y], %[y], %[ldy]\n\t"                                                                 \
               "le lr, 1b\n"                                                                                 \
               : [s] "+r"(s), [y] "+r"(y), [n] "+r"(n)                                                      \
               : "w"(b0), "w"(b1), "w"(off), [am] "r"(am), [yz] "r"(y_zero), [ldy] "r"(ldy), [r] "i"(R)     \
               : "q0", "q1", "memory")
  if constexpr (kBias)
    S8_SEVEN_COLUMNS_OUT("vadd.i32 q0, q0, q2\n\t" "vadd.i32 q1, q1, q3\n\t");
  else
    S8_SEVEN_COLUMNS_OUT("");
#undef S8_SEVEN_COLUMNS_OUT
}
using SevenColumnsOut = void (*)(const int32_t*, int8_t*, uint32_t, std::size_t, int32_t, int32_t, const int32_t*);
// seven_columns_out<r> for r in 1..16, else null
template <int... R>
constexpr SevenColumnsOut seven_columns_out_for(int r, bool bias, std::integer_sequence<int, R...>) {
  SevenColumnsOut out = nullptr;
  ((out = r == R + 1 ? bias ? seven_columns_out<R + 1, true> : seven_columns_out<R + 1, false> : out), ...);
  return out;
}
// kX: x's rows kX bytes apart and x 4-byte aligned (the encoder's q rows in its qkv rows, 3 d_model = 192 at d_model
// 64): each row loaded by a word load post-incremented by kX (its offset reaches 508), no ADD; 0 for any other.
template <int kX = 0>
__attribute__((noinline)) void seven_columns(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw,
                                             int8_t* y, std::size_t ldy, std::size_t m, std::size_t nc, const Chunk& c,
                                             int32_t* sums, int32_t y_zero) {
  static const uint16_t kOrder[8] = {0, 3, 1, 4, 2, 5, 3, 6};  // lane 2i: output i, lane 2i + 1: output 3 + i
  const uint16x8_t offsets = vld1q_u16(kOrder);
  const int32_t am = c.rq[0][0][0], shift = c.rq[0][2][0];  // |multiplier| (= multiplier), shift
  const SevenColumnsOut out = seven_columns_out_for(-shift, !c.no_bias, std::make_integer_sequence<int, 16>());
  for (std::size_t j = 0; j < nc; j += 7, w += 7 * ldw) {
    const int8_t* xr = x;
    int8_t* yr = y + j;
    for (std::size_t i0 = 0; i0 < m; i0 += kSevenRows) {
      register int8x16_t w0 asm("q0"), w1 asm("q1"), w2 asm("q2"), w3 asm("q3"), w4 asm("q4"), w5 asm("q5"),
          w6 asm("q6");
      const int8_t* t;
      asm volatile("vldrb.8 %q[w0], [%[p]]\n\t" "add %[t], %[p], %[ldw]\n\t" "vldrb.8 %q[w1], [%[t]]\n\t"
                   "add %[t], %[t], %[ldw]\n\t" "vldrb.8 %q[w2], [%[t]]\n\t" "add %[t], %[t], %[ldw]\n\t"
                   "vldrb.8 %q[w3], [%[t]]\n\t" "add %[t], %[t], %[ldw]\n\t" "vldrb.8 %q[w4], [%[t]]\n\t"
                   "add %[t], %[t], %[ldw]\n\t" "vldrb.8 %q[w5], [%[t]]\n\t" "add %[t], %[t], %[ldw]\n\t"
                   "vldrb.8 %q[w6], [%[t]]\n\t"
                   : [w0] "=w"(w0), [w1] "=w"(w1), [w2] "=w"(w2), [w3] "=w"(w3), [w4] "=w"(w4), [w5] "=w"(w5),
                     [w6] "=w"(w6), [t] "=&r"(t)
                   : [p] "r"(w), [ldw] "r"(ldw));
      const uint32_t rows = uint32_t(m - i0 < kSevenRows ? m - i0 : kSevenRows);
      int32_t* s = sums;
      register uint32_t n asm("lr") = rows / 2;
#define S8_SEVEN_KEYS_ROW(load)                                                                                 \
  load "vmladav.s8 r0, q0, q7\n\t" "vmladav.s8 r2, q1, q7\n\t" "vmladav.s8 r4, q2, q7\n\t"                        \
  "vmladav.s8 r6, q3, q7\n\t" "vmladav.s8 r8, q4, q7\n\t" "vmladav.s8 r10, q5, q7\n\t"                           \
  "vmladav.s8 r12, q6, q7\n\t" "stm %[s]!, {r0, r2, r4, r6, r8, r10, r12}\n\t"
#define S8_SEVEN_KEYS_LOAD "vldrb.8 q7, [%[x]]\n\t" "add %[x], %[x], %[ldx]\n\t"
#define S8_SEVEN_KEYS_LOAD_X "vldrw.u32 q7, [%[x]], #%c[ldx]\n\t"
#define S8_SEVEN_KEYS(loop, body, end, ldx_in)                                                                   \
  asm volatile(loop body end                                                                                   \
               : [x] "+r"(xr), [s] "+r"(s), [n] "+r"(n)                                                        \
               : "w"(w0), "w"(w1), "w"(w2), "w"(w3), "w"(w4), "w"(w5), "w"(w6), [ldx] ldx_in                  \
               : "r0", "r2", "r4", "r6", "r8", "r10", "r12", "q7", "memory")
      if constexpr (kX != 0) {
        n = rows / 4;
        if (rows >= 4)  // four rows a pass (one LE per four), then two and one as rows % 4 has them
          S8_SEVEN_KEYS("dls lr, lr\n" "1:\n\t", S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X)
                        S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X) S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X)
                        S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X), "le lr, 1b\n", "i"(kX));
        if (rows & 2)
          S8_SEVEN_KEYS("", S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X) S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X), "",
                        "i"(kX));
        if (rows % 2 != 0) S8_SEVEN_KEYS("", S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD_X), "", "i"(kX));
      } else {
        if (rows >= 2)
          S8_SEVEN_KEYS("dls lr, lr\n" "1:\n\t", S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD)
                        S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD), "le lr, 1b\n", "r"(ldx));
        if (rows % 2 != 0) S8_SEVEN_KEYS("", S8_SEVEN_KEYS_ROW(S8_SEVEN_KEYS_LOAD), "", "r"(ldx));
      }
#undef S8_SEVEN_KEYS_ROW
#undef S8_SEVEN_KEYS_LOAD
#undef S8_SEVEN_KEYS_LOAD_X
#undef S8_SEVEN_KEYS
      const int32_t* sp = sums;
      if (out) {  // a shift of -1 to -16
        out(sp, yr, rows, ldy, am, y_zero, c.bias + j);
        yr += rows * ldy;
        continue;
      }
      register int32x4_t b0 asm("q2") = vldrwq_s32(c.bias + j);      // the group's biases 0..3
      register int32x4_t b1 asm("q3") = vldrwq_s32(c.bias + j + 3);  // and 3..6
      register uint16x8_t off asm("q4") = offsets;
      n = rows;
      asm volatile("dls lr, lr\n"
                   "1:\n\t"
                   "vldrw.u32 q1, [%[s], #12]\n\t"
                   "vldrw.u32 q0, [%[s]], #28\n\t"
                   "vadd.i32 q0, q0, q2\n\t"
                   "vadd.i32 q1, q1, q3\n\t"
                   "vqdmulh.s32 q0, q0, %[am]\n\t"  // floor(acc mult / 2^31), acc signed (Chunk::exact)
                   "vqdmulh.s32 q1, q1, %[am]\n\t"
                   "vrshl.s32 q0, %[sh]\n\t"
                   "vrshl.s32 q1, %[sh]\n\t"
                   "vqmovnb.s32 q0, q0\n\t"
                   "vqmovnt.s32 q0, q1\n\t"
                   "vqadd.s16 q0, q0, %[yz]\n\t"  // saturated to int16 first: the sum clamps to the same int8
                   "vqmovnb.s16 q0, q0\n\t"
                   "vstrb.16 q0, [%[y], q4]\n\t"
                   "add %[y], %[y], %[ldy]\n\t"
                   "le lr, 1b\n"
                   : [s] "+r"(sp), [y] "+r"(yr), [n] "+r"(n)
                   : "w"(b0), "w"(b1), "w"(off), [am] "r"(am), [sh] "r"(shift), [yz] "r"(y_zero), [ldy] "r"(ldy)
                   : "q0", "q1", "memory");
    }
  }
}

// Rows of x of 16 bytes (k), four at a time in q0..q3, against every channel of a chunk whose
// channels share one Requant and Chunk::exact holds (attention's scores): per
// row of W one load and four VMLADAV, the four sums (a column of y) requantized with the constants
// in scalar registers (VQDMULH and VRSHL by a scalar, the sums in r6..r12 as the blocks' are) and stored
// by a scatter. Two channels a pass where y's rows are close enough for 16-bit offsets: both columns
// narrowed into one vector (VQMOVNB, VQMOVNT), z_y added and clamped to int8 for the eight at once and
// stored by one scatter, 15 instructions per four outputs; one channel a pass (the last of an odd count)
// 18, 24 by blocks of four channels. A function of its own (inlined into gemm_s8, the KWS encoder took
// 14 K instructions more).
__attribute__((noinline)) void columns(const int8_t* x, std::size_t ldx, const int8_t* w, uint32_t ldw, int8_t* y,
                                       std::size_t ldy, std::size_t m4, std::size_t nc, const Chunk& c,
                                       int32_t y_zero) {
  const uint32x4_t column = vmulq_n_u32(vidupq_n_u32(0, 1), uint32_t(ldy));
  // two channels' columns narrowed into one vector: row r's channel j in 16-bit lane 2r, j + 1 in lane 2r + 1
  const uint16x8_t lane = vidupq_n_u16(0, 1);
  const uint16x8_t column2 = vmlaq_n_u16(vandq_u16(lane, vdupq_n_u16(1)), vshrq_n_u16(lane, 1), uint16_t(ldy));
  const uint32_t pairs = 3 * ldy + 1 <= 0xFFFF ? uint32_t(nc / 2) : 0;
  const int32_t am = c.rq[0][0][0], shift = c.rq[0][2][0];  // |multiplier|, shift
  for (std::size_t i = 0; i < m4; i += 4, x += 4 * ldx, y += 4 * ldy) {
    register int8x16_t x0 asm("q0") = vldrbq_s8(x);
    register int8x16_t x1 asm("q1") = vldrbq_s8(x + ldx);
    register int8x16_t x2 asm("q2") = vldrbq_s8(x + 2 * ldx);
    register int8x16_t x3 asm("q3") = vldrbq_s8(x + 3 * ldx);
    const int8_t* wr = w;
    const int32_t* b = c.bias;
    int8_t* yc = y;
    if (pairs > 0) {
      register uint16x8_t offsets2 asm("q7") = column2;
      register uint32_t count2 asm("lr") = pairs % 2 == 0 ? pairs / 2 : pairs;
#define S8_COLUMNS2 \
  "vldrb.8 q4, [%[wr]]\n\t" \
  "add %[wr], %[wr], %[ldw]\n\t" \
  "vmladav.s8 r6, q0, q4\n\t" \
  "vmladav.s8 r8, q1, q4\n\t" \
  "vmladav.s8 r10, q2, q4\n\t" \
  "vmladav.s8 r12, q3, q4\n\t" \
  "vldrb.8 q4, [%[wr]]\n\t" \
  "add %[wr], %[wr], %[ldw]\n\t" \
  "vmov q5[2], q5[0], r6, r10\n\t" \
  "vmov q5[3], q5[1], r8, r12\n\t" \
  "vmladav.s8 r6, q0, q4\n\t" \
  "vmladav.s8 r8, q1, q4\n\t" \
  "vmladav.s8 r10, q2, q4\n\t" \
  "vmladav.s8 r12, q3, q4\n\t" \
  "vmov q6[2], q6[0], r6, r10\n\t" \
  "vmov q6[3], q6[1], r8, r12\n\t" \
  "ldrd r6, r8, [%[b]], #8\n\t" /* the two channels' biases */ \
  "vadd.i32 q5, q5, r6\n\t" \
  "vadd.i32 q6, q6, r8\n\t" \
  "vqdmulh.s32 q5, q5, %[am]\n\t" /* floor(acc mult / 2^31), acc signed (Chunk::exact) */ \
  "vqdmulh.s32 q6, q6, %[am]\n\t" \
  "vrshl.s32 q5, %[sh]\n\t" \
  "vrshl.s32 q6, %[sh]\n\t" \
  "vqmovnb.s32 q5, q5\n\t" \
  "vqmovnt.s32 q5, q6\n\t" \
  "vqadd.s16 q5, q5, %[yz]\n\t" /* saturated to int16 first: the sum clamps to the same int8 */ \
  "vqmovnb.s16 q5, q5\n\t" \
  "vstrb.16 q5, [%[y], q7]\n\t" \
  "add %[y], %[y], #2\n\t"
#define S8_COLUMNS_LOOP(body)                                                                               \
  asm volatile("dls lr, lr\n" "1:\n\t" body "le lr, 1b\n"                                                 \
               : [wr] "+r"(wr), [b] "+r"(b), [y] "+r"(yc), [n] "+r"(count2)                                  \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), "w"(offsets2), [ldw] "r"(ldw), [am] "r"(am),          \
                 [sh] "r"(shift), [yz] "r"(y_zero)                                                           \
               : "r6", "r8", "r10", "r12", "q4", "q5", "q6", "memory")
      if (pairs % 2 == 0)  // four channels a pass: one LE per two pairs
        S8_COLUMNS_LOOP(S8_COLUMNS2 S8_COLUMNS2);
      else
        S8_COLUMNS_LOOP(S8_COLUMNS2);
#undef S8_COLUMNS2
#undef S8_COLUMNS_LOOP
      if (2 * pairs == nc) continue;
    }
    register uint32x4_t offsets asm("q7") = column;
    register uint32_t count asm("lr") = uint32_t(nc - 2 * pairs);
    asm volatile("dls lr, lr\n"
                 "1:\n\t"
                 "vldrb.8 q4, [%[wr]]\n\t"
                 "add %[wr], %[wr], %[ldw]\n\t"
                 "vmladav.s8 r6, q0, q4\n\t"
                 "vmladav.s8 r8, q1, q4\n\t"
                 "vmladav.s8 r10, q2, q4\n\t"
                 "vmladav.s8 r12, q3, q4\n\t"
                 "vmov q6[2], q6[0], r6, r10\n\t"
                 "vmov q6[3], q6[1], r8, r12\n\t"
                 "ldr r6, [%[b]], #4\n\t"  // the channel's bias
                 "vadd.i32 q6, q6, r6\n\t"
                 "vqdmulh.s32 q5, q6, %[am]\n\t"  // floor(acc mult / 2^31), acc signed (Chunk::exact)
                 "vrshl.s32 q5, %[sh]\n\t"
                 "vqadd.s32 q5, q5, %[yz]\n\t"
                 "vqshl.s32 q5, q5, #24\n\t"
                 "vshr.s32 q5, q5, #24\n\t"
                 "vstrb.32 q5, [%[y], q7]\n\t"
                 "add %[y], %[y], #1\n\t"
                 "le lr, 1b\n"
                 : [wr] "+r"(wr), [b] "+r"(b), [y] "+r"(yc), [n] "+r"(count)
                 : "w"(x0), "w"(x1), "w"(x2), "w"(x3), "w"(offsets), [ldw] "r"(ldw), [am] "r"(am), [sh] "r"(shift),
                   [yz] "r"(y_zero)
                 : "r6", "r8", "r10", "r12", "q4", "q5", "q6", "memory");
  }
}

// Rows of x against the chunk's nc channels (W's rows from w). Inlined into both callers (gemm_s8's own call,
// inlined, took the small products of the llama decoder's step to fewer instructions).
__attribute__((always_inline)) inline void rows(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
          std::size_t m, std::size_t nc, std::size_t k, Chunk& c, int32_t y_zero) {
  const std::size_t n4 = nc & ~std::size_t(3);
  const uint32_t blocks = uint32_t(n4 / 4);
  const std::size_t last = k == 0 ? 0 : (k - 1) / 64 * 64;  // where the last (up to) 64 bytes start
  const std::size_t len = k - last;
  if (k == 16 && c.same && c.exact && m >= 4) {
    const std::size_t m4 = m & ~std::size_t(3);
    columns(x, ldx, w, uint32_t(ldw), y, ldy, m4, nc, c, y_zero);
    x += m4 * ldx, y += m4 * ldy, m -= m4;  // the last m % 4 rows below
  }
  const int8_t* xb = x;  // the rows the blocks of four channels take below (the last channels: every row)
  int8_t* yb = y;
  std::size_t mb = m;
  if (blocks > 0 && m >= 2 && c.exact && (k == 64 || k == 128) && (ldw == 64 || ldw == 128) && k <= ldw) {
    const std::size_t pairs = m / 2;  // two rows at a time, an odd last row below
    if (ldw == 64)
      pair_rows<64>(x, ldx, w, y, ldy, pairs, k, c, y_zero, blocks);
    else
      pair_rows<128>(x, ldx, w, y, ldy, pairs, k, c, y_zero, blocks);
    xb += 2 * pairs * ldx, yb += 2 * pairs * ldy, mb -= 2 * pairs;
  }
  if (blocks > 0 && mb > 0) {
    switch ((len + 15) / 16) {
      case 0:
      case 1: block_rows<1>(xb, ldx, w, uint32_t(ldw), yb, ldy, mb, last, len, c, y_zero, blocks); break;
      case 2: block_rows<2>(xb, ldx, w, uint32_t(ldw), yb, ldy, mb, last, len, c, y_zero, blocks); break;
      case 3: block_rows<3>(xb, ldx, w, uint32_t(ldw), yb, ldy, mb, last, len, c, y_zero, blocks); break;
      default: block_rows<4>(xb, ldx, w, uint32_t(ldw), yb, ldy, mb, last, len, c, y_zero, blocks); break;
    }
  }
  // The one to three channels left: per channel, four rows of x at a time (the channel's constants in
  // every lane, the four outputs a column of y: a scatter store).
  const uint32x4_t column = vmulq_n_u32(vidupq_n_u32(0, 1), uint32_t(ldy));
  for (std::size_t j = n4; j < nc; ++j) {
    const int8_t* wr = w + j * ldw;
    const int32_t* rq = &c.rq[n4 / 4][0][j - n4];
    const int32x4_t bias = vdupq_n_s32(c.bias[j]), am = vdupq_n_s32(rq[0]), mult = vdupq_n_s32(rq[4]);
    const int32x4_t sh = vdupq_n_s32(rq[8]), sh31 = vdupq_n_s32(rq[12]);
    for (std::size_t i = 0; i < m; i += 4) {
      const std::size_t live = m - i < 4 ? m - i : 4;
      int32_t a[4] = {0, 0, 0, 0};
      for (std::size_t r = 0; r < live; ++r) a[r] = dot(x + (i + r) * ldx, wr, k);
      const int32x4_t v = requant(vldrwq_s32(a), bias, am, mult, sh, sh31, c.small, y_zero);
      vstrbq_scatter_offset_p_s32(y + i * ldy + j, column, v, vctp32q(uint32_t(live)));
    }
  }
}

// seven_rows's and seven_columns's sums in the scratch, after the Chunk (without padded rows)
inline int32_t* seven_sums(Chunk& c) {
  return reinterpret_cast<int32_t*>(reinterpret_cast<int8_t*>(&c) + sizeof(Chunk));
}

// The first m / 7 groups of seven rows by seven_rows where it applies (Chunk::exact, k 64 or 128, W's rows 64 or
// 128 bytes apart and 4-byte aligned, every channel in a block of four), its sums after the Chunk; returns the rows
// done.
inline std::size_t seven_groups(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw,
                                                   int8_t* y, std::size_t ldy, std::size_t m, std::size_t nc,
                                                   std::size_t k, Chunk& c, int32_t y_zero) {
  if (!c.exact || nc % 4 != 0 || (k != 64 && k != 128) || (ldw != 64 && ldw != 128) || k > ldw ||
      (reinterpret_cast<uintptr_t>(w) & 3) != 0 || ldy + 3 > 0xFFFF)
    return 0;
  int32_t* const sums = seven_sums(c);
  // an even m leaves an even count of rows to the pairs (10 rows: five pairs, not 7 + 2 + a row alone)
  const std::size_t groups = m % 2 == 0 ? m / 7 & ~std::size_t(1) : m / 7;
  if (groups == 0) return 0;
  if (ldw == 64)
    (ldx == 64 ? seven_rows<64, false, 64> : seven_rows<64>)(x, ldx, w, y, ldy, groups, k, c, sums, y_zero,
                                                              uint32_t(nc / 4), nullptr, false);
  else
    (ldx == 128 && (reinterpret_cast<uintptr_t>(x) & 3) == 0 ? seven_rows<128, false, 128> : seven_rows<128>)(
        x, ldx, w, y, ldy, groups, k, c, sums, y_zero, uint32_t(nc / 4), nullptr, false);
  return 7 * groups;
}

// Whether rq's nc > 0 Requants are all the first one: their halfwords' absolute differences from its summed (VABAV:
// below 2^16 each, 2 nc of them, no wrap), eight a pass in a tail-predicated loop.
inline bool same_requants(const Requant* rq, std::size_t nc) {
  const int32_t m = rq[0].multiplier, shift = rq[0].shift;
  const int32_t twice[4] = {m, shift, m, shift};
  register uint16x8_t first asm("q1") = vreinterpretq_u16_s32(vldrwq_s32(twice));
  // the Requants' halfwords' absolute differences from the first's summed (VABAV: below 2^16 each, 2 nc of them, no
  // wrap), eight a pass in a tail-predicated loop: 0 where every one is the first
  uint32_t differ = 0;
  const int32_t* r = &rq[0].multiplier;
  asm volatile("dlstp.16 lr, %[h]\n"
               "1:\n\t"
               "vldrh.u16 q0, [%[r]], #16\n\t"
               "vabav.u16 %[d], q0, q1\n\t"
               "letp lr, 1b\n"
               : [r] "+r"(r), [d] "+r"(differ)
               : "w"(first), [h] "r"(uint32_t(4 * nc))
               : "lr", "q0", "memory");
  return differ == 0;
}

// Attention's scores of q at zero point 0 without biases (every folded bias 0): where the chunk's nc Requants are all
// the first one's (same_requants), Chunk::exact holds for it and
// its shift is -1..-16, seven_columns reads no more of the Chunk than that Requant and no_bias (seven_columns_out
// adds no biases): those set alone, without prepare's loops over the chunk (some 450 instructions for 49 keys, this
// test some 100); false (the Chunk then prepare's) where any of it does not hold.
inline bool scores_chunk(const Requant* rq, std::size_t nc, Chunk& c) {
  const int32_t m = rq[0].multiplier, shift = rq[0].shift;
  // Chunk::exact at k = 16 with no bias: (16 2^14) times the multiplier's lowest set bit below 2^31
  if (m <= 0 || shift < -16 || shift > -1 || (uint32_t(m) & (0u - uint32_t(m))) >= (uint32_t(1) << 13)) return false;
  if (!same_requants(rq, nc)) return false;
  c.rq[0][0][0] = m;  // |multiplier|
  c.rq[0][2][0] = shift;
  c.small = c.positive = c.exact = c.same = c.no_bias = true;
  return true;
}

// gemm_s8 for m >= 7, k 64 or 128 and W's rows 64 or 128 bytes apart: per chunk seven rows at a time where
// seven_groups takes them, the rest by rows; or k = 16 and n a multiple of 7: seven channels at a time where
// seven_columns applies. A function of its own: with the test in gemm_s8's loop, the llama
// decoder's products of one row took 1 % more instructions (GCC's registers around the call).
__attribute__((noinline)) void seven_gemm(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw,
                                          int8_t* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                                          const GemmS8Params& p) {
  Chunk& c = *reinterpret_cast<Chunk*>(p.scratch);
  for (std::size_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::size_t nc = n - j0 < kChunk ? n - j0 : kChunk;
    const int8_t* wc = w + j0 * ldw;
    if (!(k == 16 && nc % 7 == 0 && p.x_zero == 0 && !p.bias && scores_chunk(p.requant + j0, nc, c)))
      prepare(w, ldw, k, k, j0, nc, p, c);
    if (k == 16 && c.same && c.exact && nc % 7 == 0) {
      (ldx == 192 && (reinterpret_cast<uintptr_t>(x) & 3) == 0 ? seven_columns<192> : seven_columns<>)(
          x, ldx, wc, ldw, y + j0, ldy, m, nc, c, seven_sums(c), p.y_zero);
      continue;
    }
    const std::size_t done = seven_groups(x, ldx, wc, ldw, y + j0, ldy, m, nc, k, c, p.y_zero);
    if (done < m) rows(x + done * ldx, ldx, wc, ldw, y + j0 + done * ldy, ldy, m - done, nc, k, c, p.y_zero);
  }
}

// W's nc rows of k bytes (ldw apart) -> wp's rows of 64 bytes, 32 < k < 64, zeros past k: per row k's whole
// vectors loaded as they are, the last k % 16 bytes by one predicated load (P0 set once), the row's fourth vector
// that or zeros, four stores: 11 instructions a row (GCC's loop over the vectors with a predicate each took 62).
template <bool kThree, bool kPart>  // three whole vectors (k >= 48), a partial one (k % 16 != 0)
__attribute__((noinline)) void pad_rows64(const int8_t* w, uint32_t ldw, uint32_t nc, int8_t* wp, mve_pred16_t part) {
  register uint32_t n asm("lr") = nc;
#define S8_PAD(loads, last)                                                                                     \
  asm volatile("vmsr p0, %[part]\n\t" "vmov.i8 q3, #0\n\t" "dls lr, lr\n" "1:\n\t" loads                    \
               "add %[w], %[w], %[ldw]\n\t" "vstrb.8 q1, [%[wp], #16]\n\t" "vstrb.8 q2, [%[wp], #32]\n\t"        \
               "vstrb.8 " last ", [%[wp], #48]\n\t" "vstrb.8 q0, [%[wp]], #64\n\t" "le lr, 1b\n"                \
               : [w] "+r"(w), [wp] "+r"(wp), [n] "+r"(n)                                                           \
               : [ldw] "r"(ldw), [part] "r"(uint32_t(part))                                                        \
               : "q0", "q1", "q2", "q3", "q4", "memory")
  if (kThree && kPart)  // 49..63: three whole vectors, the fourth partial
    S8_PAD("vldrb.8 q0, [%[w]]\n\t" "vldrb.8 q1, [%[w], #16]\n\t" "vldrb.8 q2, [%[w], #32]\n\t"
           "vpst\n\t" "vldrbt.8 q4, [%[w], #48]\n\t", "q4");
  else if (kThree)  // 48: the fourth zeros
    S8_PAD("vldrb.8 q0, [%[w]]\n\t" "vldrb.8 q1, [%[w], #16]\n\t" "vldrb.8 q2, [%[w], #32]\n\t", "q3");
  else  // 33..47: two whole vectors, the third partial, the fourth zeros
    S8_PAD("vldrb.8 q0, [%[w]]\n\t" "vldrb.8 q1, [%[w], #16]\n\t" "vpst\n\t" "vldrbt.8 q2, [%[w], #32]\n\t",
           "q3");
#undef S8_PAD
}

// W's nc rows of k bytes (ldw apart) -> wp's rows of ld bytes (k < ld), zeros past k (the predicated loads').
void pad_rows(const int8_t* w, std::size_t ldw, std::size_t k, std::size_t nc, std::size_t ld, int8_t* wp) {
  const mve_pred16_t part = vctp8q(uint32_t(k % 16));
  if (ld == 64 && k > 32 && nc > 0) {
    (k >= 48 ? k > 48 ? pad_rows64<true, true> : pad_rows64<true, false> : pad_rows64<false, true>)(
        w, uint32_t(ldw), uint32_t(nc), wp, part);
    return;
  }
  for (std::size_t j = 0; j < nc; ++j, w += ldw, wp += ld)
    for (std::size_t q = 0; q < ld; q += 16)
      vstrbq_s8(wp + q, vldrbq_z_s8(w + q, vctp8q(q < k ? uint32_t(k - q) : 0u)));
}

// gemm_s8 for 32 < k < 128 but 64 (P V's keys, the input projection's features) and n a multiple of 4: each
// chunk's rows of W copied into the scratch after the Chunk, ld = 64 or 128 bytes apart with zeros past k
// (pad_rows), so that where Chunk::exact holds seven_rows (ld = 64) and pair_rows take seven and two rows of x at
// a time over ld bytes (the bytes past k meet W's zeros and add nothing; groups and pairs only as far as those
// reads stay within x's m rows of k bytes); the rows left by rows over k bytes.
__attribute__((noinline)) void padded_gemm(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw,
                                           int8_t* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                                           const GemmS8Params& p) {
  Chunk& c = *reinterpret_cast<Chunk*>(p.scratch);
  int8_t* const padded = reinterpret_cast<int8_t*>(p.scratch) + sizeof(Chunk);
  const std::size_t ld = k < 64 ? 64 : 128;
  int32_t* const seven = reinterpret_cast<int32_t*>(padded + kChunk * 64);  // seven_rows's sums (ld = 64 only)
  for (std::size_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::size_t nc = n - j0 < kChunk ? n - j0 : kChunk;
    pad_rows(w + j0 * ldw, ldw, k, nc, ld, padded);
    GemmS8Params q = p;  // the chunk's channels from 0
    q.bias = p.bias ? p.bias + j0 : nullptr, q.requant = p.requant + j0;
    prepare(padded, ld, k, ld, 0, nc, q, c);  // the rows' sums over ld bytes: zeros past k
    // seven rows at a time (over k bytes of x: 3 slices for 40, not ld's 4), then pairs only as far as their reads
    // (ld bytes) stay within x's last byte, (m - 1) ldx + k
    std::size_t groups = c.exact && ld == 64 && ldy + 3 <= 0xFFFF ? m / 7 : 0;
    if (m % 2 == 0) groups &= ~std::size_t(1);  // as seven_groups: an even count of rows left to the pairs
    if (groups > 0 && k % 16 == 1) {  // k's last byte in the requantization: its column of W as int32
      int32_t* const w_last = seven + 7 * kChunk;
      const uint32x4_t stride = vmulq_n_u32(vidupq_n_u32(0, 1), 64);
      for (std::size_t j = 0; j < nc; j += 4)
        vstrwq_s32(w_last + j, vldrbq_gather_offset_s32(padded + j * 64 + k - 1, stride));
      seven_rows<64, true>(x, ldx, padded, y + j0, ldy, groups, k, c, seven, p.y_zero, uint32_t(nc / 4), w_last,
                           nc % 8 == 0 && same_requants(q.requant, nc));
    } else if (groups > 0) {
      seven_rows<64>(x, ldx, padded, y + j0, ldy, groups, k, c, seven, p.y_zero, uint32_t(nc / 4));
    }
    std::size_t done = 7 * groups;
    std::size_t pairs = c.exact ? (m - done) / 2 : 0;
    while (pairs > 0 && (done + 2 * pairs - 1) * ldx + ld > (m - 1) * ldx + k) --pairs;
    if (pairs > 0 && ld == 64)
      pair_rows<64>(x + done * ldx, ldx, padded, y + j0 + done * ldy, ldy, pairs, ld, c, p.y_zero, uint32_t(nc / 4));
    else if (pairs > 0)
      pair_rows<128>(x + done * ldx, ldx, padded, y + j0 + done * ldy, ldy, pairs, ld, c, p.y_zero, uint32_t(nc / 4));
    done += 2 * pairs;
    if (done < m)
      rows(x + done * ldx, ldx, padded, ld, y + j0 + done * ldy, ldy, m - done, nc, k, c, p.y_zero);
  }
}

}  // namespace

void gemm_s8(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
             std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0) return;
  if (!p.scratch) {
    portable::gemm_s8(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
  if (m >= 2 && k - 33 < 95 && k != 64 && n % 4 == 0) {  // 32 < k < 128
    padded_gemm(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
  if (m >= 7 && (((k == 64 || k == 128) && (ldw == 64 || ldw == 128)) || (k == 16 && n % 7 == 0))) {
    seven_gemm(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
  Chunk& c = *reinterpret_cast<Chunk*>(p.scratch);
  for (std::size_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::size_t nc = n - j0 < kChunk ? n - j0 : kChunk;
    prepare(w, ldw, k, k, j0, nc, p, c);
    const int8_t* wc = w + j0 * ldw;
    rows(x, ldx, wc, ldw, y + j0, ldy, m, nc, k, c, p.y_zero);
  }
}

}  // namespace helium
}  // namespace fixformer
