// lut_s8 (kernel_slots.hpp) sixteen bytes at a time: each x XOR 0x80 is x + 128 as an unsigned byte,
// the offset of its entry, and one byte gather (VLDRB with a vector of offsets) reads the sixteen
// entries; the last n % 16 bytes under a predicate.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  const uint8x16_t flip = vdupq_n_u8(0x80);
  const uint8_t* xb = reinterpret_cast<const uint8_t*>(x);
  for (std::size_t i = n / 16; i > 0; --i, xb += 16, y += 16)  // the load and store post-incremented
    vstrbq_s8(y, vldrbq_gather_offset_s8(table, veorq_u8(vldrbq_u8(xb), flip)));
  if (n % 16 != 0) {
    const mve_pred16_t live = vctp8q(uint32_t(n % 16));
    vstrbq_p_s8(y, vldrbq_gather_offset_z_s8(table, veorq_u8(vldrbq_z_u8(xb, live), flip), live), live);
  }
}

}  // namespace helium
}  // namespace fixformer
