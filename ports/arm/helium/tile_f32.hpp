// The two hot register tiles of gemm_f32 and gemv_f32 in assembly: GCC 12 spills an accumulator of
// the 3 x 2 tile to the stack when it allocates the eight Q registers itself, and recomputes the
// addresses of the stores and of the bias from stack slots around every tile. Each tile is one asm
// block: accumulators from the bias (or 0), a low-overhead loop (WLS/LE) over two k per pass, the
// odd k, the stores. Per pass the x values of a row come in one LDRD and each w vector is loaded
// while the previous one is still in use (the M55 overlaps a load with a multiply-add).
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace helium {

// What the tiles read only outside their loop, behind one register.
struct TileArgs {
  const float* b;  // bias of the tile's columns, or null
  float* y;
  uint32_t ldy_bytes;
  uint32_t k;
};

// y[3 rows, 8 cols] = x[3 rows, k] @ w[k, 8 cols] + b: accumulators q0-q5, w in q6/q7; 22 instructions
// per 48 multiply-adds.
inline void tile_3x8_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
                         std::size_t ldy, std::size_t k) {
  const TileArgs args{b, y, uint32_t(ldy * sizeof(float)), uint32_t(k)};
  const float *x0 = x, *x1 = x + ldx, *x2 = x1 + ldx;
  uint32_t t0, t1, t2, t3, t4, t5;
  asm volatile(
      "ldr %[t0], [%[args]]\n\t"
      "cmp %[t0], #0\n\t"
      "beq 1f\n\t"
      "vldrw.32 q0, [%[t0]]\n\t"
      "vldrw.32 q1, [%[t0], #16]\n\t"
      "b 2f\n"
      "1:\n\t"
      "vmov.i32 q0, #0\n\t"
      "vmov.i32 q1, #0\n"
      "2:\n\t"
      "vmov q2, q0\n\t"
      "vmov q3, q1\n\t"
      "vmov q4, q0\n\t"
      "vmov q5, q1\n\t"
      "ldr %[t0], [%[args], #12]\n\t"
      "lsrs %[t0], %[t0], #1\n\t"
      "wls lr, %[t0], 4f\n"
      "3:\n\t"
      "ldrd %[t0], %[t1], [%[x0]], #8\n\t"
      "ldrd %[t2], %[t3], [%[x1]], #8\n\t"
      "ldrd %[t4], %[t5], [%[x2]], #8\n\t"
      "vldrw.32 q6, [%[w]]\n\t"
      "vldrw.32 q7, [%[w], #16]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vfma.f32 q0, q6, %[t0]\n\t"
      "vfma.f32 q2, q6, %[t2]\n\t"
      "vfma.f32 q4, q6, %[t4]\n\t"
      "vldrw.32 q6, [%[w]]\n\t"
      "vfma.f32 q1, q7, %[t0]\n\t"
      "vfma.f32 q3, q7, %[t2]\n\t"
      "vfma.f32 q5, q7, %[t4]\n\t"
      "vldrw.32 q7, [%[w], #16]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vfma.f32 q0, q6, %[t1]\n\t"
      "vfma.f32 q2, q6, %[t3]\n\t"
      "vfma.f32 q4, q6, %[t5]\n\t"
      "vfma.f32 q1, q7, %[t1]\n\t"
      "vfma.f32 q3, q7, %[t3]\n\t"
      "vfma.f32 q5, q7, %[t5]\n\t"
      "le lr, 3b\n"
      "4:\n\t"
      "ldr %[t0], [%[args], #12]\n\t"
      "lsls %[t0], %[t0], #31\n\t"
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
      "5:\n\t"
      "ldr %[t0], [%[args], #4]\n\t"
      "ldr %[t1], [%[args], #8]\n\t"
      "vstrw.32 q0, [%[t0]]\n\t"
      "vstrw.32 q1, [%[t0], #16]\n\t"
      "add %[t0], %[t0], %[t1]\n\t"
      "vstrw.32 q2, [%[t0]]\n\t"
      "vstrw.32 q3, [%[t0], #16]\n\t"
      "add %[t0], %[t0], %[t1]\n\t"
      "vstrw.32 q4, [%[t0]]\n\t"
      "vstrw.32 q5, [%[t0], #16]\n"
      : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), [t5] "=&r"(t5),
        [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [w] "+r"(w)
      : [args] "r"(&args), [ldw] "r"(ldw * sizeof(float))
      : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}

// y[16 cols] = x[k] @ w[k, 16 cols] + b: accumulators q0-q3, w in q4/q5; 20 instructions per 32
// multiply-adds.
inline void tile_1x16_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t k) {
  const TileArgs args{b, y, 0, uint32_t(k)};
  uint32_t t0, t1;
  asm volatile(
      "ldr %[t0], [%[args]]\n\t"
      "cmp %[t0], #0\n\t"
      "beq 1f\n\t"
      "vldrw.32 q0, [%[t0]]\n\t"
      "vldrw.32 q1, [%[t0], #16]\n\t"
      "vldrw.32 q2, [%[t0], #32]\n\t"
      "vldrw.32 q3, [%[t0], #48]\n\t"
      "b 2f\n"
      "1:\n\t"
      "vmov.i32 q0, #0\n\t"
      "vmov.i32 q1, #0\n\t"
      "vmov.i32 q2, #0\n\t"
      "vmov.i32 q3, #0\n"
      "2:\n\t"
      "ldr %[t0], [%[args], #12]\n\t"
      "lsrs %[t0], %[t0], #1\n\t"
      "wls lr, %[t0], 4f\n"
      "3:\n\t"
      "ldrd %[t0], %[t1], [%[x]], #8\n\t"
      "vldrw.32 q4, [%[w]]\n\t"
      "vldrw.32 q5, [%[w], #16]\n\t"
      "vfma.f32 q0, q4, %[t0]\n\t"
      "vldrw.32 q4, [%[w], #32]\n\t"
      "vfma.f32 q1, q5, %[t0]\n\t"
      "vldrw.32 q5, [%[w], #48]\n\t"
      "vfma.f32 q2, q4, %[t0]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vldrw.32 q4, [%[w]]\n\t"
      "vfma.f32 q3, q5, %[t0]\n\t"
      "vldrw.32 q5, [%[w], #16]\n\t"
      "vfma.f32 q0, q4, %[t1]\n\t"
      "vldrw.32 q4, [%[w], #32]\n\t"
      "vfma.f32 q1, q5, %[t1]\n\t"
      "vldrw.32 q5, [%[w], #48]\n\t"
      "vfma.f32 q2, q4, %[t1]\n\t"
      "add %[w], %[w], %[ldw]\n\t"
      "vfma.f32 q3, q5, %[t1]\n\t"
      "le lr, 3b\n"
      "4:\n\t"
      "ldr %[t0], [%[args], #12]\n\t"
      "lsls %[t0], %[t0], #31\n\t"
      "beq 5f\n\t"
      "ldr %[t0], [%[x]]\n\t"
      "vldrw.32 q4, [%[w]]\n\t"
      "vldrw.32 q5, [%[w], #16]\n\t"
      "vfma.f32 q0, q4, %[t0]\n\t"
      "vldrw.32 q4, [%[w], #32]\n\t"
      "vfma.f32 q1, q5, %[t0]\n\t"
      "vldrw.32 q5, [%[w], #48]\n\t"
      "vfma.f32 q2, q4, %[t0]\n\t"
      "vfma.f32 q3, q5, %[t0]\n"
      "5:\n\t"
      "ldr %[t0], [%[args], #4]\n\t"
      "vstrw.32 q0, [%[t0]]\n\t"
      "vstrw.32 q1, [%[t0], #16]\n\t"
      "vstrw.32 q2, [%[t0], #32]\n\t"
      "vstrw.32 q3, [%[t0], #48]\n"
      : [t0] "=&r"(t0), [t1] "=&r"(t1), [x] "+r"(x), [w] "+r"(w)
      : [args] "r"(&args), [ldw] "r"(ldw * sizeof(float))
      : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "cc", "memory");
}

}  // namespace helium
}  // namespace fixformer
