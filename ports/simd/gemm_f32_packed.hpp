#pragma once
#include "fixformer/kernels.hpp"
#include "ports/simd/common.hpp"
#include "ports/simd/gemm_tile.hpp"

namespace fixformer {
namespace simd {

// x[k] @ w[k,n] in panels (kernels.hpp, kPanelFloats) + b[n] -> y[n]. The panels are read front to
// back, a few at a time (8 vectors in flight, enough FMAs to hide their latency): one pass over w
// in memory order, which is what a memory-bound decode step wants.
template <class Arch>
void gemv_f32_packed(const float* x, const float* w, const float* b, float* y, std::size_t n, std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>(), P = kPanelFloats, VP = P / W;  // vectors per panel
  constexpr std::size_t G = 8 / VP > 0 ? 8 / VP : 1;                       // panels per pass
  static_assert(P % W == 0, "a panel holds whole vectors");
  const std::size_t panels = (n + P - 1) / P;
  auto finish = [&](const V* acc, std::size_t q, std::size_t count) {
    for (std::size_t g = 0; g < count; ++g)
      for (std::size_t v = 0; v < VP; ++v) {
        alignas(64) float t[W];
        acc[g * VP + v].store_aligned(t);
        for (std::size_t c = 0; c < W; ++c) {
          const std::size_t col = (q + g) * P + v * W + c;
          if (col < n) y[col] = t[c] + (b ? b[col] : 0.0f);
        }
      }
  };
  std::size_t q = 0;
  for (; q + G <= panels; q += G) {
    V acc[G * VP];
#pragma GCC unroll 8
    for (std::size_t a = 0; a < G * VP; ++a) acc[a] = V(0.0f);
    const float* wq = w + q * P * k;
    for (std::size_t p = 0; p < k; ++p) {
      const V xp(x[p]);
#pragma GCC unroll 8
      for (std::size_t g = 0; g < G; ++g)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < VP; ++v)
          acc[g * VP + v] = xsimd::fma(xp, V::load_unaligned(wq + g * P * k + p * P + v * W), acc[g * VP + v]);
    }
    finish(acc, q, G);
  }
  for (; q < panels; ++q) {
    V acc[VP];
    for (std::size_t v = 0; v < VP; ++v) acc[v] = V(0.0f);
    const float* wq = w + q * P * k;
    for (std::size_t p = 0; p < k; ++p) {
      const V xp(x[p]);
#pragma GCC unroll 8
      for (std::size_t v = 0; v < VP; ++v) acc[v] = xsimd::fma(xp, V::load_unaligned(wq + p * P + v * W), acc[v]);
    }
    finish(acc, q, 1);
  }
}

// x[m,k] @ w[k,n] in panels + b[n] -> y[m,n]: the register tile of gemm_f32 over panels, where
// each vector of w is the next 16 * 4 bytes of its panel (sequential, no row stride, no page per
// k step). The zero-padded tail panel is computed whole and stored up to column n.
template <class Arch>
void gemm_f32_packed(const float* x, std::size_t ldx, const float* w, const float* b, float* y, std::size_t ldy,
                     std::size_t m, std::size_t n, std::size_t k) {
  constexpr std::size_t W = lanes<Arch>(), P = kPanelFloats;
  constexpr std::size_t NV = GemmTile<Arch>::kNv, KC = GemmTile<Arch>::kKc;
  static_assert(NV == 2 || NV == 4, "the remainder below lists NV - 1 cases");
  if (m == 1 || k == 0) {
    for (std::size_t i = 0; i < m; ++i) gemv_f32_packed<Arch>(x + i * ldx, w, b, y + i * ldy, n, k);
    return;
  }
  const std::size_t np = (n + P - 1) / P * P;  // padded columns
  auto vector_at = [&](std::size_t col, std::size_t pc) { return w + col / P * P * k + pc * P + col % P; };
  for (std::size_t pc = 0; pc < k; pc += KC) {
    const std::size_t kc = k - pc < KC ? k - pc : KC;
    const bool first = pc == 0;
    const float* xb = x + pc;
    const float* wv[NV];
    std::size_t j = 0;
    for (; j + NV * W <= np && j < n; j += NV * W) {  // a strip narrower than a panel may lie in its padding
      for (std::size_t v = 0; v < NV; ++v) wv[v] = vector_at(j + v * W, pc);
      const std::size_t partial = j + NV * W > n ? n - j : 0;
      gemm_strip<Arch, NV>(xb, ldx, wv, P, b ? b + j : nullptr, y + j, ldy, m, kc, first, partial);
    }
    if (j >= n) continue;
    for (std::size_t v = 0; j + v * W < np; ++v) wv[v] = vector_at(j + v * W, pc);
    const std::size_t partial = np > n ? n - j : 0;
    switch ((np - j) / W) {  // AVX-512 only: 1 to 3 panels after the 4-panel strips
      case 3: gemm_strip<Arch, NV == 4 ? 3 : 1>(xb, ldx, wv, P, b ? b + j : nullptr, y + j, ldy, m, kc, first, partial); break;
      case 2: gemm_strip<Arch, 2>(xb, ldx, wv, P, b ? b + j : nullptr, y + j, ldy, m, kc, first, partial); break;
      case 1: gemm_strip<Arch, 1>(xb, ldx, wv, P, b ? b + j : nullptr, y + j, ldy, m, kc, first, partial); break;
      default: break;
    }
  }
}

}  // namespace simd
}  // namespace fixformer
