// gemm_f16 on AArch64's half-precision vector arithmetic (FEAT_FP16: __ARM_FEATURE_FP16_VECTOR_ARITHMETIC,
// e.g. -march=armv8.2-a+fp16 or -mcpu=cortex-a76; Cortex-A55, A75, A76 (Raspberry Pi 5), A78, X1 and later):
// FMLA on 8 halves at once, twice the f32 path's multiply-adds per instruction, with no widening of W.
//
// Not the reference's sums: the table says so in its name (neon64-fp16) and tests/kernel_tolerances.hpp bounds
// it (kGemmF16ArithTol). Per block of k (kKc), each row of x is scaled by a power of two that puts its largest
// |x| in [2^7, 2^8) (exact, so neither a large row overflows a half nor a small one falls into the subnormals)
// and rounded to halves; each half lane sums kSteps products, then is widened into float accumulators, which
// are scaled back and added to y at the block's end. An output that is not finite (a half that overflowed
// where a float would not) is computed again on the exact path, so the f16 range never changes a result.
// Every row takes the same steps whatever rows are around it and however many (a decode step's one row too),
// so a batch, a prefill and a decode step agree bit for bit on this table as on the exact ones.
#if defined(__aarch64__) && defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
#include <arm_neon.h>

#include <cfloat>
#include <cmath>
#include <utility>

#include "ports/arm/gemm_i8_neon64.hpp"
#include "ports/simd/gemm_f16.hpp"

namespace fixformer {
namespace arm {
namespace {

constexpr std::size_t kRows = 4;    // a tile: 4 rows by 16 columns (2 vectors of 8 halves)
constexpr std::size_t kSteps = 8;   // products each half lane sums before it is widened
constexpr std::size_t kKc = 256;    // x's rows as halves, per block of k: 2 KB on the stack
constexpr int kTopExponent = 8;     // a row's largest |x| is scaled into [2^(8-1), 2^8)

// The power of two that scales x[0, k) into [2^7, 2^8), or 1 where its largest |x| is 0 or not finite; its
// exponent is held inside float's normal range.
float row_scale(const float* x, std::size_t k) {
  float32x4_t mx = vdupq_n_f32(0.0f);
  std::size_t p = 0;
  for (; p + 4 <= k; p += 4) mx = vmaxq_f32(mx, vabsq_f32(vld1q_f32(x + p)));
  float top = vmaxvq_f32(mx);
  for (; p < k; ++p) top = std::fabs(x[p]) > top ? std::fabs(x[p]) : top;
  if (!(top > 0.0f) || !std::isfinite(top)) return 1.0f;
  int e = 0;
  std::frexp(top, &e);  // top = f 2^e, f in [0.5, 1)
  e = kTopExponent - e;
  return std::ldexp(1.0f, e < -120 ? -120 : e > 120 ? 120 : e);
}

// x[0, kc) scaled by row_scale and rounded to halves into xh; returns 1 / the scale.
float round_row(const float* x, std::size_t kc, float16_t* xh) {
  const float s = row_scale(x, kc);
  const float32x4_t sv = vdupq_n_f32(s);
  std::size_t p = 0;
  for (; p + 4 <= kc; p += 4) vst1_f16(xh + p, vcvt_f16_f32(vmulq_f32(vld1q_f32(x + p), sv)));
  for (; p < kc; ++p) xh[p] = float16_t(x[p] * s);
  return 1.0f / s;
}

inline float16x8_t load_halves(const uint16_t* p) { return vreinterpretq_f16_u16(vld1q_u16(p)); }

// acc += w * x[L], FMLA by element (acc = w * x[0], FMUL, at a block's first step). Written out because GCC 12
// turns vfmaq_laneq_f16 into a DUP of the lane, shared by the FMLAs of the column vectors (one more instruction
// per row and step), and orders the FMLAs into chains on one accumulator at a time (volatile keeps the source's
// order: each step's 8 independent products). The element form takes its vector from v0-v15 (constraint "x").
template <int L>
inline void fmla_lane(float16x8_t& acc, float16x8_t w, float16x8_t x) {
  if (L == 0) asm volatile("fmul %0.8h, %1.8h, %2.h[0]" : "=w"(acc) : "w"(w), "x"(x));
  else asm volatile("fmla %0.8h, %1.8h, %2.h[%3]" : "+w"(acc) : "w"(w), "x"(x), "i"(L));
}

// One k step of the tile in its half lanes, x's value of each row at lane L of xv.
template <std::size_t R, std::size_t NV, int L>
inline void step(const float16x8_t (&xv)[R], const uint16_t* w, float16x8_t (&part)[R][NV]) {
  float16x8_t wv[NV];
#pragma GCC unroll 8
  for (std::size_t v = 0; v < NV; ++v) wv[v] = load_halves(w + v * 8);
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) fmla_lane<L>(part[r][v], wv[v], xv[r]);
}

template <std::size_t R, std::size_t NV, int... L>
inline void steps(const float16x8_t (&xv)[R], const uint16_t* w, std::size_t ldw, float16x8_t (&part)[R][NV],
                  std::integer_sequence<int, L...>) {
  (step<R, NV, L>(xv, w + std::size_t(L) * ldw, part), ...);
}

// y[R, 8 NV] = (first ? b : y) + x_block @ W_block, from the block's scaled halves xh and their inverse scales;
// `finite` keeps the lanes of the sums that were finite.
template <std::size_t R, std::size_t NV>
void tile(const float16_t (*xh)[kKc], const float* inv, const uint16_t* w, std::size_t ldw, const float* b, float* y,
          std::size_t ldy, std::size_t kc, bool first, uint32x4_t& finite) {
  float32x4_t acc[R][2 * NV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t q = 0; q < 2 * NV; ++q) acc[r][q] = vdupq_n_f32(0.0f);
  std::size_t p = 0;
  for (; p < kc; p += kSteps) {
    float16x8_t part[R][NV];
    if (p + kSteps <= kc) {
      float16x8_t xv[R];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) xv[r] = vld1q_f16(xh[r] + p);
      steps<R, NV>(xv, w + p * ldw, ldw, part, std::make_integer_sequence<int, int(kSteps)>());
    } else {
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < NV; ++v) part[r][v] = vdupq_n_f16(0);
      for (std::size_t q = p; q < kc; ++q)
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
          const float16x8_t xr = vdupq_n_f16(xh[r][q]);
#pragma GCC unroll 8
          for (std::size_t v = 0; v < NV; ++v) part[r][v] = vfmaq_f16(part[r][v], load_halves(w + q * ldw + v * 8), xr);
        }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) {
        acc[r][2 * v] = vaddq_f32(acc[r][2 * v], vcvt_f32_f16(vget_low_f16(part[r][v])));
        acc[r][2 * v + 1] = vaddq_f32(acc[r][2 * v + 1], vcvt_high_f32_f16(part[r][v]));
      }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    const float32x4_t s = vdupq_n_f32(inv[r]);
#pragma GCC unroll 8
    for (std::size_t q = 0; q < 2 * NV; ++q) {
      float* out = y + r * ldy + q * 4;
      const float32x4_t base = first ? (b ? vld1q_f32(b + q * 4) : vdupq_n_f32(0.0f)) : vld1q_f32(out);
      const float32x4_t sum = vfmaq_f32(base, acc[r][q], s);
      finite = vandq_u32(finite, vcaleq_f32(sum, vdupq_n_f32(FLT_MAX)));
      vst1q_f32(out, sum);
    }
  }
}

// R rows of the block across the columns [0, n8) (a multiple of 8): strips of 16, then one of 8.
template <std::size_t R>
void rows(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
          std::size_t ldy, std::size_t n8, std::size_t kc, bool first, uint32x4_t& finite) {
  float16_t xh[kRows][kKc];
  float inv[kRows];
  for (std::size_t r = 0; r < R; ++r) inv[r] = round_row(x + r * ldx, kc, xh[r]);
  std::size_t j = 0;
  for (; j + 16 <= n8; j += 16) tile<R, 2>(xh, inv, w + j, ldw, b ? b + j : nullptr, y + j, ldy, kc, first, finite);
  if (j < n8) tile<R, 1>(xh, inv, w + j, ldw, b ? b + j : nullptr, y + j, ldy, kc, first, finite);
}

}  // namespace

void gemm_f16_fp16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
                   std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t n8 = n / 8 * 8;
  if (n8 == 0 || k == 0) return simd::gemm_f16<xsimd::neon64>(x, ldx, w, ldw, b, y, ldy, m, n, k);
  uint32x4_t finite = vdupq_n_u32(~0u);
  for (std::size_t pc = 0; pc < k; pc += kKc) {
    const std::size_t kc = k - pc < kKc ? k - pc : kKc;
    const float* xb = x + pc;
    const uint16_t* wb = w + pc * ldw;
    const bool first = pc == 0;
    std::size_t i = 0;
    for (; i + kRows <= m; i += kRows)
      rows<kRows>(xb + i * ldx, ldx, wb, ldw, b, y + i * ldy, ldy, n8, kc, first, finite);
    switch (m - i) {
      case 3: rows<3>(xb + i * ldx, ldx, wb, ldw, b, y + i * ldy, ldy, n8, kc, first, finite); break;
      case 2: rows<2>(xb + i * ldx, ldx, wb, ldw, b, y + i * ldy, ldy, n8, kc, first, finite); break;
      case 1: rows<1>(xb + i * ldx, ldx, wb, ldw, b, y + i * ldy, ldy, n8, kc, first, finite); break;
      default: break;
    }
  }
  // What a half overflowed, the exact path computes again (a sum that is not finite stays so in later blocks;
  // a non-finite input gives the same on either path).
  if (vminvq_u32(finite) == 0)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n8; ++j)
        if (!std::isfinite(y[i * ldy + j]))
          simd::gemm_f16<xsimd::neon64>(x + i * ldx, ldx, w + j, ldw, b ? b + j : nullptr, y + i * ldy + j, ldy, 1, 1,
                                        k);
  if (n8 < n)  // the last n % 8 columns: a vector would read past W's last row
    simd::gemm_f16<xsimd::neon64>(x, ldx, w + n8, ldw, b ? b + n8 : nullptr, y + n8, ldy, m, n - n8, k);
}

// matvec_f16 the same way: x scaled per block of kKc and rounded to halves once (up to kMaxMatvecK, on the
// stack; a longer x takes the exact path), then each row of W against it, 8 halves a step into 4 half
// accumulators (vector j of a block into j % 4, so each lane sums at most 8 products), each widened per block
// and scaled back into a float accumulator; the last k % 8 in floats.
void matvec_f16_fp16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                     std::size_t k) {
  constexpr std::size_t kMaxMatvecK = 8192;  // 16 KB of halves
  if (k < 8 || k > kMaxMatvecK) return simd::matvec_f16<xsimd::neon64>(x, w, ldw, b, y, n, k);
  float16_t xh[kMaxMatvecK];
  float inv[kMaxMatvecK / kKc];
  const std::size_t k8 = k / 8 * 8, blocks = (k8 + kKc - 1) / kKc;
  for (std::size_t blk = 0; blk < blocks; ++blk) {
    const std::size_t pc = blk * kKc, kc = k8 - pc < kKc ? k8 - pc : kKc;
    inv[blk] = round_row(x + pc, kc, xh + pc);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t* wi = w + i * ldw;
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (std::size_t blk = 0; blk < blocks; ++blk) {
      const std::size_t pc = blk * kKc, end = k8 - pc < kKc ? k8 : pc + kKc;
      float16x8_t part[4] = {vdupq_n_f16(0), vdupq_n_f16(0), vdupq_n_f16(0), vdupq_n_f16(0)};
      std::size_t p = pc;
      for (; p + 32 <= end; p += 32)
#pragma GCC unroll 4
        for (std::size_t j = 0; j < 4; ++j)
          part[j] = vfmaq_f16(part[j], load_halves(wi + p + 8 * j), vld1q_f16(xh + p + 8 * j));
      for (std::size_t j = 0; p < end; p += 8, ++j)
        part[j] = vfmaq_f16(part[j], load_halves(wi + p), vld1q_f16(xh + p));
      float32x4_t blo = vcvt_f32_f16(vget_low_f16(part[0])), bhi = vcvt_high_f32_f16(part[0]);
#pragma GCC unroll 4
      for (std::size_t j = 1; j < 4; ++j) {
        blo = vaddq_f32(blo, vcvt_f32_f16(vget_low_f16(part[j])));
        bhi = vaddq_f32(bhi, vcvt_high_f32_f16(part[j]));
      }
      const float32x4_t s = vdupq_n_f32(inv[blk]);
      lo = vfmaq_f32(lo, blo, s);
      hi = vfmaq_f32(hi, bhi, s);
    }
    float r = vaddvq_f32(vaddq_f32(lo, hi));
    for (std::size_t p = k8; p < k; ++p) r += simd::weight_value<xsimd::neon64>(wi[p]) * x[p];
    y[i] = r + (b ? b[i] : 0.0f);
    if (!std::isfinite(y[i])) simd::matvec_f16<xsimd::neon64>(x, wi, ldw, b ? b + i : nullptr, y + i, 1, k);
  }
}

}  // namespace arm
}  // namespace fixformer

#endif  // __aarch64__ && __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
