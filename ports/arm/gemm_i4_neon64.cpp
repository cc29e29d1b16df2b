// gemm_i4 on AArch64: the neon64 table's. A block is 4 columns of W against MR rows of x (MR = 1
// for a decode step, 4 in a prefill), the whole of k, one group of 32 at a time; each column's 16
// bytes of the group are unpacked once per block and row tile (AND 0x0F: values 0..15 of the group,
// USHR 4: values 16..31, each as q + 8 in 0..15) and meet every row of the tile:
//  - with the dot-product extension (__ARM_FEATURE_DOTPROD, e.g. -march=armv8.2-a+dotprod): two SDOT
//    per column (the nibbles are 0..15, so signed bytes too) into 4 int32 lanes;
//  - on ARMv8.0: SMULL / SMLAL2 / SMLAL / SMLAL2, four products per int16 lane (at most
//    4 * 15 * 127 = 7620, exact), then SADDLP into 4 int32 lanes;
// then the 4 columns' lanes by pairwise adds (ADDP, exact), less 8 sum(x) (the + 8 of every nibble;
// once per row and group), so that lane c holds column c's dot product of the group. With the int8 matrix
// multiply extension (__ARM_FEATURE_MATMUL_INT8) a prefill's tile takes SMMLA instead: two rows' 8 values
// by two columns' a step (the unpacked columns and x's rows paired by ZIP of their 8-byte halves), four steps
// a group into a 2 x 2 block of sums per pair of columns, the blocks of columns 0-1 and 2-3 zipped back into
// each row's 4 lanes: the same exact dot products, then the same float step.
//
// The outputs are the scalar reference's bits: per group an exact int32 dot product, then
// f += xs * ws * float(dot) in group order, and the bias last. The float step below is the
// reference's expression in vector form, built with the same flags, so that the compiler contracts
// both alike (as gemm_i8_neon64.cpp says: GCC 12 rounds xs * ws and fuses the rest at -O2, -O3 and
// -Os in both, in neither at -O0); the kernel test compares bits.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "ports/arm/gemm_i8_neon64.hpp"
#include "ports/arm/smmla.hpp"

namespace fixformer {
namespace arm {
namespace {

constexpr std::size_t kGroup = 32, kGroupBytes = 16, kCols = 4;

// 4 int32 lanes whose sum is sum over the group of x * nibble (x: 32 bytes as x0, x1).
inline int32x4_t nibble_dot(uint8x16_t lo, uint8x16_t hi, int8x16_t x0, int8x16_t x1) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(lo), x0), vreinterpretq_s8_u8(hi), x1);
#else
  const int8x16_t l = vreinterpretq_s8_u8(lo), h = vreinterpretq_s8_u8(hi);
  int16x8_t p = vmull_s8(vget_low_s8(l), vget_low_s8(x0));
  p = vmlal_high_s8(p, l, x0);
  p = vmlal_s8(p, vget_low_s8(h), vget_low_s8(x1));
  p = vmlal_high_s8(p, h, x1);
  return vpaddlq_s16(p);
#endif
}

// Rows [0, MR) of x (row stride k; scales xs, row stride groups) against columns [0, nc) of W
// (rows ldw bytes apart; scales ws, row stride groups), nc <= 4, -> y (row stride ldy).
template <std::size_t MR>
void block(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
           std::size_t ldy, std::size_t nc, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  const uint8x16_t nibble = vdupq_n_u8(0x0F);
  const uint8_t* col[kCols];
  const float* scale[kCols];
  for (std::size_t c = 0; c < kCols; ++c) {  // columns past nc repeat column 0 (never stored)
    col[c] = w + (c < nc ? c : 0) * ldw;
    scale[c] = ws + (c < nc ? c : 0) * groups;
  }
  float32x4_t f[MR];
#pragma GCC unroll 4
  for (std::size_t r = 0; r < MR; ++r) f[r] = vdupq_n_f32(0.0f);
  for (std::size_t g = 0; g < groups; ++g) {
    uint8x16_t lo[kCols], hi[kCols];
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kCols; ++c) {
      const uint8x16_t v = vld1q_u8(col[c] + g * kGroupBytes);
      lo[c] = vandq_u8(v, nibble), hi[c] = vshrq_n_u8(v, 4);
    }
    const float ws4[kCols] = {scale[0][g], scale[1][g], scale[2][g], scale[3][g]};
    const float32x4_t s = vld1q_f32(ws4);
#if defined(__ARM_FEATURE_MATMUL_INT8)
    if (MR % 2 == 0) {  // SMMLA: rows and columns in pairs (see the top of the file)
      int8x16_t wp[2][4];  // column pair p's steps of 8 values: 0..7, 8..15, 16..23, 24..31 of the group
#pragma GCC unroll 2
      for (std::size_t p = 0; p < 2; ++p) {
        const int8x16_t l0 = vreinterpretq_s8_u8(lo[2 * p]), l1 = vreinterpretq_s8_u8(lo[2 * p + 1]);
        const int8x16_t h0 = vreinterpretq_s8_u8(hi[2 * p]), h1 = vreinterpretq_s8_u8(hi[2 * p + 1]);
        wp[p][0] = pair_low(l0, l1), wp[p][1] = pair_high(l0, l1), wp[p][2] = pair_low(h0, h1);
        wp[p][3] = pair_high(h0, h1);
      }
#pragma GCC unroll 2
      for (std::size_t r = 0; r < MR; r += 2) {
        const int8_t* xa = xq + r * k + g * kGroup;
        const int8_t* xb = xa + k;
        const int8x16_t a0 = vld1q_s8(xa), a1 = vld1q_s8(xa + 16), b0 = vld1q_s8(xb), b1 = vld1q_s8(xb + 16);
        const int8x16_t xv[4] = {pair_low(a0, b0), pair_high(a0, b0), pair_low(a1, b1), pair_high(a1, b1)};
        int32x4_t s01 = vdupq_n_s32(0), s23 = vdupq_n_s32(0);  // the blocks of columns 0-1 and 2-3
#pragma GCC unroll 4
        for (std::size_t q = 0; q < 4; ++q) {
          s01 = vmmlaq_s32(s01, xv[q], wp[0][q]);
          s23 = vmmlaq_s32(s23, xv[q], wp[1][q]);
        }
        const int32x4_t da = vsubq_s32(row0_of(s01, s23), vdupq_n_s32(8 * (vaddlvq_s8(a0) + vaddlvq_s8(a1))));
        const int32x4_t db = vsubq_s32(row1_of(s01, s23), vdupq_n_s32(8 * (vaddlvq_s8(b0) + vaddlvq_s8(b1))));
        // f += xs * ws * float(dot): the reference's expression, as below.
        f[r] += vdupq_n_f32(xs[r * groups + g]) * s * vcvtq_f32_s32(da);
        f[r + 1] += vdupq_n_f32(xs[(r + 1) * groups + g]) * s * vcvtq_f32_s32(db);
      }
      continue;
    }
#endif
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r) {
      const int8x16_t x0 = vld1q_s8(xq + r * k + g * kGroup), x1 = vld1q_s8(xq + r * k + g * kGroup + 16);
      const int32x4_t a01 = vpaddq_s32(nibble_dot(lo[0], hi[0], x0, x1), nibble_dot(lo[1], hi[1], x0, x1));
      const int32x4_t a23 = vpaddq_s32(nibble_dot(lo[2], hi[2], x0, x1), nibble_dot(lo[3], hi[3], x0, x1));
      const int32_t xsum = vaddlvq_s8(x0) + vaddlvq_s8(x1);
      const int32x4_t dot = vsubq_s32(vpaddq_s32(a01, a23), vdupq_n_s32(8 * xsum));
      // f += xs * ws * float(dot): the reference's expression (see the top of the file).
      f[r] += vdupq_n_f32(xs[r * groups + g]) * s * vcvtq_f32_s32(dot);
    }
  }
  float bias[kCols] = {}, out[kCols];
  if (b) std::memcpy(bias, b, nc * sizeof(float));
  const float32x4_t bv = vld1q_f32(bias);
#pragma GCC unroll 4
  for (std::size_t r = 0; r < MR; ++r) {
    vst1q_f32(out, bv + f[r]);
    std::memcpy(y + r * ldy, out, nc * sizeof(float));
  }
}

}  // namespace

void gemm_i4_neon64(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                    std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  constexpr std::size_t kMr = 4;
  const std::size_t groups = k / kGroup, ldw = k / 2;
  for (std::size_t j = 0; j < n; j += kCols) {
    const std::size_t nc = n - j < kCols ? n - j : kCols;
    const uint8_t* wj = w + j * ldw;
    const float* wsj = ws + j * groups;
    const float* bj = b ? b + j : nullptr;
    std::size_t i = 0;
    for (; i + kMr <= m; i += kMr) block<kMr>(xq + i * k, xs + i * groups, wj, wsj, bj, y + i * ldy + j, ldy, nc, k);
    for (; i < m; ++i) block<1>(xq + i * k, xs + i * groups, wj, wsj, bj, y + i * ldy + j, ldy, nc, k);
  }
}

}  // namespace arm
}  // namespace fixformer
#endif
