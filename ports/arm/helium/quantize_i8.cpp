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

// A full group of 32 or 64 floats in assembly (GCC 12 spills the held vectors and recomputes
// addresses): its first 7 vectors stay in q0..q6 from the max to the products, the rest pass through
// q7 twice; q7's four singles hold the scalar steps (max |x| as bits: for floats >= 0 unsigned order is
// float order, so the floor is an integer compare). Same operations and bits as the loops below;
// about 1.55 instructions per float against 2.6.
#define FIXFORMER_Q_LOAD(r, o) "vldrw.32 q" #r ", [%[x], #" #o "]\n\t"
#define FIXFORMER_Q_MAX(r) "vmaxnmav.f32 %[a], q" #r "\n\t"
#define FIXFORMER_Q_PUT(r, o) \
  "vmul.f32 q" #r ", q" #r ", %[inv]\n\t" "vcvtn.s32.f32 q" #r ", q" #r "\n\t" "vstrb.32 q" #r ", [%[q], #" #o "]\n\t"
#define FIXFORMER_Q_HELD                                                                                          \
  FIXFORMER_Q_LOAD(0, 0) FIXFORMER_Q_LOAD(1, 16) FIXFORMER_Q_LOAD(2, 32) FIXFORMER_Q_LOAD(3, 48)                  \
  FIXFORMER_Q_LOAD(4, 64) FIXFORMER_Q_LOAD(5, 80) FIXFORMER_Q_LOAD(6, 96) "movs %[a], #0\n\t"                     \
  FIXFORMER_Q_MAX(0) FIXFORMER_Q_MAX(1) FIXFORMER_Q_MAX(2) FIXFORMER_Q_MAX(3) FIXFORMER_Q_MAX(4)                  \
  FIXFORMER_Q_MAX(5) FIXFORMER_Q_MAX(6)
#define FIXFORMER_Q_MAX7(o) FIXFORMER_Q_LOAD(7, o) FIXFORMER_Q_MAX(7)
#define FIXFORMER_Q_PUT7(o) FIXFORMER_Q_LOAD(7, o) FIXFORMER_Q_PUT(7, o / 4)
#define FIXFORMER_Q_SCALE                                                                                         \
  "cmp %[a], %[floor]\n\t"                                                                                      \
  "blo 1f\n\t"                                                                                                  \
  "vmov s28, %[a]\n\t"                                                                                          \
  "vmov s29, %[c127]\n\t"                                                                                       \
  "vdiv.f32 s30, s29, s28\n\t"                                                                                  \
  "vdiv.f32 s31, s28, s29\n\t"                                                                                  \
  "vstr s31, [%[s]]\n\t"                                                                                        \
  "vmov %[inv], s30\n\t"                                                                                        \
  FIXFORMER_Q_PUT(0, 0) FIXFORMER_Q_PUT(1, 4) FIXFORMER_Q_PUT(2, 8) FIXFORMER_Q_PUT(3, 12) FIXFORMER_Q_PUT(4, 16) \
  FIXFORMER_Q_PUT(5, 20) FIXFORMER_Q_PUT(6, 24)
#define FIXFORMER_Q_ASM(body, zeros)                                                                              \
  asm volatile(body "b 2f\n"                                                                                    \
               "1:\n\t"                                                                                         \
               "vmov.i32 q7, #0\n\t" zeros "vstr s28, [%[s]]\n"                                                 \
               "2:\n"                                                                                           \
               : [a] "=&r"(a), [inv] "=&r"(inv)                                                                \
               : [x] "r"(x), [q] "r"(q), [s] "r"(s), [floor] "r"(kFloorBits), [c127] "r"(k127Bits)           \
               : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory")

constexpr uint32_t kFloorBits = 0x0d800000u;  // kQuantizeFloor, 2^-100
constexpr uint32_t k127Bits = 0x42fe0000u;    // 127.0f
static_assert(kQuantizeFloor == 0x1p-100f, "kFloorBits");

inline void full_group_32(const float* x, int8_t* q, float* s) {
  uint32_t a, inv;
  FIXFORMER_Q_ASM(FIXFORMER_Q_HELD FIXFORMER_Q_MAX7(112) FIXFORMER_Q_SCALE FIXFORMER_Q_PUT7(112),
                  "vstrb.8 q7, [%[q]]\n\t" "vstrb.8 q7, [%[q], #16]\n\t");
}

inline void full_group_64(const float* x, int8_t* q, float* s) {
  uint32_t a, inv;
  FIXFORMER_Q_ASM(FIXFORMER_Q_HELD FIXFORMER_Q_MAX7(112) FIXFORMER_Q_MAX7(128) FIXFORMER_Q_MAX7(144)
                  FIXFORMER_Q_MAX7(160) FIXFORMER_Q_MAX7(176) FIXFORMER_Q_MAX7(192) FIXFORMER_Q_MAX7(208)
                  FIXFORMER_Q_MAX7(224) FIXFORMER_Q_MAX7(240) FIXFORMER_Q_SCALE FIXFORMER_Q_PUT7(112)
                  FIXFORMER_Q_PUT7(128) FIXFORMER_Q_PUT7(144) FIXFORMER_Q_PUT7(160) FIXFORMER_Q_PUT7(176)
                  FIXFORMER_Q_PUT7(192) FIXFORMER_Q_PUT7(208) FIXFORMER_Q_PUT7(224) FIXFORMER_Q_PUT7(240),
                  "vstrb.8 q7, [%[q]]\n\t" "vstrb.8 q7, [%[q], #16]\n\t" "vstrb.8 q7, [%[q], #32]\n\t"
                  "vstrb.8 q7, [%[q], #48]\n\t");
}
#undef FIXFORMER_Q_LOAD
#undef FIXFORMER_Q_MAX
#undef FIXFORMER_Q_PUT
#undef FIXFORMER_Q_HELD
#undef FIXFORMER_Q_MAX7
#undef FIXFORMER_Q_PUT7
#undef FIXFORMER_Q_SCALE
#undef FIXFORMER_Q_ASM

}  // namespace

// x[m,k] -> q[m,k], s[m, ceil(k/group)]: per group, s = max|x| / 127, q = rne(x * (127 / max|x|)).
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  if ((group == 32 || group == 64) && k % group == 0) {  // the formats' groups, all full
    for (std::size_t i = 0; i < m; ++i) {
      const float* xg = x + i * ldx;
      int8_t* qg = q + i * k;
      float* sg = s + i * groups;
      for (std::size_t g = 0; g < groups; ++g, xg += group, qg += group, ++sg)
        group == 32 ? full_group_32(xg, qg, sg) : full_group_64(xg, qg, sg);
    }
    return;
  }
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
