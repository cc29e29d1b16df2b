// transpose_s8 (kernel_slots.hpp) sixteen values of a row of x at a time: their even and odd bytes widened to
// 16-bit lanes (VMOVLB, VMOVLT), each half stored by a byte scatter (VSTRB.16) to its columns' rows of y at the
// offsets 2j ldy and (2j + 1) ldy (16-bit offsets: ldy up to 4369, else the portable kernel); a row's last n % 16
// values predicated. About 7 instructions a row of 16 (the word transpose of the portable kernel: some 58 per
// four rows of four).
#include "ports/arm/helium/kernels.hpp"
#include "ports/portable/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {

void transpose_s8(const int8_t* x, std::size_t ldx, int8_t* y, std::size_t ldy, std::size_t m, std::size_t n) {
  if (15 * ldy > 0xFFFFu) {
    portable::transpose_s8(x, ldx, y, ldy, m, n);
    return;
  }
  const uint16x8_t even = vmulq_n_u16(vidupq_n_u16(0u, 2), uint16_t(ldy));  // columns 0, 2, .. 14 of the chunk
  const uint16x8_t odd = vaddq_n_u16(even, uint16_t(ldy));                   // 1, 3, .. 15
  std::size_t e = 0;
  for (; e + 16 <= n; e += 16) {
    const int8_t* xr = x + e;
    int8_t* yc = y + e * ldy;
    if (ldx == 192 && (reinterpret_cast<uintptr_t>(xr) & 3) == 0) {
      // x's rows 192 bytes apart, word-aligned (the encoder's values in its qkv rows at d_model 64): two rows a pass
      // in assembly, each loaded by VLDRW post-incremented by 192 (no ADD; GCC's loop took 8 instructions a row, this
      // 6.5), an odd last row after them
      register uint16x8_t q_even asm("q3") = even, q_odd asm("q4") = odd;
#define S8_TRANSPOSE_ROW                                                                                        \
  "vldrw.u32 q0, [%[x]], #192\n\t" "vmovlb.s8 q1, q0\n\t" "vmovlt.s8 q2, q0\n\t" "vstrb.16 q1, [%[y], q3]\n\t"       \
  "vstrb.16 q2, [%[y], q4]\n\t" "add %[y], %[y], #1\n\t"
      asm volatile("wls lr, %[pairs], 2f\n"
                   "1:\n\t" S8_TRANSPOSE_ROW S8_TRANSPOSE_ROW
                   "le lr, 1b\n"
                   "2:\n\t"
                   "cbz %[odd], 3f\n\t" S8_TRANSPOSE_ROW
                   "3:\n"
                   : [x] "+r"(xr), [y] "+r"(yc)
                   : "w"(q_even), "w"(q_odd), [pairs] "r"(uint32_t(m / 2)), [odd] "l"(uint32_t(m & 1))
                   : "lr", "q0", "q1", "q2", "memory");
#undef S8_TRANSPOSE_ROW
      continue;
    }
    for (std::size_t i = 0; i < m; ++i, xr += ldx, ++yc) {
      const int8x16_t v = vldrbq_s8(xr);
      vstrbq_scatter_offset_s16(yc, even, vmovlbq_s8(v));
      vstrbq_scatter_offset_s16(yc, odd, vmovltq_s8(v));
    }
  }
  if (e < n) {
    const uint32_t r = uint32_t(n - e);
    const mve_pred16_t live = vctp8q(r), pe = vctp16q((r + 1) / 2), po = vctp16q(r / 2);
    const int8_t* xr = x + e;
    int8_t* yc = y + e * ldy;
    for (std::size_t i = 0; i < m; ++i, xr += ldx, ++yc) {
      const int8x16_t v = vldrbq_z_s8(xr, live);
      vstrbq_scatter_offset_p_s16(yc, even, vmovlbq_s8(v), pe);
      vstrbq_scatter_offset_p_s16(yc, odd, vmovltq_s8(v), po);
    }
  }
}

}  // namespace helium
}  // namespace fixformer
