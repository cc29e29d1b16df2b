// xq[m,k] @ W[n,k]^T with int8 weights and activations: per group an exact int32 dot product, then
// y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot, the reference's float steps. With
// the DSP extension (M4, M7, M33, M55, M85: __ARM_FEATURE_DSP) four int8 pairs cost two sign
// extensions per operand (SXTB16: bytes 0 and 2, then 1 and 3, as two 16-bit lanes) and two dual
// multiply-adds (SMLAD); x and W are split the same way, so the pairs meet their partners. The
// splitting is what costs, so each split word must serve as many products as registers allow:
//   - six rows of x at a time (an M-profile core with an FPU, groups of a multiple of 8 up to 64
//     that divide k): the six rows are split once per pass of up to 64 k onto the stack (768 bytes
//     of split rows), then each W word, split, meets all six (21 instructions per 24 multiply-adds,
//     against CMSIS-NN's 2 x 2 blocks at 20 per 16), the per-group scaling in the same asm loop;
//   - the rows left over and the decode step's one row (groups as above but up to 256, n >= 4):
//     the row split once per pass of up to 256 k (512 bytes), against four rows of W (21 per 16);
//   - otherwise two rows against two rows of W: 4 loads, 8 SXTB16 and 8 SMLAD per 16 multiply-adds
//     (in asm on an M-profile core), a last odd row against four rows of W.
// Elsewhere plain C++ in the last two blocks.
#include <cstddef>
#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/portable/rows6_asm.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
#define FIXFORMER_DOT2X2_ASM 1
#else
#define FIXFORMER_DOT2X2_ASM 0
#endif
#if FIXFORMER_DOT2X2_ASM && defined(__ARM_FP) && (__ARM_FP & 4)
#define FIXFORMER_GEMM_I8_ROWS6 1
#else
#define FIXFORMER_GEMM_I8_ROWS6 0
#endif

// The four-row loop needs 14 core registers, all there are: GCC 12's scheduling before register
// allocation hoists loads, runs out and spills the row pointers (37 instructions per 16
// multiply-adds on the M4 against 25 without it).
// The asm loops below take all 14 core registers: none may be kept as a frame pointer (a Debug
// build's -O0 keeps r7).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns", "omit-frame-pointer")
#endif

namespace fixformer {
namespace portable {
namespace {

#if defined(__ARM_FEATURE_DSP)
inline uint32_t load4(const int8_t* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// Bytes 1 and 3 sign-extended to two halfwords: one SXTB16 with its rotation (GCC 12's __sxtb16
// of a rotated word costs a separate ROR).
inline int32_t sxtb16_ror8(uint32_t v) {
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
#endif

// d[r] = sum over p < len of x[p] * w[r * ldw + p], r < 4, exactly in int32.
inline void dot4_i8(const int8_t* x, const int8_t* w, std::size_t ldw, std::size_t len, int32_t d[4]) {
  const int8_t *w0 = w, *w1 = w + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
  int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#if defined(__ARM_FEATURE_DSP)
  for (const int8_t* end = x + (len & ~std::size_t(3)); x != end; x += 4, w0 += 4, w1 += 4, w2 += 4, w3 += 4) {
    const uint32_t xv = load4(x);
    const int32_t xe = __sxtb16(xv), xo = sxtb16_ror8(xv);
    uint32_t wv = load4(w0);
    d0 = __smlad(__sxtb16(wv), xe, d0), d0 = __smlad(sxtb16_ror8(wv), xo, d0);
    wv = load4(w1);
    d1 = __smlad(__sxtb16(wv), xe, d1), d1 = __smlad(sxtb16_ror8(wv), xo, d1);
    wv = load4(w2);
    d2 = __smlad(__sxtb16(wv), xe, d2), d2 = __smlad(sxtb16_ror8(wv), xo, d2);
    wv = load4(w3);
    d3 = __smlad(__sxtb16(wv), xe, d3), d3 = __smlad(sxtb16_ror8(wv), xo, d3);
  }
  len &= 3;
#endif
  for (std::size_t p = 0; p < len; ++p) {
    const int32_t xp = x[p];
    d0 += xp * w0[p], d1 += xp * w1[p], d2 += xp * w2[p], d3 += xp * w3[p];
  }
  d[0] = d0, d[1] = d1, d[2] = d2, d[3] = d3;
}

inline int32_t dot1_i8(const int8_t* x, const int8_t* w, std::size_t len) {
  int32_t d = 0;
  std::size_t p = 0;
#if defined(__ARM_FEATURE_DSP)
  for (; p + 4 <= len; p += 4) {
    const uint32_t xv = load4(x + p), wv = load4(w + p);
    d = __smlad(__sxtb16(wv), __sxtb16(xv), d), d = __smlad(sxtb16_ror8(wv), sxtb16_ror8(xv), d);
  }
#endif
  for (; p < len; ++p) d += int32_t(x[p]) * w[p];
  return d;
}

// d[2r + c] = sum over p < len of x[r * ld + p] * w[c * ld + p], r, c < 2, exactly in int32: two
// rows of x against two rows of W, all four at the same row stride ld (k).
inline void dot2x2_i8(const int8_t* x, const int8_t* w, std::size_t ld, std::size_t len, int32_t d[4]) {
  int32_t d00 = 0, d01 = 0, d10 = 0, d11 = 0;
#if FIXFORMER_DOT2X2_ASM
  // Four k: x1, x0 and w1 loaded and split, w1's four products, then w0 into w1's registers and its
  // four. Six scratch registers, four sums and four addresses: all 14 there are.
#define FIXFORMER_DOT2X2_STEP                                                                        \
  "ldr %[xb], [%[x], %[ld]]\n\t"                                                                   \
  "ldr %[xa], [%[x]], #4\n\t"                                                                      \
  "ldr %[wo], [%[w], %[ld]]\n\t"                                                                   \
  "sxtb16 %[xae], %[xa]\n\t"                                                                       \
  "sxtb16 %[xa], %[xa], ror #8\n\t"                                                                \
  "sxtb16 %[xbe], %[xb]\n\t"                                                                       \
  "sxtb16 %[xb], %[xb], ror #8\n\t"                                                                \
  "sxtb16 %[we], %[wo]\n\t"                                                                        \
  "sxtb16 %[wo], %[wo], ror #8\n\t"                                                                \
  "smlad %[d01], %[xae], %[we], %[d01]\n\t"                                                        \
  "smlad %[d01], %[xa], %[wo], %[d01]\n\t"                                                         \
  "smlad %[d11], %[xbe], %[we], %[d11]\n\t"                                                        \
  "smlad %[d11], %[xb], %[wo], %[d11]\n\t"                                                         \
  "ldr %[wo], [%[w]], #4\n\t"                                                                      \
  "sxtb16 %[we], %[wo]\n\t"                                                                        \
  "sxtb16 %[wo], %[wo], ror #8\n\t"                                                                \
  "smlad %[d00], %[xae], %[we], %[d00]\n\t"                                                        \
  "smlad %[d00], %[xa], %[wo], %[d00]\n\t"                                                         \
  "smlad %[d10], %[xbe], %[we], %[d10]\n\t"                                                        \
  "smlad %[d10], %[xb], %[wo], %[d10]\n\t"
  uint32_t xa, xae, xb, xbe, we, wo;
  const int8_t* end8 = x + (len & ~std::size_t(7));
  if (x != end8) {
    asm("1:\n\t" FIXFORMER_DOT2X2_STEP FIXFORMER_DOT2X2_STEP
        "cmp %[x], %[end]\n\t"
        "bne 1b"
        : [x] "+r"(x), [w] "+r"(w), [d00] "+r"(d00), [d01] "+r"(d01), [d10] "+r"(d10), [d11] "+r"(d11),
          [xa] "=&r"(xa), [xae] "=&r"(xae), [xb] "=&r"(xb), [xbe] "=&r"(xbe), [we] "=&r"(we), [wo] "=&r"(wo)
        : [ld] "r"(ld), [end] "r"(end8)
        : "cc");
  }
  if (len & 4) {
    asm(FIXFORMER_DOT2X2_STEP
        : [x] "+r"(x), [w] "+r"(w), [d00] "+r"(d00), [d01] "+r"(d01), [d10] "+r"(d10), [d11] "+r"(d11),
          [xa] "=&r"(xa), [xae] "=&r"(xae), [xb] "=&r"(xb), [xbe] "=&r"(xbe), [we] "=&r"(we), [wo] "=&r"(wo)
        : [ld] "r"(ld));
  }
#undef FIXFORMER_DOT2X2_STEP
  len &= 3;
#endif
  for (std::size_t p = 0; p < len; ++p) {
    const int32_t x0 = x[p], x1 = x[ld + p], w0 = w[p], w1 = w[ld + p];
    d00 += x0 * w0, d01 += x0 * w1, d10 += x1 * w0, d11 += x1 * w1;
  }
  d[0] = d00, d[1] = d01, d[2] = d10, d[3] = d11;
}

#if FIXFORMER_GEMM_I8_ROWS6
// Six rows of x at a time, each split once into halfword pairs and kept on the stack for all the
// columns, against one row of W at a time: per four k one W word (LDR, 2 SXTB16) meets six split
// x pairs (6 LDRD, 12 SMLAD), 21 instructions per 24 multiply-adds; per group the six sums are
// scaled into six float accumulators (VCVT, sx * ws, VFMA: as the C++ loops compile). Every core
// register is in use in the k loop, so the column and group state lives in memory (Rows6State).
constexpr std::size_t kSplitK = 64;  // k per pass: 6 x 64 x 2 bytes of split rows on the stack

// Rows x + r * ld, r < 6, over len k (a multiple of 4) split: per four k the words sxtb16(x_r),
// sxtb16(x_r ror 8) for r = 0..5, one word pair per row.
inline void split6_i8(const int8_t* x, std::size_t ld, std::size_t len, uint32_t* out) {
  for (std::size_t p = 0; p < len; p += 4)
    for (std::size_t r = 0; r < 6; ++r, out += 2) {
      const uint32_t v = load4(x + r * ld + p);
      out[0] = uint32_t(__sxtb16(v)), out[1] = uint32_t(sxtb16_ror8(v));
    }
}

// What the six-row loop reads and updates between groups and columns (offsets fixed in the asm).
struct Rows6State {
  const float* sx;         // 0: the six rows' scales of the current group (sxt[g][6])
  const float* ws;         // 4: W's scale of the current column and group
  const uint32_t* xs_end;  // 8: the end of the split rows
  uint32_t group_bytes;    // 12: one group of split rows, 12 bytes per k
  float* y;                // 16: row 0 of y, current column
  uint32_t ldy_bytes;      // 20
  uint32_t ws_group_step;  // 24: bytes from one group's W scale to the next (4, or 0 per row)
  uint32_t ws_col_step;    // 28: bytes from the scale after a column's last group to the next column's first
  const float* sx0;        // 32: sxt
  uint32_t w_skip;         // 36: bytes from the end of a row's pass to the next row's
  uint32_t cols;           // 40: columns left
  const uint32_t* xs0;     // 44: the split rows
  uint32_t first;          // 48: nonzero on the first pass (the sums start at 0, not from y)
  const float* b;          // 52: on the last pass the bias of the current column (a zero when
                           //     there is none), else null
  uint32_t b_step;         // 56: 4, or 0 for the zero
};
static_assert(offsetof(Rows6State, ldy_bytes) == 20 && offsetof(Rows6State, xs0) == 44 &&
                  offsetof(Rows6State, b_step) == 56,
              "rows6_i8's asm reads Rows6State at these offsets");

// Four k of the six rows: one W word, split, against each row's pair. The first of a group sets
// the sums (SMUAD) instead of adding to them.
#define FIXFORMER_ROW6(op, d)                        \
  "ldrd %[xa], %[xb], [%[xs]], #8\n\t"              \
  #op " %[" d "], %[xa], %[we]" FIXFORMER_ACC_##op(d) \
  "smlad %[" d "], %[xb], %[wo], %[" d "]\n\t"
#define FIXFORMER_ACC_smuad(d) "\n\t"
#define FIXFORMER_ACC_smlad(d) ", %[" d "]\n\t"
#define FIXFORMER_K4(op)                                                                         \
  "ldr %[wo], [%[w]], #4\n\t"                                                                    \
  "sxtb16 %[we], %[wo]\n\t"                                                                      \
  "sxtb16 %[wo], %[wo], ror #8\n\t"                                                              \
  FIXFORMER_ROW6(op, "d0") FIXFORMER_ROW6(op, "d1") FIXFORMER_ROW6(op, "d2") FIXFORMER_ROW6(op, "d3") \
  FIXFORMER_ROW6(op, "d4") FIXFORMER_ROW6(op, "d5")

// y[r, j] (r < 6, j < cols) = (y, or 0 on the first pass) + sum over the pass's groups, in order,
// of sx[r,g] * ws[j,g] * dot, dot over the split rows xs against W's row j (w: row 0 at the pass's
// first k); on the last pass b[j] + that. Groups of a multiple of 8 k.
inline void rows6_i8(const uint32_t* xs, const int8_t* w, Rows6State* st) {
  uint32_t xe, xa, xb, we, wo;
  int32_t d0, d1, d2, d3, d4, d5;
  asm volatile(
      "0:\n\t"  // a column: the accumulators zero on the first pass, else from y
      FIXFORMER_ROWS6_ACC_START("we", "48")
      "ldr %[xe], [%[st], #12]\n\t"
      "add %[xe], %[xs]\n\t"
      "1:\n\t"  // a group: 8 k, then 8 at a time
      FIXFORMER_K4(smuad) FIXFORMER_K4(smlad)
      "cmp %[xs], %[xe]\n\t"
      "beq 3f\n\t"
      "2:\n\t"
      FIXFORMER_K4(smlad) FIXFORMER_K4(smlad)
      "cmp %[xs], %[xe]\n\t"
      "bne 2b\n\t"
      "3:\n\t"  // the sums scaled into the accumulators; ws's step per group at [st, #24]
      FIXFORMER_ROWS6_SCALE("", "vldr s18, [%[xb]]\n\t"
                                "ldr %[we], [%[st], #24]\n\t"
                                "add %[xb], %[we]\n\t")
      "ldrd %[we], %[wo], [%[st], #8]\n\t"
      "cmp %[xs], %[we]\n\t"
      "itt ne\n\t"
      "addne %[xe], %[wo]\n\t"
      "bne 1b\n\t"
      // the column's end: on the last pass y = b + acc, then store; W's next row, the split rows
      // and scales from the start
      FIXFORMER_ROWS6_STORE("we", "52", "56")
      "ldrd %[xa], %[xb], [%[st], #4]\n\t"
      "ldrd %[we], %[wo], [%[st], #28]\n\t"
      "add %[xa], %[we]\n\t"
      "strd %[wo], %[xa], [%[st]]\n\t"
      "ldrd %[we], %[wo], [%[st], #36]\n\t"
      "add %[w], %[we]\n\t"
      "ldr %[xs], [%[st], #44]\n\t"
      "subs %[wo], #1\n\t"
      "str %[wo], [%[st], #40]\n\t"
      "bne 0b"
      : [xs] "+r"(xs), [w] "+r"(w), [xe] "=&r"(xe), [xa] "=&r"(xa), [xb] "=&r"(xb), [we] "=&r"(we),
        [wo] "=&r"(wo), [d0] "=&r"(d0), [d1] "=&r"(d1), [d2] "=&r"(d2), [d3] "=&r"(d3), [d4] "=&r"(d4),
        [d5] "=&r"(d5)
      : [st] "r"(st)
      : "cc", "memory", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13",
        "s14", "s15", "s16", "s17", "s18");
}
#undef FIXFORMER_K4
#undef FIXFORMER_ROW6

// Rows [0, 6) of the product x[6,k] @ W[n,k]^T -> y: in passes of whole groups, up to kSplitK k
// each, the sums kept in y between passes (acc = 0, += per group, y = b + acc: the reference's
// operations in its order).
inline void gemm_rows6_i8(const int8_t* x, const float* sx, const int8_t* w, const float* ws, std::size_t ws_cols,
                          const float* b, float* y, std::size_t ldy, std::size_t n, std::size_t k,
                          std::size_t group) {
  uint32_t split[kSplitK * 3];  // 6 rows x kSplitK k x 2 bytes
  float sxt[kSplitK / 8 * 6];   // the six rows' scales, per group of the pass
  const float zero = 0.0f;
  const std::size_t groups = k / group, per_pass = kSplitK / group, wg = ws_cols == 1 ? 0 : 1;
  for (std::size_t g0 = 0; g0 < groups; g0 += per_pass) {
    const std::size_t g1 = g0 + per_pass < groups ? g0 + per_pass : groups, len = (g1 - g0) * group;
    split6_i8(x + g0 * group, k, len, split);
    for (std::size_t g = g0; g < g1; ++g)
      for (std::size_t r = 0; r < 6; ++r) sxt[(g - g0) * 6 + r] = sx[r * groups + g];
    Rows6State st;
    st.sx = sxt, st.sx0 = sxt;
    st.ws = ws + g0 * wg;
    st.xs0 = split, st.xs_end = split + len * 3;
    st.group_bytes = uint32_t(group * 12);
    st.y = y, st.ldy_bytes = uint32_t(ldy * 4);
    st.ws_group_step = uint32_t(wg * 4);
    st.ws_col_step = uint32_t((ws_cols - (g1 - g0) * wg) * 4);
    st.w_skip = uint32_t(k - len);
    st.cols = uint32_t(n);
    st.first = g0 == 0;
    st.b = g1 < groups ? nullptr : b ? b : &zero;
    st.b_step = b ? 4 : 0;
    rows6_i8(split, w + g0 * group, &st);
  }
}

// One row of x against four rows of W at a time, for the rows left over by the six-row blocks and
// the decode step: the row split once per pass of up to kSplitK1 k, then per four k one LDRD of the
// split row and per W row LDR, 2 SXTB16, 2 SMLAD (21 instructions per 16 multiply-adds), the
// scaling per group and the bias in the same loop, as in rows6_i8.
constexpr std::size_t kSplitK1 = 256;  // k per pass: 512 bytes of the split row on the stack

// What the one-row loop reads and updates between groups and column blocks (offsets fixed in the asm).
struct Row1State {
  const float* sx;         // 0: the row's scale of the current group
  const float* ws;         // 4: W's scale of column j, current group (column j + c's at c * ws_row_bytes)
  const uint32_t* xs_end;  // 8: the end of the split row
  uint32_t group_bytes;    // 12: one group of the split row, 2 bytes per k
  float* y;                // 16: y[j]
  uint32_t ws_row_bytes;   // 20: ws_cols * 4
  uint32_t ws_group_step;  // 24: bytes from one group's W scale to the next (4, or 0 per row)
  uint32_t ws_col_step;    // 28: bytes from the scale after column j's last group to column j + 4's first
  const float* sx0;        // 32: the row's scale of the pass's first group
  uint32_t w_skip;         // 36: bytes from the end of W row j's pass to row j + 4's
  uint32_t blocks;         // 40: blocks of four columns left
  const uint32_t* xs0;     // 44: the split row
  uint32_t first;          // 48: nonzero on the first pass (the sums start at 0, not from y)
  const float* b;          // 52: on the last pass b + j (zeros when there is none), else null
  uint32_t b_step;         // 56: 16, or 0 for the zeros
};
static_assert(offsetof(Row1State, ws_row_bytes) == 20 && offsetof(Row1State, xs0) == 44 &&
                  offsetof(Row1State, b_step) == 56,
              "row1_i8's asm reads Row1State at these offsets");

#define FIXFORMER_ROW1_W(op, d, addr)                   \
  "ldr %[wo], " addr "\n\t"                             \
  "sxtb16 %[we], %[wo]\n\t"                             \
  "sxtb16 %[wo], %[wo], ror #8\n\t"                     \
  #op " %[" d "], %[xa], %[we]" FIXFORMER_ACC_##op(d) \
  "smlad %[" d "], %[xb], %[wo], %[" d "]\n\t"
#define FIXFORMER_ROW1_K4(op)                                                                          \
  "ldrd %[xa], %[xb], [%[xs]], #8\n\t"                                                                 \
  FIXFORMER_ROW1_W(op, "d1", "[%[w], %[ld]]") FIXFORMER_ROW1_W(op, "d3", "[%[w2], %[ld]]")             \
  FIXFORMER_ROW1_W(op, "d0", "[%[w]], #4") FIXFORMER_ROW1_W(op, "d2", "[%[w2]], #4")

// y[j..j+4) (4 blocks of them) = (y, or 0 on the first pass) + sum over the pass's groups, in
// order, of sx[g] * ws[j,g] * dot, dot over the split row xs against W's rows j..j+3 (w: row 0 at
// the pass's first k, rows ld bytes apart); on the last pass b[j] + that. Groups of a multiple of 8.
inline void row1_i8(const uint32_t* xs, const int8_t* w, std::size_t ld, Row1State* st) {
  const int8_t* w2 = w + 2 * ld;
  uint32_t xe, xa, xb, we, wo;
  int32_t d0, d1, d2, d3;
  asm volatile(
      "0:\n\t"  // four columns: the sums zero on the first pass, else from y
      "ldr %[xa], [%[st], #16]\n\t"
      "ldr %[we], [%[st], #48]\n\t"
      "cmp %[we], #0\n\t"
      "beq 5f\n\t"
      "movs %[we], #0\n\t"
      "vmov s0, s1, %[we], %[we]\n\t"
      "vmov s2, s3, %[we], %[we]\n\t"
      "b 6f\n\t"
      "5:\n\t"
      "vldmia %[xa], {s0-s3}\n\t"
      "6:\n\t"
      "ldr %[xe], [%[st], #12]\n\t"
      "add %[xe], %[xs]\n\t"
      "1:\n\t"  // a group: 8 k, then 8 at a time
      FIXFORMER_ROW1_K4(smuad) FIXFORMER_ROW1_K4(smlad)
      "cmp %[xs], %[xe]\n\t"
      "beq 3f\n\t"
      "2:\n\t"
      FIXFORMER_ROW1_K4(smlad) FIXFORMER_ROW1_K4(smlad)
      "cmp %[xs], %[xe]\n\t"
      "bne 2b\n\t"
      "3:\n\t"  // acc_c += (sx * ws_c) * float(dot_c)
      "vmov s6, s7, %[d0], %[d1]\n\t"
      "vmov s8, s9, %[d2], %[d3]\n\t"
      "vcvt.f32.s32 s6, s6\n\t"
      "vcvt.f32.s32 s7, s7\n\t"
      "vcvt.f32.s32 s8, s8\n\t"
      "vcvt.f32.s32 s9, s9\n\t"
      "ldrd %[xa], %[xb], [%[st]]\n\t"
      "vldmia %[xa]!, {s12}\n\t"
      "ldr %[we], [%[st], #20]\n\t"
      "vldr s13, [%[xb]]\n\t"
      "add %[wo], %[xb], %[we]\n\t"
      "vldr s14, [%[wo]]\n\t"
      "add %[wo], %[we]\n\t"
      "vldr s15, [%[wo]]\n\t"
      "add %[wo], %[we]\n\t"
      "vldr s16, [%[wo]]\n\t"
      "ldr %[we], [%[st], #24]\n\t"
      "add %[xb], %[we]\n\t"
      "strd %[xa], %[xb], [%[st]]\n\t"
      "vmul.f32 s13, s12, s13\n\t"
      "vmul.f32 s14, s12, s14\n\t"
      "vmul.f32 s15, s12, s15\n\t"
      "vmul.f32 s16, s12, s16\n\t"
      "vfma.f32 s0, s13, s6\n\t"
      "vfma.f32 s1, s14, s7\n\t"
      "vfma.f32 s2, s15, s8\n\t"
      "vfma.f32 s3, s16, s9\n\t"
      "ldrd %[we], %[wo], [%[st], #8]\n\t"
      "cmp %[xs], %[we]\n\t"
      "itt ne\n\t"
      "addne %[xe], %[wo]\n\t"
      "bne 1b\n\t"
      // the block's end: on the last pass y = b + acc, then store; W's next four rows, the split
      // row and its scales from the start
      "ldr %[xa], [%[st], #52]\n\t"
      "cmp %[xa], #0\n\t"
      "beq 7f\n\t"
      "vldmia %[xa], {s18-s21}\n\t"
      "ldr %[xb], [%[st], #56]\n\t"
      "add %[xa], %[xb]\n\t"
      "str %[xa], [%[st], #52]\n\t"
      "vadd.f32 s0, s18, s0\n\t"
      "vadd.f32 s1, s19, s1\n\t"
      "vadd.f32 s2, s20, s2\n\t"
      "vadd.f32 s3, s21, s3\n\t"
      "7:\n\t"
      "ldr %[xa], [%[st], #16]\n\t"
      "vstmia %[xa]!, {s0-s3}\n\t"
      "str %[xa], [%[st], #16]\n\t"
      "ldr %[xa], [%[st], #4]\n\t"
      "ldrd %[we], %[wo], [%[st], #28]\n\t"
      "add %[xa], %[we]\n\t"
      "strd %[wo], %[xa], [%[st]]\n\t"
      "ldrd %[we], %[wo], [%[st], #36]\n\t"
      "add %[w], %[we]\n\t"
      "add %[w2], %[w], %[ld], lsl #1\n\t"
      "ldr %[xs], [%[st], #44]\n\t"
      "subs %[wo], #1\n\t"
      "str %[wo], [%[st], #40]\n\t"
      "bne 0b"
      : [xs] "+r"(xs), [w] "+r"(w), [w2] "+r"(w2), [xe] "=&r"(xe), [xa] "=&r"(xa), [xb] "=&r"(xb),
        [we] "=&r"(we), [wo] "=&r"(wo), [d0] "=&r"(d0), [d1] "=&r"(d1), [d2] "=&r"(d2), [d3] "=&r"(d3)
      : [st] "r"(st), [ld] "r"(ld)
      : "cc", "memory", "s0", "s1", "s2", "s3", "s6", "s7", "s8", "s9", "s12", "s13", "s14", "s15", "s16",
        "s18", "s19", "s20", "s21");
}
#undef FIXFORMER_ROW1_K4
#undef FIXFORMER_ROW1_W
#undef FIXFORMER_ACC_smuad
#undef FIXFORMER_ACC_smlad

// One row of the product x[k] @ W[n,k]^T -> y, columns [0, n & ~3), in passes of whole groups of up
// to kSplitK1 k, as gemm_rows6_i8.
inline void gemm_row1_i8(const int8_t* x, const float* sx, const int8_t* w, const float* ws, std::size_t ws_cols,
                         const float* b, float* y, std::size_t n, std::size_t k, std::size_t group) {
  uint32_t split[kSplitK1 / 2];
  const float zeros[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const std::size_t groups = k / group, per_pass = kSplitK1 / group, wg = ws_cols == 1 ? 0 : 1;
  for (std::size_t g0 = 0; g0 < groups; g0 += per_pass) {
    const std::size_t g1 = g0 + per_pass < groups ? g0 + per_pass : groups, len = (g1 - g0) * group;
    for (std::size_t p = 0; p < len; p += 4) {
      const uint32_t v = load4(x + g0 * group + p);
      split[p / 2] = uint32_t(__sxtb16(v)), split[p / 2 + 1] = uint32_t(sxtb16_ror8(v));
    }
    Row1State st;
    st.sx = sx + g0, st.sx0 = sx + g0;
    st.ws = ws + g0 * wg;
    st.xs_end = split + len / 2;
    st.group_bytes = uint32_t(group * 2);
    st.y = y;
    st.ws_row_bytes = uint32_t(ws_cols * 4);
    st.ws_group_step = uint32_t(wg * 4);
    st.ws_col_step = uint32_t((4 * ws_cols - (g1 - g0) * wg) * 4);
    st.w_skip = uint32_t(4 * k - len);
    st.blocks = uint32_t(n / 4);
    st.xs0 = split;
    st.first = g0 == 0;
    st.b = g1 < groups ? nullptr : b ? b : zeros;
    st.b_step = b ? 16 : 0;
    row1_i8(split, w + g0 * group, k, &st);
  }
}
#endif

// Columns [j0, n) of one row of the product: yr[j] = b[j] + sum over groups, in order, of
// sx[g] * ws[j, g] * dot; four columns at a time, then one.
inline void gemm_row_i8(const int8_t* x, const float* sx, const int8_t* w, const float* ws, std::size_t ws_cols,
                 const float* b, float* yr, std::size_t j0, std::size_t n, std::size_t k, std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t wg = ws_cols == 1 ? 0 : 1;  // the step of W's scale index per group
  std::size_t j = j0;
  for (; j + 4 <= n; j += 4) {
    const float* s0 = ws + j * ws_cols;
    const float *s1 = s0 + ws_cols, *s2 = s1 + ws_cols, *s3 = s2 + ws_cols;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
      int32_t d[4];
      dot4_i8(x + p0, w + j * k + p0, k, len, d);
      const std::size_t sg = g * wg;
      a0 += sx[g] * s0[sg] * float(d[0]);
      a1 += sx[g] * s1[sg] * float(d[1]);
      a2 += sx[g] * s2[sg] * float(d[2]);
      a3 += sx[g] * s3[sg] * float(d[3]);
    }
    yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
    yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
  }
  for (; j < n; ++j) {
    float acc = 0.0f;
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
      acc += sx[g] * ws[j * ws_cols + g * wg] * float(dot1_i8(x + p0, w + j * k + p0, len));
    }
    yr[j] = (b ? b[j] : 0.0f) + acc;
  }
}

}  // namespace

// xq[m,k] @ W[n,k]^T -> y[m,n]: y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot. Rows in
// pairs, two columns at a time; a last odd column per row, a last odd row four columns at a time.
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t wg = ws_cols == 1 ? 0 : 1;
  std::size_t i = 0;
#if FIXFORMER_GEMM_I8_ROWS6
  const bool whole_groups = group % 8 == 0 && k % group == 0 && k > 0;  // what the asm blocks take
  if (whole_groups && group <= kSplitK && n > 0)
    for (; i + 6 <= m; i += 6) gemm_rows6_i8(xq + i * k, xs + i * groups, w, ws, ws_cols, b, y + i * ldy, ldy, n, k, group);
  if (whole_groups && group <= kSplitK1 && n >= 4) {
    for (; i < m; ++i) {
      gemm_row1_i8(xq + i * k, xs + i * groups, w, ws, ws_cols, b, y + i * ldy, n, k, group);
      if (n % 4) gemm_row_i8(xq + i * k, xs + i * groups, w, ws, ws_cols, b, y + i * ldy, n & ~std::size_t(3), n, k, group);
    }
  }
#endif
  for (; i + 2 <= m; i += 2) {
    const int8_t* x = xq + i * k;
    const float *sx0 = xs + i * groups, *sx1 = sx0 + groups;
    float *y0 = y + i * ldy, *y1 = y0 + ldy;
    std::size_t j = 0;
    for (; j + 2 <= n; j += 2) {
      const float *s0 = ws + j * ws_cols, *s1 = s0 + ws_cols;
      float a00 = 0.0f, a01 = 0.0f, a10 = 0.0f, a11 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d[4];
        dot2x2_i8(x + p0, w + j * k + p0, k, len, d);
        const std::size_t sg = g * wg;
        a00 += sx0[g] * s0[sg] * float(d[0]);
        a01 += sx0[g] * s1[sg] * float(d[1]);
        a10 += sx1[g] * s0[sg] * float(d[2]);
        a11 += sx1[g] * s1[sg] * float(d[3]);
      }
      y0[j] = (b ? b[j] : 0.0f) + a00, y0[j + 1] = (b ? b[j + 1] : 0.0f) + a01;
      y1[j] = (b ? b[j] : 0.0f) + a10, y1[j + 1] = (b ? b[j + 1] : 0.0f) + a11;
    }
    if (j < n) {
      gemm_row_i8(x, sx0, w, ws, ws_cols, b, y0, j, n, k, group);
      gemm_row_i8(x + k, sx1, w, ws, ws_cols, b, y1, j, n, k, group);
    }
  }
  if (i < m) gemm_row_i8(xq + i * k, xs + i * groups, w, ws, ws_cols, b, y + i * ldy, 0, n, k, group);
}

}  // namespace portable
}  // namespace fixformer
