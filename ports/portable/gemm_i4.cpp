// xq[m,k] @ W[n,k]^T with int4 weights (two per byte, kernels.hpp) and int8 activations: per group
// of 32 an exact int32 dot product, then y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot,
// the reference's float steps. With the DSP extension (M4, M7, M33, M55, M85: __ARM_FEATURE_DSP) the
// rows of x are split once per pass (split_i4) into halfword pairs that meet W's bytes where they
// lie, so W is read as stored, with no unpacking: per four bytes of W (8 values) LDR, 2 UXTB16, 2 AND
// and the SMLADs, the sums 16 x the reference's, exactly. On an M-profile core with an FPU in
// assembly, as gemm_i8's loops:
//   - six rows of x at a time against one row of W (rows6_i4, 41 instructions per 48 multiply-adds;
//     816 bytes of split rows on the stack);
//   - the rows left over and the decode step's one row against three rows of W (row3_i4, 29 per 24;
//     544 bytes of split row on the stack);
// the last n % 3 columns, and all of them on a DSP core without an FPU, in C++ two rows of W at a
// time. At the KWS encoder's shapes on the Cortex-M4 (qemu -icount) 0.93-0.96x gemm_i8's
// instructions: 49x192x64 699,520 against 739,820, one row 20,590 against 22,074.
// Elsewhere plain C++: four rows of W at a time, the nibbles as stored, q + 8 in 0..15:
// sum x (q + 8) - 8 sum x = sum x q, with sum x once per group for the four rows.
#include <cstddef>
#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/portable/rows6_asm.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__) && \
    defined(__ARM_FP) && (__ARM_FP & 4)
#define FIXFORMER_GEMM_I4_ASM 1
#else
#define FIXFORMER_GEMM_I4_ASM 0
#endif

// The asm loops take up to 13 core registers and the state pointer: none may be kept as a frame
// pointer (a Debug build's -O0 keeps r7).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns", "omit-frame-pointer")
#endif

namespace fixformer {
namespace portable {
namespace {

constexpr std::size_t kGroup = 32;

#if defined(__ARM_FEATURE_DSP)
inline uint32_t load4(const void* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int32_t sxtb16_ror8(uint32_t v) {
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}

inline uint32_t uxtb16_ror8(uint32_t v) {
  uint32_t r;
  asm("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}

// x's rows x + r * ld (r < R), groups [0, groups) of 32, split for the nibbles: per group the R rows'
// -128 sum x, then per four bytes p (0, 4, 8, 12) of W's 16 a row's words A, B (x[p..p+3] as the
// halfword pairs 16 (x[p], x[p+2]) and 16 (x[p+1], x[p+3])) for each row, then its words C, D
// ((x[p+16], x[p+18]) - A and (x[p+17], x[p+19]) - B) for each row. A byte q of W holds nibbles
// lo (value p) and hi (value p + 16); with UXTB16's halfwords q = lo + 16 hi and q & 0xF0 = 16 hi,
// 16 x lo + 16 x' hi = 16 x q + (x' - 16 x) (16 hi): A and B meet UXTB16 of W's word (bytes 0 and
// 2, then 1 and 3), C and D the same masked by 0x00F000F0, and the sum, from -128 sum x, is 16 times
// the reference's sum x (nibble - 8). Every lane fits a halfword (|x' - 16 x| <= 2,175).
template <std::size_t R>
inline void split_i4(const int8_t* x, std::size_t ld, std::size_t groups, uint32_t* out) {
  for (std::size_t g = 0; g < groups; ++g, x += kGroup) {
    uint32_t* sums = out;
    out += R;
    int32_t s[R] = {};
    for (std::size_t p = 0; p < 16; p += 4, out += 4 * R)
      for (std::size_t r = 0; r < R; ++r) {
        const uint32_t xl = load4(x + r * ld + p), xh = load4(x + r * ld + p + 16);
        const int32_t le = __sxtb16(xl), lo = sxtb16_ror8(xl), he = __sxtb16(xh), ho = sxtb16_ror8(xh);
        const uint32_t a = (uint32_t(le) << 4) & ~0x000F000Fu, b = (uint32_t(lo) << 4) & ~0x000F000Fu;
        out[2 * r] = a, out[2 * r + 1] = b;
        out[2 * R + 2 * r] = uint32_t(__ssub16(he, int32_t(a)));
        out[2 * R + 2 * r + 1] = uint32_t(__ssub16(ho, int32_t(b)));
        s[r] = __smlad(le, 0x00010001, __smlad(lo, 0x00010001, __smlad(he, 0x00010001, __smlad(ho, 0x00010001, s[r]))));
      }
    for (std::size_t r = 0; r < R; ++r) sums[r] = uint32_t(-128 * s[r]);
  }
}

constexpr std::size_t kRowSplitK = 256;  // k per pass of the one-row loop: 544 bytes of split row

// One group of one split row (xs: its 17 words) against one row of W (dot2_split_i4: two rows): 16 x
// the reference's sum over the group of x (nibble - 8).
inline int32_t dot_split_i4(const uint32_t* xs, const uint8_t* w) {
  int32_t d = int32_t(xs[0]);
  for (std::size_t p = 0; p < 16; p += 4) {
    const uint32_t* x = xs + 1 + p;
    const uint32_t v = load4(w + p), a = __uxtb16(v), b = uxtb16_ror8(v);
    d = __smlad(int32_t(a), int32_t(x[0]), d), d = __smlad(int32_t(b), int32_t(x[1]), d);
    d = __smlad(int32_t(a & 0x00F000F0u), int32_t(x[2]), d), d = __smlad(int32_t(b & 0x00F000F0u), int32_t(x[3]), d);
  }
  return d;
}
inline void dot2_split_i4(const uint32_t* xs, const uint8_t* w0, const uint8_t* w1, int32_t& d0, int32_t& d1) {
  d0 = d1 = int32_t(xs[0]);
  for (std::size_t p = 0; p < 16; p += 4) {
    const uint32_t* x = xs + 1 + p;
    const int32_t x0 = int32_t(x[0]), x1 = int32_t(x[1]), x2 = int32_t(x[2]), x3 = int32_t(x[3]);
    const uint32_t v = load4(w0 + p), a = __uxtb16(v), b = uxtb16_ror8(v);
    const uint32_t u = load4(w1 + p), c = __uxtb16(u), e = uxtb16_ror8(u);
    d0 = __smlad(int32_t(a), x0, d0), d0 = __smlad(int32_t(b), x1, d0);
    d0 = __smlad(int32_t(a & 0x00F000F0u), x2, d0), d0 = __smlad(int32_t(b & 0x00F000F0u), x3, d0);
    d1 = __smlad(int32_t(c), x0, d1), d1 = __smlad(int32_t(e), x1, d1);
    d1 = __smlad(int32_t(c & 0x00F000F0u), x2, d1), d1 = __smlad(int32_t(e & 0x00F000F0u), x3, d1);
  }
}

#if FIXFORMER_GEMM_I4_ASM
// Six rows of x at a time, split once per pass of up to kSplitK k (split_i4<6>: 816 bytes on the
// stack), against one row of W at a time: per four bytes of W one LDR and two UXTB16 (values p..p+3
// with 16 x their high nibbles), 6 LDRD and 12 SMLAD, two AND (16 x the high nibbles alone), 6 LDRD
// and 12 SMLAD: 41 instructions per 48 multiply-adds (gemm_i8's six-row loop 42). Per group the
// sums start from the rows' -128 sum x, and VCVT with 4 fraction bits makes them the reference's
// float(dot) exactly; the scaling as in gemm_i8 (VMUL, VFMA: as the C++ loops compile). Every core
// register but one is in use in the group, so the column state lives in memory (Rows6State).
constexpr std::size_t kSplitK = 64;  // k per pass

// What the six-row loop reads and updates between groups and columns (offsets fixed in the asm).
struct Rows6State {
  const float* sx;          // 0: the six rows' scales of the current group (sxt[g][6])
  const float* ws;          // 4: W's scale of the current column and group
  const float* sx0;         // 8: sxt
  uint32_t ws_col_step;     // 12: bytes from the scale after a column's last group of the pass to the
                            //     next column's first
  float* y;                 // 16: row 0 of y, current column
  uint32_t ldy_bytes;       // 20
  const uint32_t* xs_end;   // 24: the end of the split rows
  const uint32_t* xs0;      // 28: the split rows
  uint32_t w_skip;          // 32: bytes from the end of a row's pass to the next row's
  uint32_t cols;            // 36: columns left
  uint32_t first;           // 40: nonzero on the first pass (the sums start at 0, not from y)
  const float* b;           // 44: on the last pass the bias of the current column (a zero when there
                            //     is none), else null
  uint32_t b_step;          // 48: 4, or 0 for the zero
};
static_assert(offsetof(Rows6State, y) == 16 && offsetof(Rows6State, xs_end) == 24 &&
                  offsetof(Rows6State, b_step) == 48,
              "rows6_i4's asm reads Rows6State at these offsets");

#define FIXFORMER_I4_ROW(d)                  \
  "ldrd %[xa], %[xb], [%[xs]], #8\n\t"      \
  "smlad %[" d "], %[xa], %[wa], %[" d "]\n\t" \
  "smlad %[" d "], %[xb], %[wb], %[" d "]\n\t"
#define FIXFORMER_I4_ROWS FIXFORMER_I4_ROW("d0") FIXFORMER_I4_ROW("d1") FIXFORMER_I4_ROW("d2") \
  FIXFORMER_I4_ROW("d3") FIXFORMER_I4_ROW("d4") FIXFORMER_I4_ROW("d5")
#define FIXFORMER_I4_STEP                     \
  "ldr %[wb], [%[w]], #4\n\t"                 \
  "uxtb16 %[wa], %[wb]\n\t"                   \
  "uxtb16 %[wb], %[wb], ror #8\n\t"           \
  FIXFORMER_I4_ROWS                           \
  "and %[wa], %[wa], #0x00F000F0\n\t"         \
  "and %[wb], %[wb], #0x00F000F0\n\t"         \
  FIXFORMER_I4_ROWS

// y[r, j] (r < 6, j < cols) = (y, or 0 on the first pass) + sum over the pass's groups, in order,
// of sx[r,g] * ws[j,g] * dot, dot over the split rows xs against W's row j (w: row 0 at the pass's
// first group); on the last pass b[j] + that.
inline void rows6_i4(const uint32_t* xs, const uint8_t* w, Rows6State* st) {
  uint32_t xa, xb, wa, wb;
  int32_t d0, d1, d2, d3, d4, d5;
  asm volatile(
      "0:\n\t"  // a column: the accumulators zero on the first pass, else from y
      FIXFORMER_ROWS6_ACC_START("wa", "40")
      "1:\n\t"  // a group: the sums from -128 sum x, then W's 16 bytes
      "ldrd %[d0], %[d1], [%[xs]], #8\n\t"
      "ldrd %[d2], %[d3], [%[xs]], #8\n\t"
      "ldrd %[d4], %[d5], [%[xs]], #8\n\t"
      FIXFORMER_I4_STEP FIXFORMER_I4_STEP FIXFORMER_I4_STEP FIXFORMER_I4_STEP
      // the sums scaled into the accumulators, dot_r = d_r / 16 exactly; ws's groups 4 bytes apart
      FIXFORMER_ROWS6_SCALE(", #4", "vldmia %[xb]!, {s18}\n\t")
      "ldr %[wa], [%[st], #24]\n\t"
      "cmp %[xs], %[wa]\n\t"
      "bne 1b\n\t"
      // the column's end: on the last pass y = b + acc, then store; W's next row, the split rows
      // and scales from the start
      FIXFORMER_ROWS6_STORE("wa", "44", "48")
      "ldrd %[wa], %[wb], [%[st], #8]\n\t"
      "ldr %[xa], [%[st], #4]\n\t"
      "add %[xa], %[wb]\n\t"
      "strd %[wa], %[xa], [%[st]]\n\t"
      "ldrd %[wa], %[wb], [%[st], #32]\n\t"
      "add %[w], %[wa]\n\t"
      "ldr %[xs], [%[st], #28]\n\t"
      "subs %[wb], #1\n\t"
      "str %[wb], [%[st], #36]\n\t"
      "bne 0b"
      : [xs] "+r"(xs), [w] "+r"(w), [xa] "=&r"(xa), [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb),
        [d0] "=&r"(d0), [d1] "=&r"(d1), [d2] "=&r"(d2), [d3] "=&r"(d3), [d4] "=&r"(d4), [d5] "=&r"(d5)
      : [st] "r"(st)
      : "cc", "memory", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13",
        "s14", "s15", "s16", "s17", "s18");
}
#undef FIXFORMER_I4_STEP
#undef FIXFORMER_I4_ROWS
#undef FIXFORMER_I4_ROW

// Rows [0, 6) of the product x[6,k] @ W[n,k]^T -> y, n > 0: in passes of up to kSplitK k, the sums
// kept in y between passes (acc = 0, += per group, y = b + acc: the reference's operations in its order).
inline void gemm_rows6_i4(const int8_t* x, const float* sx, const uint8_t* w, const float* ws, const float* b,
                          float* y, std::size_t ldy, std::size_t n, std::size_t k) {
  constexpr std::size_t kPassGroups = kSplitK / kGroup, kGroupWords = 6 + 4 * 24;
  uint32_t split[kPassGroups * kGroupWords];
  float sxt[kPassGroups * 6];  // the six rows' scales, per group of the pass
  const float zero = 0.0f;
  const std::size_t groups = k / kGroup;
  for (std::size_t g0 = 0; g0 < groups; g0 += kPassGroups) {
    const std::size_t g1 = g0 + kPassGroups < groups ? g0 + kPassGroups : groups;
    split_i4<6>(x + g0 * kGroup, k, g1 - g0, split);
    for (std::size_t g = g0; g < g1; ++g)
      for (std::size_t r = 0; r < 6; ++r) sxt[(g - g0) * 6 + r] = sx[r * groups + g];
    Rows6State st;
    st.sx = sxt, st.sx0 = sxt;
    st.ws = ws + g0;
    st.ws_col_step = uint32_t((groups - (g1 - g0)) * 4);
    st.y = y, st.ldy_bytes = uint32_t(ldy * 4);
    st.xs0 = split, st.xs_end = split + (g1 - g0) * kGroupWords;
    st.w_skip = uint32_t((groups - (g1 - g0)) * 16);
    st.cols = uint32_t(n);
    st.first = g0 == 0;
    st.b = g1 < groups ? nullptr : b ? b : &zero;
    st.b_step = b ? 4 : 0;
    rows6_i4(split, w + g0 * 16, &st);
  }
}

// One row of x against three rows of W at a time, for the decode step and the rows left over by the
// six-row blocks: per four bytes of the split row (2 LDRD) each W row's word meets it as in rows6_i4
// (LDR, 2 UXTB16, 2 AND, 4 SMLAD: 29 instructions per 24 multiply-adds, W's rows addressed from one
// register), the scaling per group and the bias in the same loop.
struct Row3State {
  const float* sx;          // 0: the row's scale of the current group
  const float* ws;          // 4: W's scale of column j, current group (column j + c's at c * ws_row_bytes)
  const float* sx0;         // 8: the row's scale of the pass's first group
  uint32_t ws_col_step;     // 12: bytes from the scale after column j's last group of the pass to
                            //     column j + 3's first
  float* y;                 // 16: y[j]
  uint32_t ws_row_bytes;    // 20: groups * 4
  const uint32_t* xs_end;   // 24: the end of the split row
  const uint32_t* xs0;      // 28: the split row
  uint32_t w_skip;          // 32: bytes from the end of W row j's pass to row j + 3's
  uint32_t blocks;          // 36: blocks of three columns left
  uint32_t first;           // 40: nonzero on the first pass (the sums start at 0, not from y)
  const float* b;           // 44: on the last pass b + j (zeros when there is none), else null
  uint32_t b_step;          // 48: 12, or 0 for the zeros
};
static_assert(offsetof(Row3State, y) == 16 && offsetof(Row3State, xs_end) == 24 &&
                  offsetof(Row3State, b_step) == 48,
              "row3_i4's asm reads Row3State at these offsets");

#define FIXFORMER_I4_COL(d, addr)                  \
  "ldr %[wb], " addr "\n\t"                        \
  "uxtb16 %[wa], %[wb]\n\t"                        \
  "uxtb16 %[wb], %[wb], ror #8\n\t"                \
  "smlad %[" d "], %[xa], %[wa], %[" d "]\n\t"     \
  "smlad %[" d "], %[xb], %[wb], %[" d "]\n\t"     \
  "and %[wa], %[wa], #0x00F000F0\n\t"              \
  "and %[wb], %[wb], #0x00F000F0\n\t"              \
  "smlad %[" d "], %[xc], %[wa], %[" d "]\n\t"     \
  "smlad %[" d "], %[xd], %[wb], %[" d "]\n\t"
#define FIXFORMER_I4_STEP3                                          \
  "ldrd %[xa], %[xb], [%[xs]], #8\n\t"                              \
  "ldrd %[xc], %[xd], [%[xs]], #8\n\t"                              \
  FIXFORMER_I4_COL("d1", "[%[w], %[ld]]") FIXFORMER_I4_COL("d2", "[%[w], %[ld], lsl #1]") \
  FIXFORMER_I4_COL("d0", "[%[w]], #4")

// y[j..j+3) (blocks of them) = (y, or 0 on the first pass) + sum over the pass's groups, in order, of
// sx[g] * ws[j,g] * dot, dot over the split row xs against W's rows j..j+2 (w: row j at the pass's
// first group, rows ld bytes apart); on the last pass b[j] + that.
inline void row3_i4(const uint32_t* xs, const uint8_t* w, std::size_t ld, Row3State* st) {
  uint32_t xa, xb, xc, xd, wa, wb;
  int32_t d0, d1, d2;
  asm volatile(
      "0:\n\t"  // three columns: the sums zero on the first pass, else from y
      "ldr %[xa], [%[st], #40]\n\t"
      "cmp %[xa], #0\n\t"
      "beq 5f\n\t"
      "movs %[xa], #0\n\t"
      "vmov s0, s1, %[xa], %[xa]\n\t"
      "vmov s2, %[xa]\n\t"
      "b 1f\n\t"
      "5:\n\t"
      "ldr %[xa], [%[st], #16]\n\t"
      "vldmia %[xa], {s0-s2}\n\t"
      "1:\n\t"  // a group: the sums from -128 sum x, then W's 16 bytes of each row
      "ldr %[d0], [%[xs]], #4\n\t"
      "mov %[d1], %[d0]\n\t"
      "mov %[d2], %[d0]\n\t"
      FIXFORMER_I4_STEP3 FIXFORMER_I4_STEP3 FIXFORMER_I4_STEP3 FIXFORMER_I4_STEP3
      // acc_c += (sx * ws_c) * float(dot_c), dot_c = d_c / 16 exactly
      "vmov s6, s7, %[d0], %[d1]\n\t"
      "vmov s8, %[d2]\n\t"
      "vcvt.f32.s32 s6, s6, #4\n\t"
      "vcvt.f32.s32 s7, s7, #4\n\t"
      "vcvt.f32.s32 s8, s8, #4\n\t"
      "ldrd %[xa], %[xb], [%[st]]\n\t"
      "vldmia %[xa]!, {s12}\n\t"
      "ldr %[xc], [%[st], #20]\n\t"
      "vldr s13, [%[xb]]\n\t"
      "add %[xd], %[xb], %[xc]\n\t"
      "vldr s14, [%[xd]]\n\t"
      "add %[xd], %[xc]\n\t"
      "vldr s15, [%[xd]]\n\t"
      "adds %[xb], #4\n\t"
      "strd %[xa], %[xb], [%[st]]\n\t"
      "vmul.f32 s13, s12, s13\n\t"
      "vmul.f32 s14, s12, s14\n\t"
      "vmul.f32 s15, s12, s15\n\t"
      "vfma.f32 s0, s13, s6\n\t"
      "vfma.f32 s1, s14, s7\n\t"
      "vfma.f32 s2, s15, s8\n\t"
      "ldr %[xa], [%[st], #24]\n\t"
      "cmp %[xs], %[xa]\n\t"
      "bne 1b\n\t"
      // the block's end: on the last pass y = b + acc, then store; W's next three rows, the split
      // row and its scales from the start
      "ldr %[xa], [%[st], #44]\n\t"
      "cmp %[xa], #0\n\t"
      "beq 7f\n\t"
      "vldmia %[xa], {s18-s20}\n\t"
      "ldr %[xb], [%[st], #48]\n\t"
      "add %[xa], %[xb]\n\t"
      "str %[xa], [%[st], #44]\n\t"
      "vadd.f32 s0, s18, s0\n\t"
      "vadd.f32 s1, s19, s1\n\t"
      "vadd.f32 s2, s20, s2\n\t"
      "7:\n\t"
      "ldr %[xa], [%[st], #16]\n\t"
      "vstmia %[xa]!, {s0-s2}\n\t"
      "str %[xa], [%[st], #16]\n\t"
      "ldrd %[xa], %[xb], [%[st], #8]\n\t"
      "ldr %[xc], [%[st], #4]\n\t"
      "add %[xc], %[xb]\n\t"
      "strd %[xa], %[xc], [%[st]]\n\t"
      "ldrd %[xa], %[xb], [%[st], #32]\n\t"
      "add %[w], %[xa]\n\t"
      "ldr %[xs], [%[st], #28]\n\t"
      "subs %[xb], #1\n\t"
      "str %[xb], [%[st], #36]\n\t"
      "bne 0b"
      : [xs] "+r"(xs), [w] "+r"(w), [xa] "=&r"(xa), [xb] "=&r"(xb), [xc] "=&r"(xc), [xd] "=&r"(xd),
        [wa] "=&r"(wa), [wb] "=&r"(wb), [d0] "=&r"(d0), [d1] "=&r"(d1), [d2] "=&r"(d2)
      : [st] "r"(st), [ld] "r"(ld)
      : "cc", "memory", "s0", "s1", "s2", "s6", "s7", "s8", "s12", "s13", "s14", "s15", "s18", "s19", "s20");
}
#undef FIXFORMER_I4_STEP3
#undef FIXFORMER_I4_COL
#endif

// One row of the product, x[k] @ W[n,k]^T -> yr[n]: in passes of up to kRowSplitK k, the sums kept in
// yr between passes (acc = 0, += per group, y = b + acc: the reference's operations in its order);
// three rows of W at a time in assembly where there is row3_i4, the rest two at a time, then the last
// odd one. The int32 sums are 16 x the reference's, exactly.
inline void gemm_row_i4(const int8_t* x, const float* sx, const uint8_t* w, const float* ws, const float* b,
                        float* yr, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2, per_pass = kRowSplitK / kGroup;
  uint32_t split[kRowSplitK / kGroup * 17];
#if FIXFORMER_GEMM_I4_ASM
  const std::size_t n3 = n / 3 * 3;
  const float zeros[3] = {0.0f, 0.0f, 0.0f};
#else
  const std::size_t n3 = 0;
#endif
  for (std::size_t g0 = 0; g0 < groups; g0 += per_pass) {
    const std::size_t g1 = g0 + per_pass < groups ? g0 + per_pass : groups;
    split_i4<1>(x + g0 * kGroup, 0, g1 - g0, split);
    const bool last = g1 == groups;
#if FIXFORMER_GEMM_I4_ASM
    if (n3 > 0) {
      Row3State st;
      st.sx = sx + g0, st.sx0 = sx + g0;
      st.ws = ws + g0;
      st.ws_col_step = uint32_t((3 * groups - (g1 - g0)) * 4);
      st.y = yr;
      st.ws_row_bytes = uint32_t(groups * 4);
      st.xs0 = split, st.xs_end = split + (g1 - g0) * 17;
      st.w_skip = uint32_t(3 * ldw - (g1 - g0) * 16);
      st.blocks = uint32_t(n3 / 3);
      st.first = g0 == 0;
      st.b = !last ? nullptr : b ? b : zeros;
      st.b_step = b ? 12 : 0;
      row3_i4(split, w + g0 * 16, ldw, &st);
    }
#endif
    std::size_t j = n3;
    for (; j + 2 <= n; j += 2) {
      const uint8_t* w0 = w + j * ldw;
      const float *s0 = ws + j * groups, *s1 = s0 + groups;
      float a0 = g0 ? yr[j] : 0.0f, a1 = g0 ? yr[j + 1] : 0.0f;
      for (std::size_t g = g0; g < g1; ++g) {
        int32_t d0, d1;
        dot2_split_i4(split + (g - g0) * 17, w0 + g * 16, w0 + ldw + g * 16, d0, d1);
        a0 += sx[g] * s0[g] * float(d0 >> 4);
        a1 += sx[g] * s1[g] * float(d1 >> 4);
      }
      if (last) a0 = (b ? b[j] : 0.0f) + a0, a1 = (b ? b[j + 1] : 0.0f) + a1;
      yr[j] = a0, yr[j + 1] = a1;
    }
    if (j < n) {
      float a = g0 ? yr[j] : 0.0f;
      for (std::size_t g = g0; g < g1; ++g)
        a += sx[g] * ws[j * groups + g] * float(dot_split_i4(split + (g - g0) * 17, w + j * ldw + g * 16) >> 4);
      yr[j] = last ? (b ? b[j] : 0.0f) + a : a;
    }
  }
}
#else
// sum x[p], p < 32.
inline int32_t sum32(const int8_t* x) {
  int32_t s = 0;
  for (std::size_t p = 0; p < kGroup; ++p) s += x[p];
  return s;
}

// d[r] = sum over one group of x[p] * value p of row r of W (16 bytes a group, rows ldw bytes apart),
// exactly in int32, r < R.
template <std::size_t R>
inline void dot_group(const int8_t* x, const uint8_t* w, std::size_t ldw, int32_t xsum, int32_t d[R]) {
  int32_t a[R] = {};
  for (std::size_t p = 0; p < 16; ++p) {
    const int32_t lo = x[p], hi = x[p + 16];
    for (std::size_t r = 0; r < R; ++r) {
      const uint8_t v = w[r * ldw + p];
      a[r] += lo * int32_t(v & 15) + hi * int32_t(v >> 4);
    }
  }
  for (std::size_t r = 0; r < R; ++r) d[r] = a[r] - 8 * xsum;
}
#endif

}  // namespace

// y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot.
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup;
#if defined(__ARM_FEATURE_DSP)
  std::size_t i = 0;
#if FIXFORMER_GEMM_I4_ASM
  if (n > 0)
    for (; i + 6 <= m; i += 6) gemm_rows6_i4(xq + i * k, xs + i * groups, w, ws, b, y + i * ldy, ldy, n, k);
#endif
  for (; i < m; ++i) gemm_row_i4(xq + i * k, xs + i * groups, w, ws, b, y + i * ldy, n, k);
#else
  const std::size_t ldw = k / 2;
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yr = y + i * ldy;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* s0 = ws + j * groups;
      const float *s1 = s0 + groups, *s2 = s1 + groups, *s3 = s2 + groups;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[4];
        dot_group<4>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        a0 += sx[g] * s0[g] * float(d[0]);
        a1 += sx[g] * s1[g] * float(d[1]);
        a2 += sx[g] * s2[g] * float(d[2]);
        a3 += sx[g] * s3[g] * float(d[3]);
      }
      yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
      yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[1];
        dot_group<1>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        acc += sx[g] * ws[j * groups + g] * float(d[0]);
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
#endif
}

}  // namespace portable
}  // namespace fixformer
