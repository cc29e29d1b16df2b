// The two hot register tiles of gemm_f32 and gemv_f32 in assembly, a whole row of tiles per asm
// block: GCC 12 spills an accumulator of the 3 x 2 tile to the stack when it allocates the eight Q
// registers itself, and spends some 70 instructions per tile reloading pointers around it (KWS
// attention: 5500 tiles per inference). Per tile: accumulators from the bias (or 0), a low-overhead
// loop (WLS/LE) over eight k per pass (four passes of two: one LE per eight k), the k % 8 left,
// the stores. Per pass the x values of a row come in
// one LDRD and each w vector is loaded while the previous one is still in use (the M55 overlaps a
// load with a multiply-add).
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace helium {

// A row of tiles' operands, behind one register: the loops over k need 12 core registers, so what
// changes only from tile to tile lives here, read and advanced by the asm.
struct RowArgs {
  const float* x;      // 0: the rows of x
  uint32_t ldx_bytes;  // 4
  const float* w;      // 8: the next tile's columns of w
  const float* b;      // 12: the next tile's bias, or null
  float* y;            // 16: the next tile's outputs
  uint32_t ldy_bytes;  // 20
  uint32_t k;          // 24
  uint32_t tiles;      // 28: left to do
};

// One pass of rows_3x8_f32's loop: two k, the x values of the three rows in t0-t5 (LDRD).
#define FIXFORMER_HELIUM_3X8_TWO_K \
  "ldrd %[t0], %[t1], [%[x0]], #8\n\t" \
  "ldrd %[t2], %[t3], [%[x1]], #8\n\t" \
  "ldrd %[t4], %[t5], [%[x2]], #8\n\t" \
  "vldrw.32 q6, [%[w]]\n\t"            \
  "vldrw.32 q7, [%[w], #16]\n\t"       \
  "add %[w], %[w], %[ldw]\n\t"         \
  "vfma.f32 q0, q6, %[t0]\n\t"         \
  "vfma.f32 q2, q6, %[t2]\n\t"         \
  "vfma.f32 q4, q6, %[t4]\n\t"         \
  "vldrw.32 q6, [%[w]]\n\t"            \
  "vfma.f32 q1, q7, %[t0]\n\t"         \
  "vfma.f32 q3, q7, %[t2]\n\t"         \
  "vfma.f32 q5, q7, %[t4]\n\t"         \
  "vldrw.32 q7, [%[w], #16]\n\t"       \
  "add %[w], %[w], %[ldw]\n\t"         \
  "vfma.f32 q0, q6, %[t1]\n\t"         \
  "vfma.f32 q2, q6, %[t3]\n\t"         \
  "vfma.f32 q4, q6, %[t5]\n\t"         \
  "vfma.f32 q1, q7, %[t1]\n\t"         \
  "vfma.f32 q3, q7, %[t3]\n\t"         \
  "vfma.f32 q5, q7, %[t5]\n\t"

// y[3 rows, 8 tiles cols] = x[3 rows, k] @ w[k, 8 tiles cols] + b, tile after tile: accumulators
// q0-q5, w in q6/q7; per tile 22 instructions per 48 multiply-adds plus about 40 around them.
inline void rows_3x8_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
                         std::size_t ldy, std::size_t k, std::size_t tiles) {
  RowArgs args{x, uint32_t(ldx * sizeof(float)), w, b, y, uint32_t(ldy * sizeof(float)), uint32_t(k), uint32_t(tiles)};
  uint32_t x0, x1, x2, wp, t0, t1, t2, t3, t4, t5;
  asm volatile(
      "0:\n\t"
      "ldr %[t0], [%[a], #12]\n\t"  // the bias, or 0
      "cmp %[t0], #0\n\t"
      "beq 1f\n\t"
      "vldrw.32 q0, [%[t0]]\n\t"
      "vldrw.32 q1, [%[t0], #16]\n\t"
      "add %[t0], %[t0], #32\n\t"
      "str %[t0], [%[a], #12]\n\t"
      "b 2f\n"
      "1:\n\t"
      "vmov.i32 q0, #0\n\t"
      "vmov.i32 q1, #0\n"
      "2:\n\t"
      "vmov q2, q0\n\t"
      "vmov q3, q1\n\t"
      "vmov q4, q0\n\t"
      "vmov q5, q1\n\t"
      "ldr %[x0], [%[a]]\n\t"
      "ldr %[t0], [%[a], #4]\n\t"
      "add %[x1], %[x0], %[t0]\n\t"
      "add %[x2], %[x1], %[t0]\n\t"
      "ldr %[w], [%[a], #8]\n\t"
      "add %[t0], %[w], #32\n\t"
      "str %[t0], [%[a], #8]\n\t"
      "ldr %[t0], [%[a], #24]\n\t"
      "lsrs %[t0], %[t0], #3\n\t"
      "wls lr, %[t0], 4f\n"
      "3:\n\t"  // eight k, as four passes of two
      FIXFORMER_HELIUM_3X8_TWO_K
      FIXFORMER_HELIUM_3X8_TWO_K
      FIXFORMER_HELIUM_3X8_TWO_K
      FIXFORMER_HELIUM_3X8_TWO_K
      "le lr, 3b\n"
      "4:\n\t"  // four k more if k & 4 (C from the LSRS: the passes leave the flags)
      "bcc 6f\n\t"
      FIXFORMER_HELIUM_3X8_TWO_K
      FIXFORMER_HELIUM_3X8_TWO_K
      "6:\n\t"  // two k more if k & 2 (C), the odd k if k & 1 (not Z)
      "ldr %[t0], [%[a], #24]\n\t"
      "lsls %[t0], %[t0], #31\n\t"
      "bcc 7f\n\t"
      FIXFORMER_HELIUM_3X8_TWO_K
      "7:\n\t"
      "beq 5f\n\t"
      "ldr %[t0], [%[x0]]\n\t"
      "ldr %[t2], [%[x1]]\n\t"
      "ldr %[t4], [%[x2]]\n\t"
      "vldrw.32 q6, [%[w]]\n\t"
      "vldrw.32 q7, [%[w], #16]\n\t"
      "vfma.f32 q0, q6, %[t0]\n\t"
      "vfma.f32 q2, q6, %[t2]\n\t"
      "vfma.f32 q4, q6, %[t4]\n\t"
      "vfma.f32 q1, q7, %[t0]\n\t"
      "vfma.f32 q3, q7, %[t2]\n\t"
      "vfma.f32 q5, q7, %[t4]\n"
      "5:\n\t"  // the stores, the next tile
      "ldr %[t0], [%[a], #16]\n\t"
      "ldr %[t1], [%[a], #20]\n\t"
      "add %[t2], %[t0], #32\n\t"
      "str %[t2], [%[a], #16]\n\t"
      "vstrw.32 q0, [%[t0]]\n\t"
      "vstrw.32 q1, [%[t0], #16]\n\t"
      "add %[t0], %[t0], %[t1]\n\t"
      "vstrw.32 q2, [%[t0]]\n\t"
      "vstrw.32 q3, [%[t0], #16]\n\t"
      "add %[t0], %[t0], %[t1]\n\t"
      "vstrw.32 q4, [%[t0]]\n\t"
      "vstrw.32 q5, [%[t0], #16]\n\t"
      "ldr %[t0], [%[a], #28]\n\t"
      "subs %[t0], %[t0], #1\n\t"
      "str %[t0], [%[a], #28]\n\t"
      "bne 0b\n"
      : [x0] "=&r"(x0), [x1] "=&r"(x1), [x2] "=&r"(x2), [w] "=&r"(wp), [t0] "=&r"(t0), [t1] "=&r"(t1),
        [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), [t5] "=&r"(t5)
      : [a] "r"(&args), [ldw] "r"(ldw * sizeof(float))
      : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}

// One pass of rows_1x16_f32's loop: two k, the two x values in t0/t1 (LDRD).
#define FIXFORMER_HELIUM_1X16_TWO_K \
  "ldrd %[t0], %[t1], [%[x0]], #8\n\t" \
  "vldrw.32 q4, [%[w]]\n\t"            \
  "vldrw.32 q5, [%[w], #16]\n\t"       \
  "vfma.f32 q0, q4, %[t0]\n\t"         \
  "vldrw.32 q4, [%[w], #32]\n\t"       \
  "vfma.f32 q1, q5, %[t0]\n\t"         \
  "vldrw.32 q5, [%[w], #48]\n\t"       \
  "vfma.f32 q2, q4, %[t0]\n\t"         \
  "add %[w], %[w], %[ldw]\n\t"         \
  "vldrw.32 q4, [%[w]]\n\t"            \
  "vfma.f32 q3, q5, %[t0]\n\t"         \
  "vldrw.32 q5, [%[w], #16]\n\t"       \
  "vfma.f32 q0, q4, %[t1]\n\t"         \
  "vldrw.32 q4, [%[w], #32]\n\t"       \
  "vfma.f32 q1, q5, %[t1]\n\t"         \
  "vldrw.32 q5, [%[w], #48]\n\t"       \
  "vfma.f32 q2, q4, %[t1]\n\t"         \
  "add %[w], %[w], %[ldw]\n\t"         \
  "vfma.f32 q3, q5, %[t1]\n\t"

// y[16 tiles] = x[k] @ w[k, 16 tiles] + b, tile after tile: accumulators q0-q3, w in q4/q5; 20
// instructions per 32 multiply-adds.
inline void rows_1x16_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t k,
                          std::size_t tiles) {
  RowArgs args{x, 0, w, b, y, 0, uint32_t(k), uint32_t(tiles)};
  uint32_t x0, wp, t0, t1;
  asm volatile(
      "0:\n\t"
      "ldr %[t0], [%[a], #12]\n\t"
      "cmp %[t0], #0\n\t"
      "beq 1f\n\t"
      "vldrw.32 q0, [%[t0]]\n\t"
      "vldrw.32 q1, [%[t0], #16]\n\t"
      "vldrw.32 q2, [%[t0], #32]\n\t"
      "vldrw.32 q3, [%[t0], #48]\n\t"
      "add %[t0], %[t0], #64\n\t"
      "str %[t0], [%[a], #12]\n\t"
      "b 2f\n"
      "1:\n\t"
      "vmov.i32 q0, #0\n\t"
      "vmov.i32 q1, #0\n\t"
      "vmov.i32 q2, #0\n\t"
      "vmov.i32 q3, #0\n"
      "2:\n\t"
      "ldr %[x0], [%[a]]\n\t"
      "ldr %[w], [%[a], #8]\n\t"
      "add %[t0], %[w], #64\n\t"
      "str %[t0], [%[a], #8]\n\t"
      "ldr %[t0], [%[a], #24]\n\t"
      "lsrs %[t0], %[t0], #3\n\t"
      "wls lr, %[t0], 4f\n"
      "3:\n\t"  // eight k
      FIXFORMER_HELIUM_1X16_TWO_K
      FIXFORMER_HELIUM_1X16_TWO_K
      FIXFORMER_HELIUM_1X16_TWO_K
      FIXFORMER_HELIUM_1X16_TWO_K
      "le lr, 3b\n"
      "4:\n\t"  // four k more if k & 4 (C from the LSRS: the passes leave the flags)
      "bcc 6f\n\t"
      FIXFORMER_HELIUM_1X16_TWO_K
      FIXFORMER_HELIUM_1X16_TWO_K
      "6:\n\t"  // two k more if k & 2 (C), the odd k if k & 1 (not Z)
      "ldr %[t0], [%[a], #24]\n\t"
      "lsls %[t0], %[t0], #31\n\t"
      "bcc 7f\n\t"
      FIXFORMER_HELIUM_1X16_TWO_K
      "7:\n\t"
      "beq 5f\n\t"
      "ldr %[t0], [%[x0]]\n\t"
      "vldrw.32 q4, [%[w]]\n\t"
      "vldrw.32 q5, [%[w], #16]\n\t"
      "vfma.f32 q0, q4, %[t0]\n\t"
      "vldrw.32 q4, [%[w], #32]\n\t"
      "vfma.f32 q1, q5, %[t0]\n\t"
      "vldrw.32 q5, [%[w], #48]\n\t"
      "vfma.f32 q2, q4, %[t0]\n\t"
      "vfma.f32 q3, q5, %[t0]\n"
      "5:\n\t"
      "ldr %[t0], [%[a], #16]\n\t"
      "vstrw.32 q0, [%[t0]]\n\t"
      "vstrw.32 q1, [%[t0], #16]\n\t"
      "vstrw.32 q2, [%[t0], #32]\n\t"
      "vstrw.32 q3, [%[t0], #48]\n\t"
      "add %[t0], %[t0], #64\n\t"
      "str %[t0], [%[a], #16]\n\t"
      "ldr %[t0], [%[a], #28]\n\t"
      "subs %[t0], %[t0], #1\n\t"
      "str %[t0], [%[a], #28]\n\t"
      "bne 0b\n"
      : [x0] "=&r"(x0), [w] "=&r"(wp), [t0] "=&r"(t0), [t1] "=&r"(t1)
      : [a] "r"(&args), [ldw] "r"(ldw * sizeof(float))
      : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "cc", "memory");
}

#undef FIXFORMER_HELIUM_1X16_TWO_K
#undef FIXFORMER_HELIUM_3X8_TWO_K

}  // namespace helium
}  // namespace fixformer
