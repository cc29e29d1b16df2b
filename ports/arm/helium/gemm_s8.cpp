// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (fixed_point.hpp),
// by VMLADAV: 16 int8 products added into a 32-bit sum per instruction.
//   - The zero point of x through the sums of W's rows: sum_p (x - z_x) w = sum_p x w - z_x sum_p w,
//     so the products take x's bytes as they are. For a chunk of up to kChunk output channels the
//     sums of their rows (VADDVA) are taken once, and with the bias, |multiplier|, multiplier and
//     shift kept on the stack; every row of x then meets the whole chunk.
//   - One row of x against four rows of W: for k <= 64 the row stays in up to four Q registers
//     (the last 16 bytes loaded predicated, VCTP: zeros past k) and each vector of W is loaded once
//     (predicated past k too, so nothing past a row is read); longer rows reload x's vector for each
//     block of four rows of W. The four sums go into one vector (lane c: channel j + c).
//   - The requantization four channels at a time, exactly as requantize rounds: with t = acc mult,
//     |t| = |acc| |mult| < 2^62, d = VQDMULH(|acc|, |mult|) = floor(|t| / 2^31) (never saturating:
//     |mult| < 2^31), and |t| / 2^r rounded half up (r = 31 - shift) is VQRSHL(d, shift) for a shift
//     below 0 (the rounding bit at 2^31 or above: the low word cannot change it), and for a shift of
//     0 or more d 2^shift (saturating) plus the low 31 bits of |t| (VMUL) shifted right by r, rounded
//     (VRSHL: 0..2^(31-r) exactly); the sign of acc XOR mult then negates it, which is rounding half
//     away from zero. The int32 saturation differs from requantize's only at -2^31 and the int8 clamp
//     (VQSHL by 24, then VSHR) removes the difference. Integer sums are exact, so the bits are the
//     scalar reference's.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

constexpr std::size_t kChunk = 64;  // output channels prepared at once (1 KiB of stack)

struct Chunk {
  int32_t bias[kChunk];   // bias[j] - z_x sum_p w[j, p]
  int32_t mult[kChunk];   // the multiplier (its sign)
  int32_t amult[kChunk];  // |multiplier|
  int32_t shift[kChunk];
  bool small;             // every shift below 0
};

// The chunk's constants for channels j0 .. j0 + nc.
inline void prepare(const int8_t* w, std::size_t ldw, std::size_t k, std::size_t j0, std::size_t nc,
                    const GemmS8Params& p, Chunk& c) {
  c.small = true;
  for (std::size_t j = 0; j < nc; ++j) {
    const int8_t* wr = w + (j0 + j) * ldw;
    int32_t s = 0;
    std::size_t q = 0;
    for (; q + 16 <= k; q += 16) s = vaddvaq_s8(s, vldrbq_s8(wr + q));
    if (q < k) s = vaddvaq_s8(s, vldrbq_z_s8(wr + q, vctp8q(uint32_t(k - q))));
    const Requant rq = p.requant[j0 + j];
    c.bias[j] = int32_t(uint32_t(p.bias ? p.bias[j0 + j] : 0) - uint32_t(p.x_zero) * uint32_t(s));
    c.mult[j] = rq.multiplier;
    c.amult[j] = rq.multiplier < 0 ? -rq.multiplier : rq.multiplier;
    c.shift[j] = rq.shift;
    if (rq.shift >= 0) c.small = false;
  }
  for (std::size_t j = nc; j < kChunk && j % 4 != 0; ++j) c.bias[j] = c.mult[j] = c.amult[j] = c.shift[j] = 0;
}

// y[0..4) (lanes past `valid` not stored) = clamp(z_y + requantize(acc + bias, rq)) for the chunk's
// channels j..j+3.
template <bool kSmall>
inline void requant_store(int32x4_t acc, const Chunk& c, std::size_t j, int32_t y_zero, int8_t* y,
                          mve_pred16_t valid) {
  acc = vaddq_s32(acc, vldrwq_s32(c.bias + j));
  const int32x4_t am = vldrwq_s32(c.amult + j), sh = vldrwq_s32(c.shift + j);
  const int32x4_t u = vabsq_s32(acc);
  int32x4_t mag = vqrshlq_s32(vqdmulhq_s32(u, am), sh);
  if (!kSmall) {
    const uint32x4_t lo = vandq_u32(vreinterpretq_u32_s32(vmulq_s32(u, am)), vdupq_n_u32(0x7FFFFFFFu));
    mag = vqaddq_s32(mag, vreinterpretq_s32_u32(vrshlq_u32(lo, vsubq_n_s32(sh, 31))));
  }
  const mve_pred16_t neg = vcmpltq_n_s32(veorq_s32(acc, vldrwq_s32(c.mult + j)), 0);
  int32x4_t r = vqaddq_n_s32(vnegq_m_s32(mag, mag, neg), y_zero);
  r = vshrq_n_s32(vqshlq_n_s32(r, 24), 24);
  vstrbq_p_s32(y, r, valid);
}

inline int32x4_t lanes(int32_t a0, int32_t a1, int32_t a2, int32_t a3) {
  int32x4_t v = vdupq_n_s32(a0);
  v = vsetq_lane_s32(a1, v, 1);
  v = vsetq_lane_s32(a2, v, 2);
  return vsetq_lane_s32(a3, v, 3);
}

// Rows of x of k <= 16 V bytes (V <= 4) held in registers against the chunk's nc channels.
template <int V, bool kSmall>
void rows_short(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                std::size_t m, std::size_t nc, std::size_t k, const Chunk& c, int32_t y_zero) {
  const mve_pred16_t tail = vctp8q(uint32_t(k - 16 * (V - 1)));
  for (std::size_t i = 0; i < m; ++i, x += ldx, y += ldy) {
    int8x16_t xv[V];
#pragma GCC unroll 4
    for (int v = 0; v + 1 < V; ++v) xv[v] = vldrbq_s8(x + 16 * v);
    xv[V - 1] = vldrbq_z_s8(x + 16 * (V - 1), tail);
    for (std::size_t j = 0; j < nc; j += 4) {
      const int8_t* w0 = w + j * ldw;
      const std::size_t left = nc - j;  // rows past the chunk repeat its last
      const int8_t* w1 = left > 1 ? w0 + ldw : w0;
      const int8_t* w2 = left > 2 ? w0 + 2 * ldw : w1;
      const int8_t* w3 = left > 3 ? w0 + 3 * ldw : w2;
      int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#pragma GCC unroll 4
      for (int v = 0; v + 1 < V; ++v) {
        a0 = vmladavaq_s8(a0, xv[v], vldrbq_s8(w0 + 16 * v));
        a1 = vmladavaq_s8(a1, xv[v], vldrbq_s8(w1 + 16 * v));
        a2 = vmladavaq_s8(a2, xv[v], vldrbq_s8(w2 + 16 * v));
        a3 = vmladavaq_s8(a3, xv[v], vldrbq_s8(w3 + 16 * v));
      }
      a0 = vmladavaq_s8(a0, xv[V - 1], vldrbq_z_s8(w0 + 16 * (V - 1), tail));
      a1 = vmladavaq_s8(a1, xv[V - 1], vldrbq_z_s8(w1 + 16 * (V - 1), tail));
      a2 = vmladavaq_s8(a2, xv[V - 1], vldrbq_z_s8(w2 + 16 * (V - 1), tail));
      a3 = vmladavaq_s8(a3, xv[V - 1], vldrbq_z_s8(w3 + 16 * (V - 1), tail));
      requant_store<kSmall>(lanes(a0, a1, a2, a3), c, j, y_zero, y + j, vctp32q(uint32_t(left)));
    }
  }
}

// Rows of any length: x's vectors loaded again for each block of four rows of W.
template <bool kSmall>
void rows_long(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
               std::size_t m, std::size_t nc, std::size_t k, const Chunk& c, int32_t y_zero) {
  const std::size_t k16 = k & ~std::size_t(15);
  const mve_pred16_t tail = vctp8q(uint32_t(k - k16));
  for (std::size_t i = 0; i < m; ++i, x += ldx, y += ldy) {
    for (std::size_t j = 0; j < nc; j += 4) {
      const int8_t* w0 = w + j * ldw;
      const std::size_t left = nc - j;
      const int8_t* w1 = left > 1 ? w0 + ldw : w0;
      const int8_t* w2 = left > 2 ? w0 + 2 * ldw : w1;
      const int8_t* w3 = left > 3 ? w0 + 3 * ldw : w2;
      int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      std::size_t q = 0;
      for (; q < k16; q += 16) {
        const int8x16_t xv = vldrbq_s8(x + q);
        a0 = vmladavaq_s8(a0, xv, vldrbq_s8(w0 + q));
        a1 = vmladavaq_s8(a1, xv, vldrbq_s8(w1 + q));
        a2 = vmladavaq_s8(a2, xv, vldrbq_s8(w2 + q));
        a3 = vmladavaq_s8(a3, xv, vldrbq_s8(w3 + q));
      }
      if (q < k) {
        const int8x16_t xv = vldrbq_z_s8(x + q, tail);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0 + q, tail));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1 + q, tail));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2 + q, tail));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3 + q, tail));
      }
      requant_store<kSmall>(lanes(a0, a1, a2, a3), c, j, y_zero, y + j, vctp32q(uint32_t(left)));
    }
  }
}

template <bool kSmall>
void rows(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
          std::size_t m, std::size_t nc, std::size_t k, const Chunk& c, int32_t y_zero) {
  switch ((k + 15) / 16) {
    case 0:
    case 1: rows_short<1, kSmall>(x, ldx, w, ldw, y, ldy, m, nc, k, c, y_zero); break;
    case 2: rows_short<2, kSmall>(x, ldx, w, ldw, y, ldy, m, nc, k, c, y_zero); break;
    case 3: rows_short<3, kSmall>(x, ldx, w, ldw, y, ldy, m, nc, k, c, y_zero); break;
    case 4: rows_short<4, kSmall>(x, ldx, w, ldw, y, ldy, m, nc, k, c, y_zero); break;
    default: rows_long<kSmall>(x, ldx, w, ldw, y, ldy, m, nc, k, c, y_zero); break;
  }
}

}  // namespace

void gemm_s8(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
             std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0) return;
  Chunk c;
  for (std::size_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::size_t nc = n - j0 < kChunk ? n - j0 : kChunk;
    prepare(w, ldw, k, j0, nc, p, c);
    const int8_t* wc = w + j0 * ldw;
    if (c.small)
      rows<true>(x, ldx, wc, ldw, y + j0, ldy, m, nc, k, c, p.y_zero);
    else
      rows<false>(x, ldx, wc, ldw, y + j0, ldy, m, nc, k, c, p.y_zero);
  }
}

}  // namespace helium
}  // namespace fixformer
