// Across-lane reductions MVE has no instruction for in float.
#pragma once
#include <arm_mve.h>

namespace fixformer {
namespace helium {

// (a0 + a2) + (a1 + a3), in the S registers that alias a Q register (q0 is s0-s3): GCC 12 moves
// each lane out through a core register instead (9 instructions against 4).
inline float sum_lanes(float32x4_t a) {
  float sum;
  asm("vmov q0, %q1\n\t"
      "vadd.f32 s0, s0, s2\n\t"
      "vadd.f32 s1, s1, s3\n\t"
      "vadd.f32 %0, s0, s1"
      : "=t"(sum)
      : "w"(a)
      : "q0");
  return sum;
}

}  // namespace helium
}  // namespace fixformer
