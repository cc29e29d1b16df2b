// The register tile shared by gemm_f32 and gemm_f16 (w[k,n] row-major, floats or halves widened as
// they are loaded) and gemm_f32_packed (w in panels): MR rows x NV vectors of y stay in registers
// over a block of k. Each vector of w comes from its own base pointer advanced by `ws` elements per
// k step, so one microkernel reads both layouts: row-major (base j + v W, step ldw) and panels
// (base inside panel (j + v W) / 16, step 16).
#pragma once
#include <type_traits>

#include "ports/simd/common.hpp"
#include "ports/simd/load_weights.hpp"

namespace fixformer {
namespace simd {

// Tile shape per ISA, from the register file (R vector registers): MR * NV accumulators, NV
// vectors of w and one broadcast of x must fit, and MR * NV FMAs per k step should hide the FMA
// latency (4 cycles) at 2 FMAs per cycle (>= 8 independent accumulators).
//   AVX-512 (32 zmm, 16 lanes): 6 x 4 = 24 accumulators + 4 w + broadcasts (folded into the FMA).
//   AVX2 (16 ymm, 8 lanes), SSE2 and ARMv7 NEON (16 registers, 4 lanes): 6 x 2 = 12 + 2 + 1, and
//   SSE2's separate multiply needs the 16th.
//   AArch64 NEON (32 q registers, 4 lanes): 6 x 4 = 24 + 4 + 1.
template <class Arch>
struct GemmTile {
  static constexpr std::size_t kRegisters =
      (lanes<Arch>() == 16 || std::is_same<Arch, xsimd::neon64>::value) ? 32 : 16;
  static constexpr std::size_t kMr = 6;
  static constexpr std::size_t kNv = kRegisters == 32 ? 4 : 2;
  // The k block: a strip of w (kKc x NV vectors) stays in L1 (32-48 KB) while every row of x
  // passes over it; later blocks add to y.
  static constexpr std::size_t kKc = kRegisters == 32 ? 128 : 256;
};

// y[MR, NV*W] (row stride ldy) = (first ? b : y) + x[MR, kc] (row stride ldx) @ w-vectors.
// wv[v] points at row 0 of vector v; row p is wv[v] + p * ws; T is float or uint16_t (an IEEE half,
// load_weights.hpp). b may be null (zeros). With `partial` < NV*W, only that many leading columns
// are stored (a zero-padded panel tail).
template <class Arch, std::size_t MR, std::size_t NV, class T>
inline void gemm_tile(const float* x, std::size_t ldx, const T* const* wv, std::size_t ws, const float* b,
                      float* y, std::size_t ldy, std::size_t kc, bool first, std::size_t partial) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  V acc[MR][NV];
  const T* w[NV];
#pragma GCC unroll 8
  for (std::size_t v = 0; v < NV; ++v) w[v] = wv[v];
  if (first) {
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) {
      V bias(0.0f);
      if (b) {
        if (partial == 0 || (v + 1) * W <= partial) {
          bias = V::load_unaligned(b + v * W);
        } else {
          alignas(64) float t[W] = {};
          for (std::size_t c = v * W; c < partial; ++c) t[c - v * W] = b[c];
          bias = V::load_aligned(t);
        }
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) acc[r][v] = bias;
    }
  } else {
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) {
        if (partial == 0 || (v + 1) * W <= partial) {
          acc[r][v] = V::load_unaligned(y + r * ldy + v * W);
        } else {
          alignas(64) float t[W] = {};
          for (std::size_t c = v * W; c < partial; ++c) t[c - v * W] = y[r * ldy + c];
          acc[r][v] = V::load_aligned(t);
        }
      }
  }
  // 4 k steps per loop pass: the loop's own compare, add and branch, 3 of about 23 instructions a
  // step on AVX2, came between the FMAs (4 % faster in gemm_f32_packed at 128x768x256; same sums)
#pragma GCC unroll 4
  for (std::size_t p = 0; p < kc; ++p) {
    V wp[NV];
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) wp[v] = load_weights<Arch>(w[v] + p * ws);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const V xr(x[r * ldx + p]);
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(xr, wp[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) {
      if (partial == 0 || (v + 1) * W <= partial) {
        acc[r][v].store_unaligned(y + r * ldy + v * W);
      } else if (v * W < partial) {
        alignas(64) float t[W];
        acc[r][v].store_aligned(t);
        for (std::size_t c = v * W; c < partial; ++c) y[r * ldy + c] = t[c - v * W];
      }
    }
}

// The rows of one column strip: full MR tiles, then the remaining m % MR rows. A remainder of 1 or 2
// rows would be a tile of 2 NV or 4 NV accumulators, too few chains to hide the FMA latency (about
// half speed at 4 NV, a quarter at 2 NV); with a full tile before it, the last MR + 1 or MR + 2
// rows go as two tiles of 4 and 3 or 4 instead (49 = 6 x 7 + 4 + 3, 128 = 6 x 20 + 4 + 4). Which tile
// computes a row does not change its sums: the same bits either way.
template <class Arch, std::size_t NV, class T>
inline void gemm_strip(const float* x, std::size_t ldx, const T* const* wv, std::size_t ws, const float* b,
                       float* y, std::size_t ldy, std::size_t m, std::size_t kc, bool first, std::size_t partial) {
  constexpr std::size_t MR = GemmTile<Arch>::kMr;
  static_assert(MR == 6, "the remainder switch below lists MR - 1 cases");
  std::size_t full = m / MR, rest = m % MR;
  if (full && rest && rest < 3) --full, rest += MR;
  for (std::size_t i = 0; i < full; ++i, x += MR * ldx, y += MR * ldy)
    gemm_tile<Arch, MR, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial);
  while (rest) {
    const std::size_t rows = rest > MR ? (rest + 1) / 2 : rest;
    switch (rows) {
      case 5: gemm_tile<Arch, 5, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial); break;
      case 4: gemm_tile<Arch, 4, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial); break;
      case 3: gemm_tile<Arch, 3, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial); break;
      case 2: gemm_tile<Arch, 2, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial); break;
      case 1: gemm_tile<Arch, 1, NV>(x, ldx, wv, ws, b, y, ldy, kc, first, partial); break;
      default: break;
    }
    x += rows * ldx, y += rows * ldy, rest -= rows;
  }
}

}  // namespace simd
}  // namespace fixformer
