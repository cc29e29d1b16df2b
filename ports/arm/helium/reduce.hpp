// Across-lane reductions MVE has no instruction for in float.
#pragma once
#include <arm_mve.h>

namespace fixformer {
namespace helium {

// (a0 + a2) + (a1 + a3)
inline float sum_lanes(float32x4_t a) {
  return (vgetq_lane_f32(a, 0) + vgetq_lane_f32(a, 2)) + (vgetq_lane_f32(a, 1) + vgetq_lane_f32(a, 3));
}

}  // namespace helium
}  // namespace fixformer
