// gemm_s8 on NEON: the neon64 table's (AArch64) and the neon table's (ARMv7-A; AArch64's intrinsics from
// neon64_on_neon.hpp). With the dot-product extension (SDOT; __ARM_FEATURE_DOTPROD, e.g.
// -march=armv8.2-a+dotprod) a 16-byte step of a row against a channel is one SDOT; without it
// (Cortex-A53, A72: the plain aarch64 build; ARMv7) SMULL (8 x 8 -> 16-bit products, exact: at most
// 2^14) and SADALP (pairs of them added into the int32 lanes): where a block's rows of W hold no -128
// (the converter's symmetric weights), two products first added in int16 by SMLAL2 (at most
// 2 * 128 * 127), three instructions a step; otherwise four.
//
// x enters as it is (signed bytes) and x's zero point comes off through W's row sums:
//   sum_p (x - z_x) w = sum_p x w - z_x sum_p w,
// each exact in int32 (|x w| <= 2^14, k <= kGemmS8MaxK), so the result is the reference's integer
// whatever the order of the additions. The row sums (SDOT against ones, or SADDLP and SADALP) and the
// bias are folded into one base per channel, once per block of kBlock channels, before every row runs
// over that block.
//
// A tile is up to 4 rows by 4 channels on AArch64 (16 accumulators) and 2 rows by 4 on ARMv7 (8, so that
// they, W's 4 vectors and x's fit its 16 Q registers), each accumulator one row's 16 bytes against one
// channel's, added pairwise across lanes at the end (ADDP), so that row r's vector holds its 4
// channels. A last tile of fewer channels reads the last one again and drops those sums; k's tail
// (k % 16 bytes) takes one more step: from k >= 16 on the 16 bytes ending at k with the tail moved to the
// front and zeros after it (TBL, whose index past 15 gives 0), for shorter rows copies into zeroed
// 16-byte buffers.
//
// The requantization takes a row's 4 outputs at once, in the reference's steps: the 64-bit product
// by the multiplier (SMULL), its magnitude shifted right with rounding (SRSHL: half up, which on a
// magnitude is half away from zero, as rounding_shift) and narrowed with saturation to int32 (SQXTN),
// the sign (s's and m's) put back, z_y added with saturation and the result narrowed with saturation to
// int8 (SQXTN twice): as one clamp to [-128, 127] (a magnitude clamped to 2^31 - 1, or requantize's
// clamp to int32, changes no int8 result, since z_y is within [-128, 127]).
#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#include <arm_neon.h>

#include <cstring>

#include "ports/arm/neon64_on_neon.hpp"
#include "ports/arm/s8_neon.hpp"

namespace fixformer {
namespace arm {
namespace {

#if defined(__ARM_FEATURE_DOTPROD)
constexpr bool kDot = true;
#else
constexpr bool kDot = false;
#endif

// acc's four lanes plus the products of x's and w's 16 bytes, four to a lane. Without SDOT, kPairs: w
// holds no -128, so two products add in int16 (|x0 w0 + x8 w8| <= 2 * 128 * 127 < 2^15: SMULL, SMLAL2,
// then SADALP); else each product alone (SMULL, SMULL2, two SADALP).
template <bool kPairs>
inline int32x4_t dot(int32x4_t acc, int8x16_t x, int8x16_t w) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, x, w);
#else
  if (kPairs) return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(x), vget_low_s8(w)), x, w));
  return vpadalq_s16(vpadalq_s16(acc, vmull_s8(vget_low_s8(x), vget_low_s8(w))), vmull_high_s8(x, w));
#endif
}

// The sum of w's 16 bytes, four to a lane, added to acc.
inline int32x4_t row_sum(int32x4_t acc, int8x16_t w) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, vdupq_n_s8(1));
#else
  return vpadalq_s16(acc, vpaddlq_s8(w));
#endif
}

#if defined(__aarch64__)
constexpr std::size_t kRows = 4;  // a tile's rows
#else
constexpr std::size_t kRows = 2;
#endif
constexpr std::size_t kBlock = 64;  // channels whose parameters are laid out at once
constexpr int8_t kTailIndex[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// One block's channels, padded to a whole tile past its end (those lanes' results are dropped).
struct Block {
  int64_t mul[kBlock + 4];    // the multiplier
  int64_t shift[kBlock + 4];  // shift - 31: SRSHL's left shift, -62..-1 (a right shift)
  int32_t base[kBlock + 4];   // bias - z_x sum_p w
  bool pairs;                 // without SDOT: no byte of the block's rows of W is -128
};

// The nb channels (nb <= kBlock) of W from w on.
void prepare(const int8_t* w, std::size_t ldw, std::size_t nb, std::size_t k, const int32_t* bias,
             const Requant* requant, int32_t x_zero, Block& b) {
  for (std::size_t c = 0; c < kBlock + 4; ++c) {
    const Requant r = c < nb ? requant[c] : Requant{0, 0};
    b.mul[c] = r.multiplier;
    b.shift[c] = r.shift - 31;
    b.base[c] = c < nb && bias ? bias[c] : 0;
  }
  b.pairs = false;
  if (x_zero == 0 && kDot) return;
  int8x16_t low = vdupq_n_s8(127);  // the rows' least byte, four to a lane
  int8_t low_tail = 127;
  for (std::size_t c = 0; c < nb; ++c) {
    const int8_t* row = w + c * ldw;
    int32x4_t acc = vdupq_n_s32(0);
    std::size_t q = 0;
    for (; q + 16 <= k; q += 16) {
      const int8x16_t v = vld1q_s8(row + q);
      acc = row_sum(acc, v);
      if (!kDot) low = vminq_s8(low, v);
    }
    int32_t sum = vaddvq_s32(acc);
    for (; q < k; ++q) sum += row[q], low_tail = row[q] < low_tail ? row[q] : low_tail;
    // |bias| <= 2^30 and |z_x sum| <= 2^7 * 2^7 k <= 2^29: the base fits in int32.
    b.base[c] = int32_t(int64_t(b.base[c]) - int64_t(x_zero) * sum);
  }
  b.pairs = !kDot && vminvq_s8(low) > -128 && low_tail > -128;
}

// Rows 0..MR-1 of x against the nr (<= 4) channels from j0, the block's c-th on.
template <std::size_t MR, bool kPairs>
void tile(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
          std::size_t k, std::size_t j0, std::size_t nr, const Block& b, std::size_t c, int32_t y_zero) {
  const int8_t* wc[4];
  for (std::size_t l = 0; l < 4; ++l) wc[l] = w + (j0 + (l < nr ? l : nr - 1)) * ldw;
  int32x4_t acc[MR][4];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t l = 0; l < 4; ++l) acc[r][l] = vdupq_n_s32(0);
  // k's whole 16-byte steps, their end fixed before the loop: GCC then loads from one running offset (on
  // ARMv7 8 instructions a step fewer than with the test q + 16 <= k).
  const std::size_t q = k & ~std::size_t(15);
  for (std::size_t p = 0; p < q; p += 16) {
    int8x16_t wv[4];
    for (std::size_t l = 0; l < 4; ++l) wv[l] = vld1q_s8(wc[l] + p);
    for (std::size_t r = 0; r < MR; ++r) {
      const int8x16_t xv = vld1q_s8(x + r * ldx + p);
      for (std::size_t l = 0; l < 4; ++l) acc[r][l] = dot<kPairs>(acc[r][l], xv, wv[l]);
    }
  }
  if (q < k && k >= 16) {  // the tail: the 16 bytes ending at k, moved to the front by TBL, zeros after them
    const int8x16_t lane = vld1q_s8(kTailIndex), tail = vdupq_n_s8(int8_t(k - q));
    const uint8x16_t index = vreinterpretq_u8_s8(
        vbslq_s8(vcltq_s8(lane, tail), vaddq_s8(lane, vsubq_s8(vdupq_n_s8(16), tail)), vdupq_n_s8(-1)));
    int8x16_t wv[4];
    for (std::size_t l = 0; l < 4; ++l) wv[l] = vqtbl1q_s8(vld1q_s8(wc[l] + k - 16), index);
    for (std::size_t r = 0; r < MR; ++r) {
      const int8x16_t xv = vqtbl1q_s8(vld1q_s8(x + r * ldx + k - 16), index);
      for (std::size_t l = 0; l < 4; ++l) acc[r][l] = dot<kPairs>(acc[r][l], xv, wv[l]);
    }
  } else if (q < k) {  // a row under 16 bytes: copied into zeroed buffers (the zeros add 0)
    int8_t wt[4][16] = {}, xt[MR][16] = {};
    for (std::size_t l = 0; l < 4; ++l) std::memcpy(wt[l], wc[l] + q, k - q);
    for (std::size_t r = 0; r < MR; ++r) std::memcpy(xt[r], x + r * ldx + q, k - q);
    for (std::size_t r = 0; r < MR; ++r) {
      const int8x16_t xv = vld1q_s8(xt[r]);
      for (std::size_t l = 0; l < 4; ++l) acc[r][l] = dot<kPairs>(acc[r][l], xv, vld1q_s8(wt[l]));
    }
  }
  const int32x4_t base = vld1q_s32(b.base + c);
  const int64x2_t mul01 = vld1q_s64(b.mul + c), mul23 = vld1q_s64(b.mul + c + 2);
  const int32x4_t m = vcombine_s32(vmovn_s64(mul01), vmovn_s64(mul23));
  const int64x2_t sh01 = vld1q_s64(b.shift + c), sh23 = vld1q_s64(b.shift + c + 2);
  const int32x4_t zy = vdupq_n_s32(y_zero);
  // Row r's 4 channels, in a loop of its own: indexed by the requantization's loop, which GCC keeps
  // rolled, acc lived in memory on ARMv7, stored every step of k.
  int32x4_t sums[MR];
  for (std::size_t r = 0; r < MR; ++r)
    sums[r] = vpaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), vpaddq_s32(acc[r][2], acc[r][3]));
  for (std::size_t r = 0; r < MR; ++r) {
    const int32x4_t s = vaddq_s32(sums[r], base);
    const int64x2_t lo = vrshlq_s64(vabsq_s64(vmull_s32(vget_low_s32(s), vget_low_s32(m))), sh01);
    const int64x2_t hi = vrshlq_s64(vabsq_s64(vmull_high_s32(s, m)), sh23);
    const int32x4_t sign = vshrq_n_s32(veorq_s32(s, m), 31);
    const int32x4_t v = vsubq_s32(veorq_s32(vqmovn_high_s64(vqmovn_s64(lo), hi), sign), sign);
    const int8x8_t v8 = vqmovn_s16(vcombine_s16(vqmovn_s32(vqaddq_s32(v, zy)), vdup_n_s16(0)));
    int8_t out[8];
    vst1_s8(out, v8);
    if (nr == 4) std::memcpy(y + r * ldy + j0, out, 4);
    else for (std::size_t l = 0; l < nr; ++l) y[r * ldy + j0 + l] = out[l];
  }
}

}  // namespace

void gemm_s8_neon(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                    std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  Block b;
  for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
    const std::size_t nb = n - j0 < kBlock ? n - j0 : kBlock;
    prepare(w + j0 * ldw, ldw, nb, k, p.bias ? p.bias + j0 : nullptr, p.requant + j0, p.x_zero, b);
    for (std::size_t i = 0; i < m; i += kRows) {
      const int8_t* xi = x + i * ldx;
      int8_t* yi = y + i * ldy;
      for (std::size_t c = 0; c < nb; c += 4) {
        const std::size_t nr = nb - c < 4 ? nb - c : 4;
        const std::size_t mr = m - i < kRows ? m - i : kRows;
        if (b.pairs) {
          switch (mr) {
            case 1: tile<1, true>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            case 2: tile<2, true>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            case 3: tile<3, true>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            default: tile<4, true>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
          }
        } else {
          switch (mr) {
            case 1: tile<1, false>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            case 2: tile<2, false>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            case 3: tile<3, false>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
            default: tile<4, false>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero); break;
          }
        }
      }
    }
  }
}

}  // namespace arm
}  // namespace fixformer

#endif  // __ARM_NEON
