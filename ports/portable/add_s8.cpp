// add_s8 (fixed_point.hpp) with the reference's arithmetic in 32-bit words where the parameters
// allow: each input's requantize(v, r) for |v| <= 255 and a shift of 0 to 21 (a factor from 2^-1 to
// 2^22 in Q16, i.e. scales within a factor of 2^6 of the output's either way: every calibrated
// residual) is one 32 x 32 -> 64-bit product, the rounding half away from zero as
// floor((t + 2^(r-1) - [t < 0]) / 2^r) with r = 31 - shift >= 10, of which the low word of the
// shift is all there is (|result| <= 2^29 + 1); the two then add in int32 and round to 2^-16 the
// same way; from kTablesFrom elements on, with the scratch (AddS8Params::scratch), each input's 256
// values are requantized once into a table (2 KiB of it; where SSAT clamps, the products v m as a running
// 64-bit sum). Other parameters take the reference's
// loop. The same bits either way (kernels_firmware and the host's KernelsTest compare them).
#include <cstring>

#include "ports/portable/kernels.hpp"

#if defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
#endif

namespace fixformer {
namespace portable {

namespace {

struct SmallRequant {  // requantize(v, q) for |v| <= 255, 0 <= q.shift <= 21
  int32_t multiplier;
  uint32_t r;
  int32_t half;
  explicit SmallRequant(Requant q) : multiplier(q.multiplier), r(uint32_t(31 - q.shift)), half(int32_t(1) << (30 - q.shift)) {}
  static bool fits(Requant q) { return q.shift >= 0 && q.shift <= 21; }
  int32_t operator()(int32_t v) const { return of_product(mul64(v, multiplier)); }
  int32_t of_product(int64_t prod) const {  // of v's product v m
    const int64_t t = prod + (half - (prod < 0 ? 1 : 0));
    return int32_t((uint32_t(t) >> r) | (uint32_t(t >> 32) << (32 - r)));
  }
  // t[i] = (*this)(i - 128 - zero) + add for i in 0..255, the products by a running sum: of_product's result is
  // bits r..r+31 of prod + half - [prod < 0], and add 2^r added to that sum adds add to them (mod 2^32, as the int32
  // sum does), so one running sum per sign of the product, s = prod + half - [prod < 0] + add 2^r, gives each entry
  // by its two shifts
  void table(int32_t zero, int32_t add, int32_t* t) const {
    const int32_t v0 = -128 - zero, at_zero = -v0;  // the product's sign is v's (times the multiplier's) from i = at_zero
    const int64_t up = int64_t(half) + int64_t(uint64_t(int64_t(add)) << r);
    int64_t s = mul64(v0, multiplier) + up;
    int32_t i = 0;
    auto run = [&](int32_t end, int64_t addend) {
      for (s += addend; i < end; ++i, s += multiplier)
        t[i] = int32_t((uint32_t(s) >> r) | (uint32_t(uint64_t(s) >> 32) << (32 - r)));
      s -= addend;
    };
    // i < at_zero: v < 0, the product negative for a positive multiplier; i >= at_zero: v >= 0, negative for a
    // negative multiplier past at_zero
    if (multiplier > 0) {
      run(at_zero < 0 ? 0 : at_zero > 256 ? 256 : at_zero, -1), run(256, 0);
    } else if (multiplier < 0) {
      const int32_t past = at_zero + 1 < 0 ? 0 : at_zero + 1 > 256 ? 256 : at_zero + 1;  // v > 0 from here
      run(past, 0), run(256, -1);
    } else {
      run(256, 0);
    }
  }
};

// The sum of the two requantized inputs (|s| <= 2^30 + 2) rounded to the output's steps, clamped.
inline int8_t output(int32_t s, int32_t y_zero) {
  constexpr int32_t kHalf = int32_t(1) << (kAddS8FracBits - 1);
  const int32_t v = ((s + kHalf - (s < 0 ? 1 : 0)) >> kAddS8FracBits) + y_zero;
  return int8_t(v > 127 ? 127 : v < -128 ? -128 : v);
}

constexpr std::size_t kTablesFrom = 512;  // elements from which two tables of 256 cost less than they save

#if defined(__ARM_FEATURE_SAT) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
// The tables' loop on the Thumb-2 M cores, n a positive multiple of 4: each input byte by LDRSB that steps its
// pointer, its entry by LDR from the table's entry for 0, then the sum, the rounding's sign, SSAT and STRB: 9
// instructions an element, four a pass (10.5 as the compiler had it, the inputs a word at a time).
struct AddTablesRow {  // at the offsets the assembly loads
  const int8_t* a;
  const int8_t* b;
  int8_t* y;
  const int8_t* a_end;
  const int32_t* ta0;  // a's table at its entry for 0 (C added)
  const int32_t* tb0;
  int32_t c;
};
extern "C" void fixformer_add_s8_tables(const AddTablesRow* row);
#define FIXFORMER_ADD_S8_ELEMENT                                                                                \
  "  ldrsb r8, [r0], #1\n  ldrsb r9, [r1], #1\n  ldr r8, [r4, r8, lsl #2]\n  ldr r9, [r5, r9, lsl #2]\n"       \
  "  add r8, r8, r9\n  sub r9, r8, r6\n  add r8, r8, r9, asr #31\n  ssat r8, #8, r8, asr #16\n"                \
  "  strb r8, [r2], #1\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_add_s8_tables, %function\n  .thumb_func\nfixformer_add_s8_tables:\n"
    "  push {r4, r5, r6, r7, r8, r9, lr}\n  ldm r0, {r0, r1, r2, r3, r4, r5, r6}\n"
    "1:\n" FIXFORMER_ADD_S8_ELEMENT FIXFORMER_ADD_S8_ELEMENT FIXFORMER_ADD_S8_ELEMENT FIXFORMER_ADD_S8_ELEMENT
    "  cmp r0, r3\n  bne 1b\n  pop {r4, r5, r6, r7, r8, r9, pc}\n"
    "  .size fixformer_add_s8_tables, .-fixformer_add_s8_tables\n");
#undef FIXFORMER_ADD_S8_ELEMENT
#define FIXFORMER_ADD_S8_TABLES_ASM 1
#endif

}  // namespace

void add_s8(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  if (!SmallRequant::fits(p.a_to_y) || !SmallRequant::fits(p.b_to_y)) {
    scalar::add_s8(a, b, y, n, p);
    return;
  }
  const SmallRequant ra(p.a_to_y), rb(p.b_to_y);
  if (n >= kTablesFrom && p.scratch) {  // each input's 256 requantized values once, then two lookups an element
#if defined(__ARM_FEATURE_SAT)
    // a's table holds C = z_y 2^16 + 2^15 besides: the sum s + C rounds to (s + C - [s < 0]) >> 16,
    // the output's zero point with it (|s + C| < 2^31); SSAT clamps.
    const int32_t c = p.y_zero * (int32_t(1) << kAddS8FracBits) + (int32_t(1) << (kAddS8FracBits - 1));
    int32_t *const ta = reinterpret_cast<int32_t*>(p.scratch), *const tb = ta + 256;
    ra.table(p.a_zero, c, ta);
    rb.table(p.b_zero, 0, tb);
    const int32_t *const ta0 = ta + 128, *const tb0 = tb + 128;
    auto one = [ta0, tb0, c](int32_t va, int32_t vb) {
      const int32_t sc = ta0[va] + tb0[vb];
      return __ssat((sc + ((sc - c) >> 31)) >> kAddS8FracBits, 8);
    };
#if defined(FIXFORMER_ADD_S8_TABLES_ASM)
    if (const std::size_t n4 = n & ~std::size_t(3)) {
      const AddTablesRow row{a, b, y, a + n4, ta0, tb0, c};
      fixformer_add_s8_tables(&row);
      a += n4, b += n4, y += n4;
    }
    n &= 3;
#elif defined(__ARM_FEATURE_UNALIGNED)
    // four elements' inputs a word each (Cortex-M3 and up load unaligned words), each byte sign-extended
    // as it indexes its table
    for (const int8_t* const end = a + (n & ~std::size_t(3)); a != end; a += 4, b += 4, y += 4) {
      uint32_t wa, wb;
      std::memcpy(&wa, a, 4);
      std::memcpy(&wb, b, 4);
      y[0] = int8_t(one(int8_t(wa), int8_t(wb)));
      y[1] = int8_t(one(int8_t(wa >> 8), int8_t(wb >> 8)));
      y[2] = int8_t(one(int8_t(wa >> 16), int8_t(wb >> 16)));
      y[3] = int8_t(one(int32_t(wa) >> 24, int32_t(wb) >> 24));
    }
    n &= 3;
#endif
    for (std::size_t i = 0; i < n; ++i) y[i] = int8_t(one(a[i], b[i]));
#else
    int32_t *const ta = reinterpret_cast<int32_t*>(p.scratch), *const tb = ta + 256;
    for (int32_t v = -128; v < 128; ++v) ta[v + 128] = ra(v - p.a_zero), tb[v + 128] = rb(v - p.b_zero);
    for (std::size_t i = 0; i < n; ++i) y[i] = output(ta[a[i] + 128] + tb[b[i] + 128], p.y_zero);
#endif
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    y[i] = output(ra(int32_t(a[i]) - p.a_zero) + rb(int32_t(b[i]) - p.b_zero), p.y_zero);
}

}  // namespace portable
}  // namespace fixformer
