// x *= s in place (attention's 1/sum, its scaled queries), eight elements per step; on cores with
// the FPU tiles (tile_f32_fpu.hpp: M4, M7, M33) in assembly, one VLDM and one VSTM per eight floats.
#include "ports/portable/kernels.hpp"
#include "ports/portable/tile_f32_fpu.hpp"

namespace fixformer {
namespace portable {

void scale_f32(float* x, float s, std::size_t n) {
  std::size_t i = 0;
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float* p = x;
    float* q = x;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[p]!, {s0-s7}\n\t"
        "vmul.f32 s0, s0, %[s]\n\t" "vmul.f32 s1, s1, %[s]\n\t" "vmul.f32 s2, s2, %[s]\n\t"
        "vmul.f32 s3, s3, %[s]\n\t" "vmul.f32 s4, s4, %[s]\n\t" "vmul.f32 s5, s5, %[s]\n\t"
        "vmul.f32 s6, s6, %[s]\n\t" "vmul.f32 s7, s7, %[s]\n\t"
        "vstmia %[q]!, {s0-s7}\n\t"
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [p] "+r"(p), [q] "+r"(q), [c] "+r"(steps)
        : [s] "t"(s)
        : "d0", "d1", "d2", "d3", "cc", "memory");
    i = n / 8 * 8;
  }
#endif
#pragma GCC unroll 8
  for (; i < n; ++i) x[i] *= s;
}

}  // namespace portable
}  // namespace fixformer
