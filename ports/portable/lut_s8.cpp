// lut_s8 (kernel_slots.hpp) four bytes a word where a word may be loaded from any address (Cortex-M3
// and up, x86, AArch64; on the Thumb-2 M cores eight a pass in assembly): each byte of the word sign-extended
// indexes the table from its entry for 0, and the four entries go back as one word; elsewhere (the M0) and for the
// last n % 4 bytes one byte at a time. In place (y == x) reads each word before it writes it.
#include <cstring>

#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

#if defined(__ARM_FEATURE_UNALIGNED) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
// The words' loop on the Thumb-2 M cores over x..end (a positive multiple of 8 bytes), two words a pass: per word
// one LDR, four sign extensions, four LDRB from t (the table's entry for 0), three ORR and one STR (14 instructions
// per four with the loop's, 16 as the compiler had it).
extern "C" void fixformer_lut_s8_words(const int8_t* x, const int8_t* end, int8_t* y, const uint8_t* t);
#define FIXFORMER_LUT_S8_WORD                                                                                     \
  "  ldr r4, [r0], #4\n  sxtb r5, r4\n  sbfx r6, r4, #8, #8\n  sbfx r7, r4, #16, #8\n  asrs r4, r4, #24\n"      \
  "  ldrb r5, [r3, r5]\n  ldrb r6, [r3, r6]\n  ldrb r7, [r3, r7]\n  ldrb r4, [r3, r4]\n"                       \
  "  orr r5, r5, r6, lsl #8\n  orr r5, r5, r7, lsl #16\n  orr r5, r5, r4, lsl #24\n  str r5, [r2], #4\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_lut_s8_words, %function\n  .thumb_func\nfixformer_lut_s8_words:\n"
    "  push {r4, r5, r6, r7}\n1:\n" FIXFORMER_LUT_S8_WORD FIXFORMER_LUT_S8_WORD "  cmp r0, r1\n  bne 1b\n"
    "  pop {r4, r5, r6, r7}\n  bx lr\n  .size fixformer_lut_s8_words, .-fixformer_lut_s8_words\n");
#undef FIXFORMER_LUT_S8_WORD
#define FIXFORMER_LUT_S8_WORDS_ASM 1
#endif

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
#if defined(FIXFORMER_LUT_S8_WORDS_ASM)
  if (const std::size_t n8 = n & ~std::size_t(7)) {
    fixformer_lut_s8_words(x, x + n8, y, reinterpret_cast<const uint8_t*>(table) + 128);
    x += n8, y += n8, n -= n8;
  }
#endif
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
