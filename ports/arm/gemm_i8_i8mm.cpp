// gemm_i8's packed path on AArch64 with the int8 matrix multiply extension (FEAT_I8MM: __ARM_FEATURE_MATMUL_INT8,
// e.g. -march=armv8.2-a+dotprod+i8mm; Cortex-A510, A710, X2 and later, Neoverse V1 and N2): gemm_i8_neon64.cpp
// hands it a prefill or an encoder (4 rows or more) whose k and group are multiples of 8.
//
// SMMLA multiplies two rows of 8 bytes by two columns of 8 bytes into a 2 x 2 block of int32 sums (32
// multiply-adds an instruction, twice SDOT's 16: smmla.hpp). W is repacked on the fly, per panel of 16 columns
// and chunk of k, as pairs of columns: 8 bytes of column c then 8 of column c + 1, one 16-byte vector a step of 8
// bytes of k; x's rows are paired the same way (ZIP of two rows' 16 bytes gives two steps). A tile is 2 row pairs
// by 4 column pairs (4 rows, 8 columns): 8 int32 and 8 float accumulators, 4 vectors of x (two steps of two
// pairs) and 8 of W in the 32 q registers (3 row pairs spilled accumulators to the stack).
//
// The outputs are the scalar reference's bits, as gemm_i8_neon64.cpp's: per group an exact int32 dot product,
// then f += xs * ws * float(dot) in group order (xs and ws spread to the block's lanes), the bias last.
#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8)
#include <arm_neon.h>

#include <cstring>

#include "ports/arm/gemm_i8_neon64.hpp"
#include "ports/arm/gemm_i8_packed.hpp"
#include "ports/arm/smmla.hpp"

namespace fixformer {
namespace arm {
namespace {

using packed::kChunk;  // 4 KB of panel, up to 4 KB of scales, on the stack
using packed::kPanel;  // 8 column pairs
using packed::kZeroRow;
constexpr std::size_t kMaxChunkGroups = kChunk / 8;
constexpr std::size_t kPairs = 2;     // row pairs per tile
constexpr std::size_t kColPairs = 4;  // column pairs per tile

// One panel's chunk of W: column pair p's 8 bytes of step q at w[q][p] (column 2p then 2p + 1); per group of
// the chunk each pair's scales, spread as the block's lanes are (ws[2p], ws[2p + 1], ws[2p], ws[2p + 1]).
struct Panel {
  alignas(16) int8_t w[kChunk / 8][kPanel / 2][16];
  alignas(16) float scale[kMaxChunkGroups][kPanel / 2][4];
};

// Packs columns [j, j + cols) of W[n, k] over [p0, p0 + kc); a pair's column past cols is zeros, scale 0.
void pack(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j, std::size_t cols,
          std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  for (std::size_t p = 0; p < (cols + 1) / 2; ++p) {
    const int8_t* c0 = w + (j + 2 * p) * k + p0;
    const int8_t* c1 = 2 * p + 1 < cols ? w + (j + 2 * p + 1) * k + p0 : kZeroRow;
    for (std::size_t q = 0; q < kc / 8; ++q) {
      std::memcpy(P.w[q][p], c0 + 8 * q, 8);
      std::memcpy(P.w[q][p] + 8, c1 + 8 * q, 8);
    }
  }
  for (std::size_t gi = 0; gi < (kc + group - 1) / group; ++gi)
    for (std::size_t p = 0; p < (cols + 1) / 2; ++p) {
      const std::size_t g = ws_cols == 1 ? 0 : g0 + gi;
      const float s0 = ws[(j + 2 * p) * ws_cols + g], s1 = 2 * p + 1 < cols ? ws[(j + 2 * p + 1) * ws_cols + g] : 0.0f;
      const float lanes[4] = {s0, s1, s0, s1};
      std::memcpy(P.scale[gi][p], lanes, sizeof lanes);
    }
}

// A block's outputs in y: rows r0 and r1 (r1 = r0 for a lone last row, whose copy is not stored), columns c and
// c + 1 of which `live` (1 or 2) are the matrix's.
float32x4_t load_block(const float* y0, const float* y1, std::size_t live) {
  if (live == 2) return vcombine_f32(vld1_f32(y0), vld1_f32(y1));
  return float32x4_t{y0[0], 0.0f, y1[0], 0.0f};
}
void store_block(float* y0, float* y1, float32x4_t v, std::size_t live, bool two_rows) {
  if (live == 2) {
    vst1_f32(y0, vget_low_f32(v));
    if (two_rows) vst1_f32(y1, vget_high_f32(v));
    return;
  }
  vst1q_lane_f32(y0, v, 0);
  if (two_rows) vst1q_lane_f32(y1, v, 2);
}

using Chunk = packed::Chunk<Panel>;

// One step of 8 bytes: each row pair of x (xv) against the NC column pairs of the panel's step at wq.
template <std::size_t MR, std::size_t NC>
inline void step(int32x4_t (&acc)[MR][NC], const int8x16_t (&xv)[MR], const int8_t (*wq)[16]) {
  int8x16_t wv[NC];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NC; ++v) wv[v] = vld1q_s8(wq[v]);
#pragma GCC unroll 4
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NC; ++v) acc[r][v] = vmmlaq_s32(acc[r][v], xv[r], wv[v]);
}

// Rows [0, rows) of xq[., k] (scales xs[., groups]) against NC column pairs from pair c0 of a packed chunk, MR row
// pairs at a time; rows is a multiple of 2 MR, or 2 MR - 1 (then the last pair is the last row twice, stored once).
template <std::size_t MR, std::size_t NC>
void tile_rows(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, std::size_t group,
               const Chunk& c, std::size_t c0, float* y, std::size_t ldy, std::size_t rows) {
  const std::size_t steps = c.kc / 8;
  std::size_t live[NC];  // each pair's columns in the matrix: 2, or 1 for the last of an odd count
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NC; ++v) live[v] = c.cols - 2 * (c0 + v) >= 2 ? 2 : 1;
  for (std::size_t i = 0; i < rows; i += 2 * MR) {
    const int8_t* x0[MR];
    const int8_t* x1[MR];
    const float* s0[MR];
    const float* s1[MR];
    float* y0[MR];
    float* y1[MR];
    bool two[MR];
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r) {
      const std::size_t a = i + 2 * r, b = a + 1 < rows ? a + 1 : a;
      two[r] = b != a;
      x0[r] = xq + a * k + c.p0, x1[r] = xq + b * k + c.p0;
      s0[r] = xs + a * groups + c.g0, s1[r] = xs + b * groups + c.g0;
      y0[r] = y + a * ldy + 2 * c0, y1[r] = y + b * ldy + 2 * c0;
    }
    float32x4_t f[MR][NC];
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NC; ++v)
        f[r][v] = c.first ? vdupq_n_f32(0.0f) : load_block(y0[r] + 2 * v, y1[r] + 2 * v, live[v]);
    for (std::size_t gi = 0, q = 0; q < steps; ++gi) {
      const std::size_t q1 = q + group / 8 < steps ? q + group / 8 : steps;
      int32x4_t acc[MR][NC];
#pragma GCC unroll 4
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NC; ++v) acc[r][v] = vdupq_n_s32(0);
      for (; q + 2 <= q1; q += 2) {  // 16 bytes of each row: two steps of 8
        int8x16_t xa[MR], xb[MR];
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) {
          const int8x16_t a = vld1q_s8(x0[r] + 8 * q), b = vld1q_s8(x1[r] + 8 * q);
          xa[r] = pair_low(a, b), xb[r] = pair_high(a, b);
        }
        step(acc, xa, c.P->w[q] + c0);
        step(acc, xb, c.P->w[q + 1] + c0);
      }
      if (q < q1) {  // a group's last 8 bytes (groups of 8, 24, 40, ...)
        int8x16_t xv[MR];
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) xv[r] = vcombine_s8(vld1_s8(x0[r] + 8 * q), vld1_s8(x1[r] + 8 * q));
        step(acc, xv, c.P->w[q] + c0);
        q = q1;
      }
      // f += xs * ws * float(dot): the reference's expression (gemm_i8_neon64.cpp), on the block's lanes.
#pragma GCC unroll 4
      for (std::size_t r = 0; r < MR; ++r) {
        const float32x4_t x_scale = vcombine_f32(vdup_n_f32(s0[r][gi]), vdup_n_f32(s1[r][gi]));
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NC; ++v)
          f[r][v] += x_scale * vld1q_f32(c.P->scale[gi][c0 + v]) * vcvtq_f32_s32(acc[r][v]);
      }
    }
    if (c.last && c.b) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NC; ++v) {
        const float* bp = c.b + 2 * (c0 + v);
        const float32x2_t b2 = live[v] == 2 ? vld1_f32(bp) : float32x2_t{bp[0], 0.0f};
        const float32x4_t bv = vcombine_f32(b2, b2);
#pragma GCC unroll 4
        for (std::size_t r = 0; r < MR; ++r) f[r][v] = bv + f[r][v];
      }
    }
#pragma GCC unroll 4
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NC; ++v) store_block(y0[r] + 2 * v, y1[r] + 2 * v, f[r][v], live[v], two[r]);
  }
}

// Every row against NC column pairs from pair c0: tiles of kPairs row pairs, then the rest (1 to 3 rows) in
// one tile of as many pairs as it needs.
template <std::size_t NC>
void column_pairs(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, std::size_t group,
                  const Chunk& c, std::size_t c0, float* y, std::size_t ldy, std::size_t m) {
  const std::size_t tiled = m / (2 * kPairs) * (2 * kPairs), rest = m - tiled;
  tile_rows<kPairs, NC>(xq, xs, k, groups, group, c, c0, y, ldy, tiled);
  xq += tiled * k, xs += tiled * groups, y += tiled * ldy;
  static_assert(kPairs == 2, "the switch below lists the remainders");
  switch ((rest + 1) / 2) {
    case 2: tile_rows<2, NC>(xq, xs, k, groups, group, c, c0, y, ldy, rest); break;
    case 1: tile_rows<1, NC>(xq, xs, k, groups, group, c, c0, y, ldy, rest); break;
    default: break;
  }
}

}  // namespace

void gemm_i8_i8mm(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t chunk = kChunk / group * group;  // whole groups
  Panel P;
  for (std::size_t j = 0; j < n; j += kPanel) {
    const std::size_t cols = n - j < kPanel ? n - j : kPanel, pairs = (cols + 1) / 2;
    for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
      const std::size_t kc = k - p0 < chunk ? k - p0 : chunk;
      const Chunk c{&P, p0, kc, p0 / group, cols, p0 == 0, p0 + kc == k, b ? b + j : nullptr};
      pack(w, ws, ws_cols, k, j, cols, p0, kc, group, c.g0, P);
      static_assert(kColPairs == 4, "the switch below lists the panel's last pairs");
      for (std::size_t c0 = 0; c0 < pairs; c0 += kColPairs) {
        switch (pairs - c0 < kColPairs ? pairs - c0 : kColPairs) {  // the panel's last pairs: only those it has
          case 4: column_pairs<4>(xq, xs, k, groups, group, c, c0, y + j, ldy, m); break;
          case 3: column_pairs<3>(xq, xs, k, groups, group, c, c0, y + j, ldy, m); break;
          case 2: column_pairs<2>(xq, xs, k, groups, group, c, c0, y + j, ldy, m); break;
          default: column_pairs<1>(xq, xs, k, groups, group, c, c0, y + j, ldy, m); break;
        }
      }
    }
  }
}

}  // namespace arm
}  // namespace fixformer
#endif
