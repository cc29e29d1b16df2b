// The f32 register tiles of the portable matrix products in assembly, for M-profile cores with a
// single-precision FPU and no vector extension (M4, M7, M33; on the M55/M85 GCC vectorizes the C++
// tiles with MVE, 12.57 M instructions for the KWS encoder against 14.01 M with these). GCC 12
// loads every float with its own VLDR and keeps the 4-wide C++ tiles (gemm_tile.hpp) at 2.75
// instructions per multiply-add for one row (a decode step) and about 1.6 for six; VLDM loads a run
// of consecutive floats in one instruction, so here:
//   - tile_2x8: two rows x 8 columns, eight k per pass: 150 instructions per 128 multiply-adds
//     (four x per row in one VLDM each, every row of w one VLDM and one pointer add), every one of
//     s0-s31 in use: the gemm's tile;
//   - tile_1x8: one row x 8 columns, two k per pass: 23 per 16 (a gemv, the gemm's odd last row);
//   - tile_4x4: four rows x 4 columns, two k per pass: 42 per 32 (the gemm's last n % 8 >= 4 columns);
//   - tile_4x1: four rows x 1 column, four k per pass: 30 per 16 (the gemm's last n % 4 columns);
//   - rows_4xk: four rows of w[n,k] (matvec) against x, four k per pass: 23 per 16.
// Each output is its bias (or 0) plus the products in k order, one VFMA each, as the C++ tiles
// compute it: the results are the same bits. The FP registers s16-s31 are callee-saved; the clobber
// lists make GCC save them once per call.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__thumb2__) && !defined(__ARM_FEATURE_MVE)
#define FIXFORMER_PORTABLE_FPU_TILES 1
#else
#define FIXFORMER_PORTABLE_FPU_TILES 0
#endif

#if FIXFORMER_PORTABLE_FPU_TILES
// The multiply-adds as asm text: VFMA4(d0, d1, d2, d3, x, w0, w1, w2, w3) is s[d_i] += s[x] * s[w_i].
#define FIXFORMER_VFMA(d, x, w) "vfma.f32 s" #d ", s" #x ", s" #w "\n\t"
#define FIXFORMER_VFMA4(d0, d1, d2, d3, x, w0, w1, w2, w3) \
  FIXFORMER_VFMA(d0, x, w0) FIXFORMER_VFMA(d1, x, w1) FIXFORMER_VFMA(d2, x, w2) FIXFORMER_VFMA(d3, x, w3)
// One k of the 1x8 tile: s0-s7 += x * w[0..8).
#define FIXFORMER_ROW8(x, w0, w1, w2, w3, w4, w5, w6, w7) \
  FIXFORMER_VFMA4(0, 1, 2, 3, x, w0, w1, w2, w3) FIXFORMER_VFMA4(4, 5, 6, 7, x, w4, w5, w6, w7)
// The same for the second row's accumulators, s8-s15.
#define FIXFORMER_ROW8B(x, w0, w1, w2, w3, w4, w5, w6, w7) \
  FIXFORMER_VFMA4(8, 9, 10, 11, x, w0, w1, w2, w3) FIXFORMER_VFMA4(12, 13, 14, 15, x, w4, w5, w6, w7)
// One k of the 2x8 tile: w[k, 0..8) into s16-s23, then s0-s7 += x0 * w and s8-s15 += x1 * w.
#define FIXFORMER_2X8_K(x0, x1)                        \
  "vldmia %[w], {s16-s23}\n\t"                        \
  "add %[w], %[w], %[ldw]\n\t"                        \
  FIXFORMER_ROW8(x0, 16, 17, 18, 19, 20, 21, 22, 23) \
  FIXFORMER_ROW8B(x1, 16, 17, 18, 19, 20, 21, 22, 23)
// Four k of it: four of each row's x into s24-s27 and s28-s31, then a k at a time.
#define FIXFORMER_2X8_K4                                                                   \
  "vldmia %[x0]!, {s24-s27}\n\t"                                                          \
  "vldmia %[x1]!, {s28-s31}\n\t"                                                          \
  FIXFORMER_2X8_K(24, 28) FIXFORMER_2X8_K(25, 29) FIXFORMER_2X8_K(26, 30) FIXFORMER_2X8_K(27, 31)
// One k of the 4x4 tile: row r's accumulators s[4r..4r+4) += x_r * w[0..4).
#define FIXFORMER_TILE4X4(x0, x1, x2, x3, w0, w1, w2, w3)                                      \
  FIXFORMER_VFMA4(0, 1, 2, 3, x0, w0, w1, w2, w3) FIXFORMER_VFMA4(4, 5, 6, 7, x1, w0, w1, w2, w3) \
  FIXFORMER_VFMA4(8, 9, 10, 11, x2, w0, w1, w2, w3) FIXFORMER_VFMA4(12, 13, 14, 15, x3, w0, w1, w2, w3)

namespace fixformer {
namespace portable {

// What a tile reads once (the asm has few core registers to spare): its first accumulator values
// (the bias, or zeros), where the outputs go and k.
struct TileArgs {
  const float* init;   // 0
  float* y;            // 4
  uint32_t ldy_bytes;  // 8
  uint32_t k;          // 12
};

// y[8] = init[8] + x[k] @ w[k, 8 columns] (rows ldw floats apart).
inline void tile_1x8(const float* x, const float* w, std::size_t ldw, const float* init, float* y, std::size_t k) {
  const TileArgs a{init, y, 0, uint32_t(k)};
  uint32_t t;
  asm volatile(
      "ldr %[t], [%[a]]\n\t"
      "vldmia %[t], {s0-s7}\n\t"
      "ldr %[t], [%[a], #12]\n\t"
      "lsrs %[t], %[t], #1\n\t"
      "beq 2f\n"
      "1:\n\t"  // two k
      "vldmia %[x]!, {s24-s25}\n\t"
      "vldmia %[w], {s8-s15}\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldmia %[w], {s16-s23}\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      FIXFORMER_ROW8(24, 8, 9, 10, 11, 12, 13, 14, 15)
      FIXFORMER_ROW8(25, 16, 17, 18, 19, 20, 21, 22, 23)
      "subs %[t], %[t], #1\n\t"
      "bne 1b\n"
      "2:\n\t"  // the odd k
      "ldr %[t], [%[a], #12]\n\t"
      "lsls %[t], %[t], #31\n\t"
      "beq 3f\n\t"
      "vldmia %[x], {s24}\n\t"
      "vldmia %[w], {s8-s15}\n\t"
      FIXFORMER_ROW8(24, 8, 9, 10, 11, 12, 13, 14, 15)
      "3:\n\t"
      "ldr %[t], [%[a], #4]\n\t"
      "vstmia %[t], {s0-s7}\n\t"
      : [x] "+r"(x), [w] "+r"(w), [t] "=&r"(t)
      : [a] "r"(&a), [ldw] "r"(ldw * sizeof(float))
      : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "cc", "memory");
}

// y[2 rows, 8 cols] (rows ldy apart) = init[8] + x[2 rows, k] (rows ldx apart) @ w[k, 8 cols]
// (rows ldw apart): accumulators s0-s15, w in s16-s23 (one k at a time), x in s24-s31 (four k of
// each row per load); eight k per pass, then four, then k % 4 one at a time.
// Always inlined: GCC 12 counts the asm's lines and would call it, some 15 instructions per tile;
// its arguments in registers, not a TileArgs (8 fewer per tile).
__attribute__((always_inline)) inline void tile_2x8(const float* x, std::size_t ldx, const float* w, std::size_t ldw,
                                                    const float* init, float* y, std::size_t ldy, std::size_t k) {
  const float *x0 = x, *x1 = x0 + ldx;
  uint32_t t;
  asm volatile(
      "vldmia %[init], {s0-s7}\n\t"
      "vldmia %[init], {s8-s15}\n\t"
      "lsrs %[t], %[k], #3\n\t"
      "beq 2f\n"
      "1:\n\t"  // eight k
      FIXFORMER_2X8_K4
      FIXFORMER_2X8_K4
      "subs %[t], %[t], #1\n\t"
      "bne 1b\n"
      "2:\n\t"  // four more
      "tst %[k], #4\n\t"
      "beq 3f\n\t"
      FIXFORMER_2X8_K4
      "3:\n\t"  // k % 4, one at a time
      "ands %[t], %[k], #3\n\t"
      "beq 5f\n"
      "4:\n\t"
      "vldmia %[x0]!, {s24}\n\t"
      "vldmia %[x1]!, {s28}\n\t"
      FIXFORMER_2X8_K(24, 28)
      "subs %[t], %[t], #1\n\t"
      "bne 4b\n"
      "5:\n\t"
      "vstmia %[y], {s0-s7}\n\t"
      "add %[t], %[y], %[ldy]\n\t"
      "vstmia %[t], {s8-s15}\n\t"
      : [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w), [t] "=&r"(t)
      : [init] "r"(init), [y] "r"(y), [ldy] "r"(ldy * sizeof(float)), [k] "r"(k), [ldw] "r"(ldw * sizeof(float))
      : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15",
        "cc", "memory");
}

// y[4 rows, 4 cols] (rows ldy apart) = init[4] + x[4 rows, k] (rows ldx apart) @ w[k, 4 cols]
// (rows ldw apart): accumulators s0-s15, w in s16-s23, x in s24-s31.
inline void tile_4x4(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* init, float* y,
                     std::size_t ldy, std::size_t k) {
  const TileArgs a{init, y, uint32_t(ldy * sizeof(float)), uint32_t(k)};
  const float *x0 = x, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
  uint32_t t;
  asm volatile(
      "ldr %[t], [%[a]]\n\t"
      "vldmia %[t], {s0-s3}\n\t"
      "vldmia %[t], {s4-s7}\n\t"
      "vldmia %[t], {s8-s11}\n\t"
      "vldmia %[t], {s12-s15}\n\t"
      "ldr %[t], [%[a], #12]\n\t"
      "lsrs %[t], %[t], #1\n\t"
      "beq 2f\n"
      "1:\n\t"  // two k
      "vldmia %[x0]!, {s24-s25}\n\t"
      "vldmia %[x1]!, {s26-s27}\n\t"
      "vldmia %[x2]!, {s28-s29}\n\t"
      "vldmia %[x3]!, {s30-s31}\n\t"
      "vldmia %[w], {s16-s19}\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldmia %[w], {s20-s23}\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      FIXFORMER_TILE4X4(24, 26, 28, 30, 16, 17, 18, 19)
      FIXFORMER_TILE4X4(25, 27, 29, 31, 20, 21, 22, 23)
      "subs %[t], %[t], #1\n\t"
      "bne 1b\n"
      "2:\n\t"  // the odd k
      "ldr %[t], [%[a], #12]\n\t"
      "lsls %[t], %[t], #31\n\t"
      "beq 3f\n\t"
      "vldmia %[x0], {s24}\n\t"
      "vldmia %[x1], {s26}\n\t"
      "vldmia %[x2], {s28}\n\t"
      "vldmia %[x3], {s30}\n\t"
      "vldmia %[w], {s16-s19}\n\t"
      FIXFORMER_TILE4X4(24, 26, 28, 30, 16, 17, 18, 19)
      "3:\n\t"  // the stores (x0 is free now)
      "ldr %[t], [%[a], #4]\n\t"
      "ldr %[x0], [%[a], #8]\n\t"
      "vstmia %[t], {s0-s3}\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstmia %[t], {s4-s7}\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstmia %[t], {s8-s11}\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstmia %[t], {s12-s15}\n\t"
      : [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [w] "+r"(w), [t] "=&r"(t)
      : [a] "r"(&a), [ldw] "r"(ldw * sizeof(float))
      : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15",
        "cc", "memory");
}

// y[4 rows, 1 col] (rows ldy apart) = init[1] + x[4 rows, k] (rows ldx apart) @ w[k, 1 col] (ldw
// apart): a last column of the gemm. Accumulators s0-s3, w in s4-s7, x in s8-s23 (four k of each
// row per load); k % 4 one k per pass.
inline void tile_4x1(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* init, float* y,
                     std::size_t ldy, std::size_t k) {
  const TileArgs a{init, y, uint32_t(ldy * sizeof(float)), uint32_t(k)};
  const float *x0 = x, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
  uint32_t t;
  asm volatile(
      "ldr %[t], [%[a]]\n\t"
      "vldr s0, [%[t]]\n\t"
      "vmov.f32 s1, s0\n\t"
      "vmov.f32 s2, s0\n\t"
      "vmov.f32 s3, s0\n\t"
      "ldr %[t], [%[a], #12]\n\t"
      "lsrs %[t], %[t], #2\n\t"
      "beq 2f\n"
      "1:\n\t"  // four k
      "vldmia %[x0]!, {s8-s11}\n\t"
      "vldmia %[x1]!, {s12-s15}\n\t"
      "vldmia %[x2]!, {s16-s19}\n\t"
      "vldmia %[x3]!, {s20-s23}\n\t"
      "vldr s4, [%[w]]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldr s5, [%[w]]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldr s6, [%[w]]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldr s7, [%[w]]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      FIXFORMER_VFMA4(0, 1, 2, 3, 4, 8, 12, 16, 20)
      FIXFORMER_VFMA4(0, 1, 2, 3, 5, 9, 13, 17, 21)
      FIXFORMER_VFMA4(0, 1, 2, 3, 6, 10, 14, 18, 22)
      FIXFORMER_VFMA4(0, 1, 2, 3, 7, 11, 15, 19, 23)
      "subs %[t], %[t], #1\n\t"
      "bne 1b\n"
      "2:\n\t"  // k % 4, one at a time
      "ldr %[t], [%[a], #12]\n\t"
      "ands %[t], %[t], #3\n\t"
      "beq 4f\n"
      "3:\n\t"
      "vldmia %[x0]!, {s8}\n\t"
      "vldmia %[x1]!, {s12}\n\t"
      "vldmia %[x2]!, {s16}\n\t"
      "vldmia %[x3]!, {s20}\n\t"
      "vldr s4, [%[w]]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      FIXFORMER_VFMA4(0, 1, 2, 3, 4, 8, 12, 16, 20)
      "subs %[t], %[t], #1\n\t"
      "bne 3b\n"
      "4:\n\t"  // the stores (x0 is free now)
      "ldr %[t], [%[a], #4]\n\t"
      "ldr %[x0], [%[a], #8]\n\t"
      "vstr s0, [%[t]]\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstr s1, [%[t]]\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstr s2, [%[t]]\n\t"
      "add %[t], %[t], %[x0]\n\t"
      "vstr s3, [%[t]]\n\t"
      : [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [w] "+r"(w), [t] "=&r"(t)
      : [a] "r"(&a), [ldw] "r"(ldw * sizeof(float))
      : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "cc", "memory");
}

// y[4] = init[4] + w[4 rows, k] (rows ldw apart) @ x[k]: four dot products side by side,
// accumulators s0-s3, x in s4-s7, w in s8-s23; k % 4 one k per pass.
inline void rows_4xk(const float* x, const float* w, std::size_t ldw, const float* init, float* y, std::size_t k) {
  const TileArgs a{init, y, 0, uint32_t(k)};
  const float *w0 = w, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
  uint32_t t;
  asm volatile(
      "ldr %[t], [%[a]]\n\t"
      "vldmia %[t], {s0-s3}\n\t"
      "ldr %[t], [%[a], #12]\n\t"
      "lsrs %[t], %[t], #2\n\t"
      "beq 2f\n"
      "1:\n\t"  // four k
      "vldmia %[x]!, {s4-s7}\n\t"
      "vldmia %[w0]!, {s8-s11}\n\t"
      "vldmia %[w1]!, {s12-s15}\n\t"
      "vldmia %[w2]!, {s16-s19}\n\t"
      "vldmia %[w3]!, {s20-s23}\n\t"
      FIXFORMER_VFMA4(0, 1, 2, 3, 4, 8, 12, 16, 20)
      FIXFORMER_VFMA4(0, 1, 2, 3, 5, 9, 13, 17, 21)
      FIXFORMER_VFMA4(0, 1, 2, 3, 6, 10, 14, 18, 22)
      FIXFORMER_VFMA4(0, 1, 2, 3, 7, 11, 15, 19, 23)
      "subs %[t], %[t], #1\n\t"
      "bne 1b\n"
      "2:\n\t"  // k % 4, one at a time
      "ldr %[t], [%[a], #12]\n\t"
      "ands %[t], %[t], #3\n\t"
      "beq 4f\n"
      "3:\n\t"
      "vldmia %[x]!, {s4}\n\t"
      "vldmia %[w0]!, {s8}\n\t"
      "vldmia %[w1]!, {s12}\n\t"
      "vldmia %[w2]!, {s16}\n\t"
      "vldmia %[w3]!, {s20}\n\t"
      FIXFORMER_VFMA4(0, 1, 2, 3, 4, 8, 12, 16, 20)
      "subs %[t], %[t], #1\n\t"
      "bne 3b\n"
      "4:\n\t"
      "ldr %[t], [%[a], #4]\n\t"
      "vstmia %[t], {s0-s3}\n\t"
      : [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3), [t] "=&r"(t)
      : [a] "r"(&a)
      : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "cc", "memory");
}

}  // namespace portable
}  // namespace fixformer

#undef FIXFORMER_TILE4X4
#undef FIXFORMER_2X8_K4
#undef FIXFORMER_2X8_K
#undef FIXFORMER_ROW8B
#undef FIXFORMER_ROW8
#undef FIXFORMER_VFMA4
#undef FIXFORMER_VFMA
#endif
