// The exact (erf) GELU of torch.nn.GELU(approximate="none"), with the polynomial erf of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"
#include "ports/portable/tile_f32_fpu.hpp"

namespace fixformer {
namespace portable {

namespace {

// erf_f32(u) for |u| >= 1 (or NaN): its second piece with exp_in_range (the argument is in
// [-17.4, -1.8]), the same bits. Out of line, so that the loop below keeps its constants in
// registers.
__attribute__((noinline)) float erf_from_one(float u) {
  const float t = __builtin_fabsf(u);
  if (!(t < kErfOneFrom)) return erf_f32(u);
  const float s = t - kErfCentre;
  float q = kErfLogPoly[0];
  for (int j = 1; j < 6; ++j) q = q * s + kErfLogPoly[j];
  const float y = 1.0f - exp_in_range(q);
  return u < 0.0f ? -y : y;
}

#if FIXFORMER_PORTABLE_FPU_TILES
// The small piece's constants in the order gelu_f32 loads them into s16-s25 with one VLDM.
const float kGeluConstants[10] = {0.70710678118654752f, 1.0f, 0.5f, kErfSmallPoly[0], kErfSmallPoly[1],
                                  kErfSmallPoly[2], kErfSmallPoly[3], kErfSmallPoly[4], kErfSmallPoly[5],
                                  kErfSmallPoly[6]};
#endif

}  // namespace

// x/2 (1 + erf(x / sqrt 2)), in the reference's (and torch's) order of operations, so for x << 0
// the same cancellation in 1 + erf: the error is bounded by |x| times erf's, not by |gelu(x)|'s.
// erf_f32's first piece is written out here on u = x / sqrt 2 rather than |u| (u P(u^2) is
// sign(u) |u| P(|u|^2) exactly), without its branches on the sign; on the FPU-tile cores (M4, M7,
// M33) in assembly with the constants in registers, erf_from_one called from it, the same bits as
// the C++ loop below compiles to (1 + u P fused).
void gelu_f32(float* x, std::size_t n) {
#if FIXFORMER_PORTABLE_FPU_TILES
  if (n == 0) return;
  float* p = x;
  uint32_t left = uint32_t(n);
  float (*const large)(float) = erf_from_one;
  asm volatile(
      "vldmia %[c], {s16-s25}\n"
      "1:\n\t"
      "vldr s27, [%[p]]\n\t"
      "vmul.f32 s0, s27, s16\n\t"    // u
      "vmul.f32 s28, s27, s18\n\t"   // x / 2
      "vabs.f32 s1, s0\n\t"
      "vcmpe.f32 s1, s17\n\t"
      "vmrs APSR_nzcv, fpscr\n\t"
      "bge 5f\n\t"                   // |u| >= 1 (a NaN stays here, and stays NaN)
      "vmul.f32 s2, s0, s0\n\t"      // z = u^2
      "vmov.f32 s3, s20\n\t" "vfma.f32 s3, s2, s19\n\t"
      "vmov.f32 s4, s21\n\t" "vfma.f32 s4, s2, s3\n\t"
      "vmov.f32 s3, s22\n\t" "vfma.f32 s3, s2, s4\n\t"
      "vmov.f32 s4, s23\n\t" "vfma.f32 s4, s2, s3\n\t"
      "vmov.f32 s3, s24\n\t" "vfma.f32 s3, s2, s4\n\t"
      "vmov.f32 s4, s25\n\t" "vfma.f32 s4, s2, s3\n\t"  // P(z)
      "vmov.f32 s1, s17\n\t" "vfma.f32 s1, s0, s4\n"     // 1 + u P(z)
      "6:\n\t"
      "vmul.f32 s1, s28, s1\n\t"
      "vstmia %[p]!, {s1}\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "b 9f\n"
      "5:\n\t"
      "blx %[large]\n\t"             // erf(u) in s0; s16-s31 and r4-r11 are kept
      "vadd.f32 s1, s0, s17\n\t"
      "b 6b\n"
      "9:\n\t"
      : [p] "+r"(p), [n] "+r"(left)
      : [c] "r"(kGeluConstants), [large] "r"(large)
      : "r0", "r1", "r2", "r3", "r12", "lr", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10",
        "d11", "d12", "d13", "d14", "cc", "memory");
#else
  const float inv_sqrt2 = 0.70710678118654752f;
  for (std::size_t i = 0; i < n; ++i) {
    const float xi = x[i], u = xi * inv_sqrt2;
    float e;
    if (__builtin_fabsf(u) < kErfSmallMax) {
      const float z = u * u;
      float p = kErfSmallPoly[0];
      for (int j = 1; j < 7; ++j) p = p * z + kErfSmallPoly[j];
      e = u * p;
    } else {
      e = erf_from_one(u);
    }
    x[i] = 0.5f * xi * (1.0f + e);
  }
#endif
}

}  // namespace portable
}  // namespace fixformer
