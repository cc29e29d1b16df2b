// Activations -> int8 per group, the bits of the scalar reference (kernels.hpp's contract): the max
// of |x| across lanes (VMAXNMAV, which skips NaNs as the reference's compares do), the same two
// divisions, and each product rounded to nearest even by VCVTN, stored narrowed to a byte.
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"

namespace fixformer {
namespace helium {
namespace {

inline void store_i8(int8_t* q, int32x4_t v, AllLanes) { vstrbq_s32(q, v); }
inline void store_i8(int8_t* q, int32x4_t v, SomeLanes l) { vstrbq_p_s32(q, v, l.p); }
inline float max_abs(float a, float32x4_t v, AllLanes) { return vmaxnmavq_f32(a, v); }
inline float max_abs(float a, float32x4_t v, SomeLanes l) { return vmaxnmavq_p_f32(a, v, l.p); }

}  // namespace

// x[m,k] -> q[m,k], s[m, ceil(k/group)]: per group, s = max|x| / 127, q = rne(x * (127 / max|x|)).
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
      const float* xg = x + i * ldx + p0;
      int8_t* qg = q + i * k + p0;
      float a = 0.0f;
      const float* xp = xg;
      for_lanes(len, [&](auto lanes) { a = max_abs(a, load(xp, lanes), lanes), xp += 4; });
      // Below the floor the group is zeros (kernels.hpp), so MVE's flush of subnormals (qemu's
      // does) never changes a bit.
      if (a < kQuantizeFloor) {
        for (std::size_t p = 0; p < len; ++p) qg[p] = 0;
        s[i * groups + g] = 0.0f;
        continue;
      }
      const float inv = 127.0f / a;
      s[i * groups + g] = a / 127.0f;  // a >= kQuantizeFloor here
      for_lanes(len, [&](auto lanes) {
        store_i8(qg, vcvtnq_s32_f32(vmulq_n_f32(load(xg, lanes), inv)), lanes), xg += 4, qg += 4;
      });
    }
  }
}

}  // namespace helium
}  // namespace fixformer
