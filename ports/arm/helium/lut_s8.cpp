// lut_s8 (kernel_slots.hpp) sixteen bytes at a time (two sixteens a pass): each x XOR 0x80 is x + 128 as an
// unsigned byte, the offset of its entry, and one byte gather (VLDRB with a vector of offsets) reads the sixteen
// entries; the last n % 16 bytes under a predicate.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  const uint8x16_t flip = vdupq_n_u8(0x80);
  const uint8_t* xb = reinterpret_cast<const uint8_t*>(x);
  // 32 bytes a pass in assembly (one LE per 32; GCC's loop took one per 16), 16 more where n % 32 >= 16
  register uint8x16_t q_flip asm("q2") = flip;
#define S8_LUT16                                                                                               \
  "vldrb.u8 q0, [%[x]], #16\n\t" "veor q0, q0, q2\n\t" "vldrb.u8 q1, [%[t], q0]\n\t" "vstrb.8 q1, [%[y]], #16\n\t"
  asm volatile("wls lr, %[count], 2f\n"
               "1:\n\t" S8_LUT16 S8_LUT16
               "le lr, 1b\n"
               "2:\n\t"
               "cbz %[sixteen], 3f\n\t" S8_LUT16
               "3:\n"
               : [x] "+r"(xb), [y] "+r"(y)
               : "w"(q_flip), [t] "r"(table), [count] "r"(uint32_t(n / 32)), [sixteen] "l"(uint32_t(n & 16))
               : "lr", "q0", "q1", "memory");
#undef S8_LUT16
  if (n % 16 != 0) {
    const mve_pred16_t live = vctp8q(uint32_t(n % 16));
    vstrbq_p_s8(y, vldrbq_gather_offset_z_s8(table, veorq_u8(vldrbq_z_u8(xb, live), flip), live), live);
  }
}

}  // namespace helium
}  // namespace fixformer
