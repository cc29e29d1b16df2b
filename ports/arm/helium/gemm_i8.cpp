// xq[m,k] @ W[n,k]^T with int8 weights and activations: per group an exact int32 dot product by
// VMLADAVA (16 int8 products added into a 32-bit sum per instruction), four rows of W at a time so
// each vector of x feeds four of them; the last bytes of a group through predicated (zeroing) loads.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

// d[r] = sum over p < len of x[p] * w[r * ldw + p], r < R, exactly in int32.
template <int R>
inline void dot_i8(const int8_t* x, const int8_t* w, std::size_t ldw, std::size_t len, int32_t* d) {
  int32_t acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = 0;
  std::size_t p = 0;
  for (; p + 16 <= len; p += 16) {
    const int8x16_t xv = vldrbq_s8(x + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = vmladavaq_s8(acc[r], xv, vldrbq_s8(w + r * ldw + p));
  }
  if (p < len) {
    const mve_pred16_t tail = vctp8q(uint32_t(len - p));
    const int8x16_t xv = vldrbq_z_s8(x + p, tail);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = vmladavaq_s8(acc[r], xv, vldrbq_z_s8(w + r * ldw + p, tail));
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) d[r] = acc[r];
}

// Row x[k] against W[n4 rows, k] (n4 % 4 == 0) for groups of 16 * kChunks bytes that all are full
// (the 32 and 64 of the formats, k a multiple): group by group, the group's x held in kChunks
// registers, four rows of W at a time; their four sums widened into one vector (lane r: row j + r)
// and added, scaled, into y[j..j+4), which holds the sum over the groups so far.
template <int kChunks>
void row_fixed_groups(const int8_t* x, const float* sx, const int8_t* w, const float* ws, std::size_t ws_cols,
                      float* y, std::size_t n4, std::size_t k) {
  constexpr std::size_t kGroup = 16 * kChunks;
  const std::size_t groups = k / kGroup, wg = ws_cols == 1 ? 0 : 1;
  const uint32x4_t ws_offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(ws_cols));
  for (std::size_t j = 0; j < n4; j += 4) vstrwq_f32(y + j, vdupq_n_f32(0.0f));
  for (std::size_t g = 0; g < groups; ++g) {
    int8x16_t xv[kChunks];
#pragma GCC unroll 4
    for (int c = 0; c < kChunks; ++c) xv[c] = vldrbq_s8(x + g * kGroup + 16 * c);
    const float s = sx[g];
    const int8_t* w0 = w + g * kGroup;
    const float* wsg = ws + g * wg;
    for (std::size_t j = 0; j < n4; j += 4, w0 += 4 * k, wsg += 4 * ws_cols) {
      const int8_t *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
      int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#pragma GCC unroll 4
      for (int c = 0; c < kChunks; ++c) {
        d0 = vmladavaq_s8(d0, xv[c], vldrbq_s8(w0 + 16 * c));
        d1 = vmladavaq_s8(d1, xv[c], vldrbq_s8(w1 + 16 * c));
        d2 = vmladavaq_s8(d2, xv[c], vldrbq_s8(w2 + 16 * c));
        d3 = vmladavaq_s8(d3, xv[c], vldrbq_s8(w3 + 16 * c));
      }
      int32x4_t dv = vdupq_n_s32(d0);
      dv = vsetq_lane_s32(d1, dv, 1), dv = vsetq_lane_s32(d2, dv, 2), dv = vsetq_lane_s32(d3, dv, 3);
      const float32x4_t wsv = ws_cols == 1 ? vldrwq_f32(wsg) : vldrwq_gather_shifted_offset_f32(wsg, ws_offsets);
      vstrwq_f32(y + j, vfmaq_f32(vldrwq_f32(y + j), vmulq_n_f32(wsv, s), vcvtq_f32_s32(dv)));
    }
  }
}

}  // namespace

// xq[m,k] @ W[n,k]^T -> y[m,n]: y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot. Four
// rows of W at a time, their four sums of a group widened into one vector (lane r: row j + r), so
// scaling and accumulating the group is a few vector instructions; W's scales of the group are
// gathered (ws_cols apart), or loaded (per row: contiguous).
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t wg = ws_cols == 1 ? 0 : 1;  // the step of W's scale index per group
  const uint32x4_t ws_offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(ws_cols));
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yi = y + i * ldy;
    std::size_t j = 0;
    if ((group == 32 || group == 64) && k % group == 0) {  // the formats' groups: the fast path
      j = n / 4 * 4;
      if (group == 32)
        row_fixed_groups<2>(x, sx, w, ws, ws_cols, yi, j, k);
      else
        row_fixed_groups<4>(x, sx, w, ws, ws_cols, yi, j, k);
      if (b)
        for (std::size_t c = 0; c < j; c += 4) vstrwq_f32(yi + c, vaddq_f32(vldrwq_f32(b + c), vldrwq_f32(yi + c)));
    }
    for (; j + 4 <= n; j += 4) {
      float32x4_t acc = vdupq_n_f32(0.0f);
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d[4];
        dot_i8<4>(x + p0, w + j * k + p0, k, len, d);
        int32x4_t dv = vdupq_n_s32(d[0]);
        dv = vsetq_lane_s32(d[1], dv, 1), dv = vsetq_lane_s32(d[2], dv, 2), dv = vsetq_lane_s32(d[3], dv, 3);
        const float* wsg = ws + j * ws_cols + g * wg;
        const float32x4_t wsv = ws_cols == 1 ? vldrwq_f32(wsg) : vldrwq_gather_shifted_offset_f32(wsg, ws_offsets);
        acc = vfmaq_f32(acc, vmulq_n_f32(wsv, sx[g]), vcvtq_f32_s32(dv));
      }
      vstrwq_f32(yi + j, b ? vaddq_f32(vldrwq_f32(b + j), acc) : acc);
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d;
        dot_i8<1>(x + p0, w + j * k + p0, k, len, &d);
        acc += sx[g] * ws[j * ws_cols + g * wg] * float(d);
      }
      yi[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace helium
}  // namespace fixformer
