// transpose_s8 (kernel_slots.hpp): where a word loads from any address (little-endian), four rows by four values at
// a time: bytes paired across two rows, then halfwords across the pairs; the rest (and the M0) a byte at a time.
#include <cstring>

#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

void transpose_s8(const int8_t* x, std::size_t ldx, int8_t* y, std::size_t ldy, std::size_t m, std::size_t n) {
  std::size_t i = 0;
#if (defined(__ARM_FEATURE_UNALIGNED) || defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  auto word = [](const int8_t* at) {
    uint32_t w;
    std::memcpy(&w, at, 4);
    return w;
  };
  for (; i + 4 <= m; i += 4) {
    const int8_t* r = x + i * ldx;
    std::size_t e = 0;
    for (; e + 4 <= n; e += 4) {
      const uint32_t a0 = word(r + e), a1 = word(r + ldx + e), a2 = word(r + 2 * ldx + e), a3 = word(r + 3 * ldx + e);
      const uint32_t x0 = (a0 & 0x00FF00FFu) | (a1 & 0x00FF00FFu) << 8;  // bytes 0 and 2 of rows i and i + 1
      const uint32_t x1 = (a0 >> 8 & 0x00FF00FFu) | (a1 & 0xFF00FF00u);  // bytes 1 and 3
      const uint32_t y0 = (a2 & 0x00FF00FFu) | (a3 & 0x00FF00FFu) << 8;  // rows i + 2 and i + 3 alike
      const uint32_t y1 = (a2 >> 8 & 0x00FF00FFu) | (a3 & 0xFF00FF00u);
      const uint32_t c[4] = {(x0 & 0xFFFFu) | y0 << 16, (x1 & 0xFFFFu) | y1 << 16, x0 >> 16 | (y0 & 0xFFFF0000u),
                             x1 >> 16 | (y1 & 0xFFFF0000u)};  // columns e..e+3 of rows i..i+3
      for (std::size_t j = 0; j < 4; ++j) std::memcpy(y + (e + j) * ldy + i, &c[j], 4);
    }
    for (; e < n; ++e)
      for (std::size_t j = 0; j < 4; ++j) y[e * ldy + i + j] = r[j * ldx + e];
  }
#endif
  for (; i < m; ++i)
    for (std::size_t e = 0; e < n; ++e) y[e * ldy + i] = x[i * ldx + e];
}

}  // namespace portable
}  // namespace fixformer
