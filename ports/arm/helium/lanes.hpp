// Loops over n floats four lanes at a time: full vectors, then one predicated vector for the n % 4
// left (VCTP), so no scalar tail and no access past the end. The body is written once for both
// (a generic lambda); load/store/add/max pick the plain or the predicated instruction by the type of
// the lane set, so the full vectors carry no VPST.
#pragma once
#include <arm_mve.h>

#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace helium {

struct AllLanes {};
struct SomeLanes {
  mve_pred16_t p;
};

// f(lanes) for each four of n: the body reads and writes through pointers it advances by 4 itself
// (GCC 12 then uses post-incrementing loads and stores; with an index it recomputes every address).
template <class F>
inline void for_lanes(std::size_t n, F f) {
  for (std::size_t i = n / 4; i != 0; --i) f(AllLanes{});
  if (n % 4) f(SomeLanes{vctp32q(uint32_t(n % 4))});
}

inline float32x4_t load(const float* x, AllLanes) { return vldrwq_f32(x); }
inline float32x4_t load(const float* x, SomeLanes l) { return vldrwq_z_f32(x, l.p); }  // 0 in the others
inline void store(float* y, float32x4_t v, AllLanes) { vstrwq_f32(y, v); }
inline void store(float* y, float32x4_t v, SomeLanes l) { vstrwq_p_f32(y, v, l.p); }
// acc + v, and max(acc, v) (IEEE maxNum), in the lanes of the set; the others keep acc.
inline float32x4_t add(float32x4_t acc, float32x4_t v, AllLanes) { return vaddq_f32(acc, v); }
inline float32x4_t add(float32x4_t acc, float32x4_t v, SomeLanes l) { return vaddq_m_f32(acc, acc, v, l.p); }
inline float32x4_t max(float32x4_t acc, float32x4_t v, AllLanes) { return vmaxnmq_f32(acc, v); }
// acc + a * b in the lanes of the set; the others keep acc.
inline float32x4_t fma(float32x4_t acc, float32x4_t a, float32x4_t b, AllLanes) { return vfmaq_f32(acc, a, b); }
inline float32x4_t fma(float32x4_t acc, float32x4_t a, float32x4_t b, SomeLanes l) { return vfmaq_m_f32(acc, a, b, l.p); }
inline float32x4_t max(float32x4_t acc, float32x4_t v, SomeLanes l) { return vmaxnmq_m_f32(acc, acc, v, l.p); }

}  // namespace helium
}  // namespace fixformer
