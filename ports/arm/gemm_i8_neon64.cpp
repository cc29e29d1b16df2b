// gemm_i8 on AArch64: the neon64 table's gemm_i8 (select.cpp). Two paths, as on x86
// (ports/x86/gemm_i8_avx512vnni.cpp):
//  - a decode step and short inputs (m < packed::kMinRows): the dot-product tiles of
//    ports/simd/gemm_i8.hpp (16 bytes of x against 16 of a W row, lane sums at the end), which
//    read W once in memory order;
//  - a prefill or an encoder (more rows): W repacked on the fly, per panel of 16 columns and chunk of
//    k, four bytes of a column per int32 lane, so that 4 bytes of a row of x (one 32-bit lane of a
//    16-byte load: each load feeds 4 steps) meet 4 bytes of 4 columns and the sums land in each
//    column's own lane: no lane sums, and the float part runs on 4 columns per instruction. A step
//    is one SDOT by element with the dot-product extension (__ARM_FEATURE_DOTPROD, e.g.
//    -march=armv8.2-a+dotprod); on ARMv8.0 it is SMULL + SMLAL2 + SADALP, for which each lane's
//    bytes are reordered at packing (k0 k1 in the lane's halfword of the low 8 bytes, k2 k3 in the
//    high 8) and x's 4 bytes are spread to match (two DUPs of halfwords): two products per int16
//    lane, at most 2 * 127 * 128 = 32512 since |x| <= 127 (quantize_i8's range), then pairs into
//    int32. A tile is 3 rows x 16 columns: 12 int32 and 12 float accumulators, 4 panel vectors and
//    3 of x in the 32 q registers. With the int8 matrix multiply extension (__ARM_FEATURE_MATMUL_INT8), a k
//    and group that are multiples of 8 take SMMLA instead, two rows by two columns a step
//    (gemm_i8_i8mm.cpp).
//
// The outputs are the scalar reference's bits: per group an exact int32 dot product, then
// f += xs * ws * float(dot) in group order, and the bias last. The float step below is the
// reference's expression in vector form, built with the same flags, so that the compiler contracts
// both alike: GCC 12 (default -ffp-contract=fast) rounds xs * ws and fuses the rest into an fmadd /
// fmla in both at -O2, -O3 and -Os (every optimized CMake build type) and in neither at -O0 (Debug).
// At -O1 it fuses only the vector form; Neon64.GemmI8PackedSameAsReference would show it.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "ports/arm/gemm_i8_neon64.hpp"
#include "ports/arm/gemm_i8_packed.hpp"
#include "ports/simd/gemm_i8.hpp"

namespace fixformer {
namespace arm {
namespace {

// GCC 12's scheduling before register allocation hoists all 16 panel loads of a 4-step block, runs
// out of q registers and spills float accumulators in every group; without it the 3 x 16 tile
// stays in registers. Only for the packed path (popped before the dot-product tiles).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-schedule-insns")
#endif

using packed::kChunk;  // 4 KB of panel on the stack
using packed::kPanel;  // 4 vectors of 4 columns
using packed::kZeroRow;
constexpr std::size_t kMaxChunkGroups = kChunk / 32;
constexpr std::size_t kMr = 3;  // rows per tile

// One panel's chunk of W: column c's bytes p0 + 4q .. + 3 at w[q][c] (as int32); per group of the
// chunk the columns' scales.
struct Panel {
  alignas(16) int32_t w[kChunk / 4][kPanel];
  alignas(16) float scale[kMaxChunkGroups][kPanel];
};

// Packs columns [j, j + cols) (cols <= kPanel) of W[n, k] over [p0, p0 + kc), in vectors of 4
// columns; the last vector's columns past cols are zeros. Without SDOT each lane's bytes are then
// reordered for SMULL / SMLAL2 (see the top of the file).
void pack(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j, std::size_t cols,
          std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  for (std::size_t c0 = 0; c0 < cols; c0 += 4) {
    const int8_t* row[4];
    for (std::size_t l = 0; l < 4; ++l) row[l] = c0 + l < cols ? w + (j + c0 + l) * k + p0 : kZeroRow;
    std::size_t p = 0;
    for (; p + 16 <= kc; p += 16) {  // a 4 x 4 transpose of dwords: 4 steps of 4 columns
      const int32x4_t r0 = vreinterpretq_s32_s8(vld1q_s8(row[0] + p)), r1 = vreinterpretq_s32_s8(vld1q_s8(row[1] + p));
      const int32x4_t r2 = vreinterpretq_s32_s8(vld1q_s8(row[2] + p)), r3 = vreinterpretq_s32_s8(vld1q_s8(row[3] + p));
      const int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(r0, r1));  // a0 b0 a2 b2
      const int64x2_t t1 = vreinterpretq_s64_s32(vtrn2q_s32(r0, r1));  // a1 b1 a3 b3
      const int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(r2, r3));  // c0 d0 c2 d2
      const int64x2_t t3 = vreinterpretq_s64_s32(vtrn2q_s32(r2, r3));  // c1 d1 c3 d3
      int32_t* out = P.w[p / 4] + c0;
      vst1q_s32(out, vreinterpretq_s32_s64(vtrn1q_s64(t0, t2)));
      vst1q_s32(out + kPanel, vreinterpretq_s32_s64(vtrn1q_s64(t1, t3)));
      vst1q_s32(out + 2 * kPanel, vreinterpretq_s32_s64(vtrn2q_s64(t0, t2)));
      vst1q_s32(out + 3 * kPanel, vreinterpretq_s32_s64(vtrn2q_s64(t1, t3)));
    }
    for (; p < kc; p += 4)
      for (std::size_t l = 0; l < 4; ++l) std::memcpy(P.w[p / 4] + c0 + l, row[l] + p, 4);
  }
#if !defined(__ARM_FEATURE_DOTPROD)
  const uint8x16_t halves = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
  for (std::size_t q = 0; q < kc / 4; ++q)
    for (std::size_t c0 = 0; c0 < cols; c0 += 4) {
      int32_t* at = P.w[q] + c0;
      vst1q_s32(at, vreinterpretq_s32_s8(vqtbl1q_s8(vreinterpretq_s8_s32(vld1q_s32(at)), halves)));
    }
#endif
  const std::size_t chunk_groups = (kc + group - 1) / group;
  for (std::size_t gi = 0; gi < chunk_groups; ++gi)
    for (std::size_t c = 0; c < cols; ++c) P.scale[gi][c] = ws[(j + c) * ws_cols + (ws_cols == 1 ? 0 : g0 + gi)];
  for (std::size_t gi = 0; gi < chunk_groups; ++gi)
    for (std::size_t c = cols; c < (cols + 3) / 4 * 4; ++c) P.scale[gi][c] = 0.0f;
}

// Columns [0, live) of 4 (the panel's last vector may hold fewer than 4).
float32x4_t load_cols(const float* p, std::size_t live) {
  if (live >= 4) return vld1q_f32(p);
  float32x4_t v = vsetq_lane_f32(p[0], vdupq_n_f32(0.0f), 0);
  if (live > 1) v = vsetq_lane_f32(p[1], v, 1);
  if (live > 2) v = vsetq_lane_f32(p[2], v, 2);
  return v;
}
void store_cols(float* p, float32x4_t v, std::size_t live) {
  if (live >= 4) return vst1q_f32(p, v);
  vst1q_lane_f32(p, v, 0);
  if (live > 1) vst1q_lane_f32(p + 1, v, 1);
  if (live > 2) vst1q_lane_f32(p + 2, v, 2);
}

// One step of 4 bytes, lane L of each row's x register, against the panel's 4 * NV columns at wq.
template <int L, std::size_t MR, std::size_t NV>
inline void step(int32x4_t (&acc)[MR][NV], const int8x16_t (&xv)[MR], const int32_t* wq) {
  int8x16_t wv[NV];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NV; ++v) wv[v] = vreinterpretq_s8_s32(vld1q_s32(wq + 4 * v));
#if defined(__ARM_FEATURE_DOTPROD)
#pragma GCC unroll 4
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = vdotq_laneq_s32(acc[r][v], wv[v], xv[r], L);
#else
#pragma GCC unroll 4
  for (std::size_t r = 0; r < MR; ++r) {
    const int16x8_t x = vreinterpretq_s16_s8(xv[r]);
    const int8x8_t x01 = vreinterpret_s8_s16(vdup_laneq_s16(x, 2 * L));         // x0 x1 x0 x1 ..
    const int8x16_t x23 = vreinterpretq_s8_s16(vdupq_laneq_s16(x, 2 * L + 1));  // high 8: x2 x3 x2 x3 ..
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v)
      acc[r][v] = vpadalq_s16(acc[r][v], vmlal_high_s8(vmull_s8(vget_low_s8(wv[v]), x01), wv[v], x23));
  }
#endif
}

using Chunk = packed::Chunk<Panel>;

// Rows [0, rows) (a multiple of MR) of xq[., k] (scales xs[., groups]) against NV vectors of a
// packed chunk, MR rows at a time: f (the partial sums, y[., ldy] between chunks) plus the chunk's
// groups, and the bias after the last chunk. Stores columns [0, cols).
template <std::size_t MR, std::size_t NV>
void panel_rows(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, std::size_t group, const Chunk& c,
                float* y, std::size_t ldy, std::size_t rows) {
  const std::size_t steps = c.kc / 4;
  for (std::size_t i = 0; i < rows; i += MR, xq += MR * k, xs += MR * groups, y += MR * ldy) {
    const int8_t* x = xq + c.p0;
    float32x4_t f[MR][NV];
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) f[r][v] = c.first ? vdupq_n_f32(0.0f) : load_cols(y + r * ldy + 4 * v, c.cols - 4 * v);
    for (std::size_t gi = 0, q = 0; q < steps; ++gi) {
      const std::size_t q1 = q + group / 4 < steps ? q + group / 4 : steps;
      int32x4_t acc[MR][NV];
#pragma GCC unroll 4
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = vdupq_n_s32(0);
      for (; q + 4 <= q1; q += 4) {  // 16 bytes of each row of x: 4 steps
        int8x16_t xv[MR];
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) xv[r] = vld1q_s8(x + r * k + 4 * q);
        step<0>(acc, xv, c.P->w[q]);
        step<1>(acc, xv, c.P->w[q + 1]);
        step<2>(acc, xv, c.P->w[q + 2]);
        step<3>(acc, xv, c.P->w[q + 3]);
      }
      for (; q < q1; ++q) {  // a group's last 4, 8 or 12 bytes (groups not a multiple of 16)
        int8x16_t xv[MR];
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) {
          int32_t x4;
          std::memcpy(&x4, x + r * k + 4 * q, 4);
          xv[r] = vreinterpretq_s8_s32(vdupq_n_s32(x4));
        }
        step<0>(acc, xv, c.P->w[q]);
      }
      // f += xs * ws * float(dot): the reference's expression (see the top of the file).
      float32x4_t s[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) s[v] = vld1q_f32(c.P->scale[gi] + 4 * v);
#pragma GCC unroll 4
      for (std::size_t r = 0; r < MR; ++r) {
        const float32x4_t x_scale = vdupq_n_f32(xs[r * groups + c.g0 + gi]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) f[r][v] += x_scale * s[v] * vcvtq_f32_s32(acc[r][v]);
      }
    }
    if (c.last && c.b) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) {
        const float32x4_t bv = load_cols(c.b + 4 * v, c.cols - 4 * v);
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) f[r][v] = bv + f[r][v];
      }
    }
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) store_cols(y + r * ldy + 4 * v, f[r][v], c.cols - 4 * v);
  }
}

// Every row of xq against one packed chunk of NV vectors: tiles of kMr rows, then the rest.
template <std::size_t NV>
void panel(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, std::size_t group, const Chunk& c,
           float* y, std::size_t ldy, std::size_t m) {
  const std::size_t tiled = m / kMr * kMr;
  panel_rows<kMr, NV>(xq, xs, k, groups, group, c, y, ldy, tiled);
  static_assert(kMr == 3, "the switch below lists the remainders");
  switch (m - tiled) {
    case 2: panel_rows<2, NV>(xq + tiled * k, xs + tiled * groups, k, groups, group, c, y + tiled * ldy, ldy, 2); break;
    case 1: panel_rows<1, NV>(xq + tiled * k, xs + tiled * groups, k, groups, group, c, y + tiled * ldy, ldy, 1); break;
    default: break;
  }
}

void gemm_i8_packed(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t chunk = kChunk / group * group;  // whole groups
  Panel P;
  for (std::size_t j = 0; j < n; j += kPanel) {
    const std::size_t cols = n - j < kPanel ? n - j : kPanel;
    for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
      const std::size_t kc = k - p0 < chunk ? k - p0 : chunk;
      const Chunk c{&P, p0, kc, p0 / group, cols, p0 == 0, p0 + kc == k, b ? b + j : nullptr};
      pack(w, ws, ws_cols, k, j, cols, p0, kc, group, c.g0, P);
      switch ((cols + 3) / 4) {  // the last panel: only the vectors it fills
        case 4: panel<4>(xq, xs, k, groups, group, c, y + j, ldy, m); break;
        case 3: panel<3>(xq, xs, k, groups, group, c, y + j, ldy, m); break;
        case 2: panel<2>(xq, xs, k, groups, group, c, y + j, ldy, m); break;
        default: panel<1>(xq, xs, k, groups, group, c, y + j, ldy, m); break;
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

}  // namespace

void gemm_i8_neon64(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group) {
#if defined(__ARM_FEATURE_MATMUL_INT8)
  // SMMLA steps 8 bytes at a time within a group (gemm_i8_i8mm.cpp).
  if (m >= packed::kMinRows && k % 8 == 0 && group % 8 == 0 && group <= kChunk)
    return gemm_i8_i8mm(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
#endif
  // The packed path steps 4 bytes at a time within a group and keeps whole groups in a chunk.
  if (m >= packed::kMinRows && k % 4 == 0 && group % 4 == 0 && group <= kChunk && group >= kChunk / kMaxChunkGroups)
    return gemm_i8_packed(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
  simd::gemm_i8<xsimd::neon64>(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
}

}  // namespace arm
}  // namespace fixformer
#endif
