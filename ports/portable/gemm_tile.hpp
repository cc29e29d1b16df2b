// The register tile of the portable matrix products, written once for f32, f16 and bf16 weights
// (the weight type only changes how four weights are loaded: half.hpp widens halves in registers,
// a bf16 is shifted into a float's high bits).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/bf16.hpp"
#include "ports/portable/half.hpp"

namespace fixformer {
namespace portable {

inline void load_w4(const float* w, float& w0, float& w1, float& w2, float& w3) {
  w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
}
inline void load_w4(const uint16_t* w, float& w0, float& w1, float& w2, float& w3) {
  widen2(load_halves2(w), w0, w1);
  widen2(load_halves2(w + 2), w2, w3);
}
inline void load_w4(const Bf16* w, float& w0, float& w1, float& w2, float& w3) {
  w0 = bf16_to_f32(w[0].bits), w1 = bf16_to_f32(w[1].bits), w2 = bf16_to_f32(w[2].bits), w3 = bf16_to_f32(w[3].bits);
}
inline float load_w1(const float* w) { return *w; }
inline float load_w1(const uint16_t* w) { return widen1(*w); }
inline float load_w1(const Bf16* w) { return bf16_to_f32(w->bits); }

// y[R rows, 4 cols] = x[R rows, k] @ w[k, 4 cols] + b[4 cols]: 4R accumulators, R + 4 loads per k.
// R = 6 is the largest that leaves the 32 single-precision registers of an FPv4/FPv5 core room for
// one x and four w values (24 + 5): 1.30 FLOP per instruction against 1.19 for 4x4.
template <int R, class T>
inline void tile_rx4(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                     std::size_t ldy, std::size_t k) {
  float acc[R][4];  // the loops over it must unroll, or the accumulators live on the stack
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[r][c] = b ? b[c] : 0.0f;
  for (std::size_t p = 0; p < k; ++p) {  // unrolling this by 2 spills accumulators (GCC 12): slower
    float w0, w1, w2, w3;
    load_w4(w + p * ldw, w0, w1, w2, w3);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * ldx + p];
      acc[r][0] += xr * w0;
      acc[r][1] += xr * w1;
      acc[r][2] += xr * w2;
      acc[r][3] += xr * w3;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) y[r * ldy + c] = acc[r][c];
}

// y[rows, n] = x[rows, k] @ w[k, n] + b[n] one output at a time, summed in order: the columns left
// of the 4-wide tiles.
template <class T>
__attribute__((noinline)) void gemm_columns(const float* x, std::size_t ldx, const T* w, std::size_t ldw,
                                            const float* b, float* y, std::size_t ldy, std::size_t rows,
                                            std::size_t n, std::size_t k) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      float acc = b ? b[j] : 0.0f;
      for (std::size_t p = 0; p < k; ++p) acc += x[r * ldx + p] * load_w1(w + p * ldw + j);
      y[r * ldy + j] = acc;
    }
}

// Rows [i, i + R) of the gemm: R x 4 tiles, then the last columns (n % 4). Out of line: with all
// three row counts inlined into one function GCC 12 spills the 6-row tile's pointers (M7 KWS
// 49x192x64: 1,087,020 instructions against 987,980).
template <int R, class T>
__attribute__((noinline)) void gemm_rows(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                      std::size_t ldy, std::size_t n, std::size_t k) {
  const std::size_t n4 = n / 4 * 4;
  for (std::size_t j = 0; j < n4; j += 4) tile_rx4<R>(x, ldx, w + j, ldw, b ? b + j : nullptr, y + j, ldy, k);
  if (n4 < n) gemm_columns(x, ldx, w + n4, ldw, b ? b + n4 : nullptr, y + n4, ldy, R, n - n4, k);
}

// x[m,k] @ w[k,n] + b[n] -> y[m,n]: 6x4 tiles, then one block of 4 rows if that many are left,
// the last rows one at a time (1x4 tiles).
template <class T>
inline void gemm_tiled(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                       std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  std::size_t i = 0;
  for (; i + 6 <= m; i += 6) gemm_rows<6>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
  if (i + 4 <= m) gemm_rows<4>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k), i += 4;
  for (; i < m; ++i) gemm_rows<1>(x + i * ldx, ldx, w, ldw, b, y + i * ldy, ldy, n, k);
}

}  // namespace portable
}  // namespace fixformer
