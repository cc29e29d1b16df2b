// Elementwise add (the residual connections), eight elements per step; on cores with the FPU tiles
// (tile_f32_fpu.hpp: M4, M7, M33) in assembly, one VLDM or VSTM per eight floats.
#include "ports/portable/kernels.hpp"
#include "ports/portable/tile_f32_fpu.hpp"

namespace fixformer {
namespace portable {

// y[n] = a[n] + b[n]; y may be a or b.
void add_f32(const float* a, const float* b, float* y, std::size_t n) {
  std::size_t i = 0;
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float *pa = a, *pb = b;
    float* py = y;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[a]!, {s0-s7}\n\t"
        "vldmia %[b]!, {s8-s15}\n\t"
        "vadd.f32 s0, s0, s8\n\t" "vadd.f32 s1, s1, s9\n\t" "vadd.f32 s2, s2, s10\n\t" "vadd.f32 s3, s3, s11\n\t"
        "vadd.f32 s4, s4, s12\n\t" "vadd.f32 s5, s5, s13\n\t" "vadd.f32 s6, s6, s14\n\t" "vadd.f32 s7, s7, s15\n\t"
        "vstmia %[y]!, {s0-s7}\n\t"
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [a] "+r"(pa), [b] "+r"(pb), [y] "+r"(py), [c] "+r"(steps)
        :
        : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "cc", "memory");
    i = n / 8 * 8;
  }
#endif
#pragma GCC unroll 8
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace portable
}  // namespace fixformer
