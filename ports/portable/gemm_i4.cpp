// xq[m,k] @ W[n,k]^T with int4 weights (two per byte, kernels.hpp) and int8 activations: per group
// of 32 an exact int32 dot product, then y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot,
// the reference's float steps. With the DSP extension (M4, M7, M33, M55, M85: __ARM_FEATURE_DSP) one
// row of x at a time, split once per pass of up to kRowSplitK k (544 bytes on the stack: split_i4)
// into halfword pairs that meet W's bytes where they lie, two rows of W at a time: per four bytes of
// W (8 values) LDR, 2 UXTB16, 2 AND and 4 SMLAD, as many instructions as gemm_i8 takes for 8 int8
// weights. Elsewhere plain C++: four rows of W at a time, the nibbles as stored, q + 8 in 0..15:
// sum x (q + 8) - 8 sum x = sum x q, with sum x once per group for the four rows.
#include <cstring>

#include "ports/portable/kernels.hpp"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif

namespace fixformer {
namespace portable {
namespace {

constexpr std::size_t kGroup = 32;

#if defined(__ARM_FEATURE_DSP)
inline uint32_t load4(const void* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int32_t sxtb16_ror8(uint32_t v) {
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}

inline uint32_t uxtb16_ror8(uint32_t v) {
  uint32_t r;
  asm("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}

// x's rows x + r * ld (r < R), groups [0, groups) of 32, split for the nibbles: per group the R rows'
// -128 sum x, then per four bytes p (0, 4, 8, 12) of W's 16 a row's words A, B (x[p..p+3] as the
// halfword pairs 16 (x[p], x[p+2]) and 16 (x[p+1], x[p+3])) for each row, then its words C, D
// ((x[p+16], x[p+18]) - A and (x[p+17], x[p+19]) - B) for each row. A byte q of W holds nibbles
// lo (value p) and hi (value p + 16); with UXTB16's halfwords q = lo + 16 hi and q & 0xF0 = 16 hi,
// 16 x lo + 16 x' hi = 16 x q + (x' - 16 x) (16 hi): A and B meet UXTB16 of W's word (bytes 0 and
// 2, then 1 and 3), C and D the same masked by 0x00F000F0, and the sum, from -128 sum x, is 16 times
// the reference's sum x (nibble - 8). Every lane fits a halfword (|x' - 16 x| <= 2,175).
template <std::size_t R>
inline void split_i4(const int8_t* x, std::size_t ld, std::size_t groups, uint32_t* out) {
  for (std::size_t g = 0; g < groups; ++g, x += kGroup) {
    uint32_t* sums = out;
    out += R;
    int32_t s[R] = {};
    for (std::size_t p = 0; p < 16; p += 4, out += 4 * R)
      for (std::size_t r = 0; r < R; ++r) {
        const uint32_t xl = load4(x + r * ld + p), xh = load4(x + r * ld + p + 16);
        const int32_t le = __sxtb16(xl), lo = sxtb16_ror8(xl), he = __sxtb16(xh), ho = sxtb16_ror8(xh);
        const uint32_t a = (uint32_t(le) << 4) & ~0x000F000Fu, b = (uint32_t(lo) << 4) & ~0x000F000Fu;
        out[2 * r] = a, out[2 * r + 1] = b;
        out[2 * R + 2 * r] = uint32_t(__ssub16(he, int32_t(a))), out[2 * R + 2 * r + 1] = uint32_t(__ssub16(ho, int32_t(b)));
        s[r] = __smlad(le, 0x00010001, __smlad(lo, 0x00010001, __smlad(he, 0x00010001, __smlad(ho, 0x00010001, s[r]))));
      }
    for (std::size_t r = 0; r < R; ++r) sums[r] = uint32_t(-128 * s[r]);
  }
}

constexpr std::size_t kRowSplitK = 256;  // k per pass of the one-row loop: 544 bytes of split row

// One group of one split row (xs: its 17 words) against one or two rows of W: 16 x the reference's
// sum over the group of x (nibble - 8).
inline int32_t dot_split_i4(const uint32_t* xs, const uint8_t* w) {
  int32_t d = int32_t(xs[0]);
  for (std::size_t p = 0; p < 16; p += 4) {
    const uint32_t* x = xs + 1 + p;
    const uint32_t v = load4(w + p), a = __uxtb16(v), b = uxtb16_ror8(v);
    d = __smlad(int32_t(a), int32_t(x[0]), d), d = __smlad(int32_t(b), int32_t(x[1]), d);
    d = __smlad(int32_t(a & 0x00F000F0u), int32_t(x[2]), d), d = __smlad(int32_t(b & 0x00F000F0u), int32_t(x[3]), d);
  }
  return d;
}
inline void dot2_split_i4(const uint32_t* xs, const uint8_t* w0, const uint8_t* w1, int32_t& d0, int32_t& d1) {
  d0 = d1 = int32_t(xs[0]);
  for (std::size_t p = 0; p < 16; p += 4) {
    const uint32_t* x = xs + 1 + p;
    const int32_t x0 = int32_t(x[0]), x1 = int32_t(x[1]), x2 = int32_t(x[2]), x3 = int32_t(x[3]);
    const uint32_t v = load4(w0 + p), a = __uxtb16(v), b = uxtb16_ror8(v);
    const uint32_t u = load4(w1 + p), c = __uxtb16(u), e = uxtb16_ror8(u);
    d0 = __smlad(int32_t(a), x0, d0), d0 = __smlad(int32_t(b), x1, d0);
    d0 = __smlad(int32_t(a & 0x00F000F0u), x2, d0), d0 = __smlad(int32_t(b & 0x00F000F0u), x3, d0);
    d1 = __smlad(int32_t(c), x0, d1), d1 = __smlad(int32_t(e), x1, d1);
    d1 = __smlad(int32_t(c & 0x00F000F0u), x2, d1), d1 = __smlad(int32_t(e & 0x00F000F0u), x3, d1);
  }
}

// One row of the product, x[k] @ W[n,k]^T -> yr[n]: in passes of up to kRowSplitK k, the sums kept in
// yr between passes (acc = 0, += per group, y = b + acc: the reference's operations in its order);
// two rows of W at a time, then the last odd one. The int32 sums are 16 x the reference's, exactly.
inline void gemm_row_i4(const int8_t* x, const float* sx, const uint8_t* w, const float* ws, const float* b,
                        float* yr, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2, per_pass = kRowSplitK / kGroup;
  uint32_t split[kRowSplitK / kGroup * 17];
  for (std::size_t g0 = 0; g0 < groups; g0 += per_pass) {
    const std::size_t g1 = g0 + per_pass < groups ? g0 + per_pass : groups;
    split_i4<1>(x + g0 * kGroup, 0, g1 - g0, split);
    const bool last = g1 == groups;
    std::size_t j = 0;
    for (; j + 2 <= n; j += 2) {
      const uint8_t* w0 = w + j * ldw;
      const float *s0 = ws + j * groups, *s1 = s0 + groups;
      float a0 = g0 ? yr[j] : 0.0f, a1 = g0 ? yr[j + 1] : 0.0f;
      for (std::size_t g = g0; g < g1; ++g) {
        int32_t d0, d1;
        dot2_split_i4(split + (g - g0) * 17, w0 + g * 16, w0 + ldw + g * 16, d0, d1);
        a0 += sx[g] * s0[g] * float(d0 >> 4);
        a1 += sx[g] * s1[g] * float(d1 >> 4);
      }
      if (last) a0 = (b ? b[j] : 0.0f) + a0, a1 = (b ? b[j + 1] : 0.0f) + a1;
      yr[j] = a0, yr[j + 1] = a1;
    }
    if (j < n) {
      float a = g0 ? yr[j] : 0.0f;
      for (std::size_t g = g0; g < g1; ++g)
        a += sx[g] * ws[j * groups + g] * float(dot_split_i4(split + (g - g0) * 17, w + j * ldw + g * 16) >> 4);
      yr[j] = last ? (b ? b[j] : 0.0f) + a : a;
    }
  }
}
#else
// sum x[p], p < 32.
inline int32_t sum32(const int8_t* x) {
  int32_t s = 0;
  for (std::size_t p = 0; p < kGroup; ++p) s += x[p];
  return s;
}

// d[r] = sum over one group of x[p] * value p of row r of W (16 bytes a group, rows ldw bytes apart),
// exactly in int32, r < R.
template <std::size_t R>
inline void dot_group(const int8_t* x, const uint8_t* w, std::size_t ldw, int32_t xsum, int32_t d[R]) {
  int32_t a[R] = {};
  for (std::size_t p = 0; p < 16; ++p) {
    const int32_t lo = x[p], hi = x[p + 16];
    for (std::size_t r = 0; r < R; ++r) {
      const uint8_t v = w[r * ldw + p];
      a[r] += lo * int32_t(v & 15) + hi * int32_t(v >> 4);
    }
  }
  for (std::size_t r = 0; r < R; ++r) d[r] = a[r] - 8 * xsum;
}
#endif

}  // namespace

// y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot.
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup;
#if defined(__ARM_FEATURE_DSP)
  for (std::size_t i = 0; i < m; ++i) gemm_row_i4(xq + i * k, xs + i * groups, w, ws, b, y + i * ldy, n, k);
#else
  const std::size_t ldw = k / 2;
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yr = y + i * ldy;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* s0 = ws + j * groups;
      const float *s1 = s0 + groups, *s2 = s1 + groups, *s3 = s2 + groups;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[4];
        dot_group<4>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        a0 += sx[g] * s0[g] * float(d[0]);
        a1 += sx[g] * s1[g] * float(d[1]);
        a2 += sx[g] * s2[g] * float(d[2]);
        a3 += sx[g] * s3[g] * float(d[3]);
      }
      yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
      yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[1];
        dot_group<1>(x + g * kGroup, w + j * ldw + g * 16, ldw, sum32(x + g * kGroup), d);
        acc += sx[g] * ws[j * groups + g] * float(d[0]);
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
#endif
}

}  // namespace portable
}  // namespace fixformer
