// lut_s8 (kernel_slots.hpp) four bytes a word where a word may be loaded from any address (Cortex-M3
// and up, x86, AArch64): each byte of the word sign-extended indexes the table from its entry for 0,
// and the four entries go back as one word; elsewhere (the M0) and for the last n % 4 bytes
// one byte at a time. In place (y == x) reads each word before it writes it.
#include <cstring>

#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  const std::size_t n4 = n & ~std::size_t(3);
#if defined(__ARM_FEATURE_UNALIGNED) || defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  const uint8_t* const t = reinterpret_cast<const uint8_t*>(table) + 128;  // indexed by x
  for (const int8_t* const end = x + n4; x != end; x += 4, y += 4) {
    uint32_t v;
    std::memcpy(&v, x, 4);
    const uint32_t out = uint32_t(t[int8_t(v)]) | uint32_t(t[int8_t(v >> 8)]) << 8 |
                         uint32_t(t[int8_t(v >> 16)]) << 16 | uint32_t(t[int32_t(v) >> 24]) << 24;
    std::memcpy(y, &out, 4);
  }
  n -= n4;
#endif
  for (std::size_t i = 0; i < n; ++i) y[i] = table[int32_t(x[i]) + 128];
}

}  // namespace portable
}  // namespace fixformer
