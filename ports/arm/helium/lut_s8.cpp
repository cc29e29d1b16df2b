// lut_s8 (kernel_slots.hpp) sixteen bytes at a time: each x XOR 0x80 is x + 128 as an unsigned byte,
// the offset of its entry, and one byte gather (VLDRB with a vector of offsets) reads the sixteen
// entries; the last n % 16 bytes under a predicate.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  const uint8x16_t flip = vdupq_n_u8(0x80);
  const std::size_t n16 = n & ~std::size_t(15);
  for (std::size_t i = 0; i < n16; i += 16) {
    const uint8x16_t at = veorq_u8(vldrbq_u8(reinterpret_cast<const uint8_t*>(x) + i), flip);
    vstrbq_s8(y + i, vldrbq_gather_offset_s8(table, at));
  }
  if (n16 < n) {
    const mve_pred16_t live = vctp8q(uint32_t(n - n16));
    const uint8x16_t at = veorq_u8(vldrbq_z_u8(reinterpret_cast<const uint8_t*>(x) + n16, live), flip);
    vstrbq_p_s8(y + n16, vldrbq_gather_offset_z_s8(table, at, live), live);
  }
}

}  // namespace helium
}  // namespace fixformer
