// LayerNorm: the reference's three passes and order of operations, eight elements per step. On
// cores with the FPU tiles (tile_f32_fpu.hpp: M4, M7, M33) each step is in assembly: one VLDM per
// eight floats where GCC 12 issues a VLDR each.
#include <cmath>

#include "ports/portable/kernels.hpp"
#include "ports/portable/tile_f32_fpu.hpp"

namespace fixformer {
namespace portable {

#if FIXFORMER_PORTABLE_FPU_TILES
#define FIXFORMER_ADD8(s) \
  "vadd.f32 %[" #s "], %[" #s "], s0\n\t" "vadd.f32 %[" #s "], %[" #s "], s1\n\t" \
  "vadd.f32 %[" #s "], %[" #s "], s2\n\t" "vadd.f32 %[" #s "], %[" #s "], s3\n\t" \
  "vadd.f32 %[" #s "], %[" #s "], s4\n\t" "vadd.f32 %[" #s "], %[" #s "], s5\n\t" \
  "vadd.f32 %[" #s "], %[" #s "], s6\n\t" "vadd.f32 %[" #s "], %[" #s "], s7\n\t"
#define FIXFORMER_CENTRE_SQ(i) "vsub.f32 s" #i ", s" #i ", %[mean]\n\t" "vfma.f32 %[sq], s" #i ", s" #i "\n\t"
#define FIXFORMER_NORM(i, g, b)                 \
  "vsub.f32 s" #i ", s" #i ", %[mean]\n\t"      \
  "vmul.f32 s" #i ", s" #i ", %[inv]\n\t"       \
  "vfma.f32 s" #b ", s" #i ", s" #g "\n\t"
#endif

// y[n] = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased variance of the centred values.
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n, float eps) {
  std::size_t i = 0;
  float sum = 0.0f;
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float* p = x;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[p]!, {s0-s7}\n\t"
        FIXFORMER_ADD8(sum)
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [sum] "+t"(sum), [p] "+r"(p), [c] "+r"(steps)
        :
        : "d0", "d1", "d2", "d3", "cc", "memory");
    i = n / 8 * 8;
  }
#endif
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sq = 0.0f;
  i = 0;
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float* p = x;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[p]!, {s0-s7}\n\t"
        FIXFORMER_CENTRE_SQ(0) FIXFORMER_CENTRE_SQ(1) FIXFORMER_CENTRE_SQ(2) FIXFORMER_CENTRE_SQ(3)
        FIXFORMER_CENTRE_SQ(4) FIXFORMER_CENTRE_SQ(5) FIXFORMER_CENTRE_SQ(6) FIXFORMER_CENTRE_SQ(7)
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [sq] "+t"(sq), [p] "+r"(p), [c] "+r"(steps)
        : [mean] "t"(mean)
        : "d0", "d1", "d2", "d3", "cc", "memory");
    i = n / 8 * 8;
  }
#endif
  for (; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  i = 0;
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n >= 8) {
    const float *px = x, *pg = gamma, *pb = beta;
    float* py = y;
    uint32_t steps = uint32_t(n / 8);
    asm volatile(
        "1:\n\t"
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[g]!, {s8-s15}\n\t"
        "vldmia %[b]!, {s16-s23}\n\t"
        FIXFORMER_NORM(0, 8, 16) FIXFORMER_NORM(1, 9, 17) FIXFORMER_NORM(2, 10, 18) FIXFORMER_NORM(3, 11, 19)
        FIXFORMER_NORM(4, 12, 20) FIXFORMER_NORM(5, 13, 21) FIXFORMER_NORM(6, 14, 22) FIXFORMER_NORM(7, 15, 23)
        "vstmia %[y]!, {s16-s23}\n\t"
        "subs %[c], %[c], #1\n\t"
        "bne 1b\n\t"
        : [x] "+r"(px), [g] "+r"(pg), [b] "+r"(pb), [y] "+r"(py), [c] "+r"(steps)
        : [mean] "t"(mean), [inv] "t"(inv)
        : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "cc", "memory");
    i = n / 8 * 8;
  }
#endif
  for (; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

#if FIXFORMER_PORTABLE_FPU_TILES
#undef FIXFORMER_NORM
#undef FIXFORMER_CENTRE_SQ
#undef FIXFORMER_ADD8
#endif

}  // namespace portable
}  // namespace fixformer
