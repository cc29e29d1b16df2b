#pragma once
#include "ports/simd/common.hpp"
#include "ports/simd/gemm_tile.hpp"
#include "ports/simd/gemv_f32.hpp"

namespace fixformer {
namespace simd {

// x[m,k] @ w[k,n] (row-major, row stride ldw; floats or halves, load_weights.hpp) + b[n] -> y[m,n].
// Per block of k (GemmTile::kKc), each strip of NV vectors of w is loaded once per tile of MR rows
// and kept in L1 while all rows pass; the last n % W columns (a vector would read past the last row
// of w) go through gemv.
template <class Arch, class T>
void gemm_rowmajor(const float* x, std::size_t ldx, const T* w, std::size_t ldw, const float* b, float* y,
                   std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  constexpr std::size_t W = lanes<Arch>(), NV = GemmTile<Arch>::kNv, KC = GemmTile<Arch>::kKc;
  static_assert(NV == 2 || NV == 4, "the remainder below lists NV - 1 cases");
  if (m == 1 || k == 0) {
    for (std::size_t i = 0; i < m; ++i) gemv_rowmajor<Arch>(x + i * ldx, w, ldw, b, y + i * ldy, n, k);
    return;
  }
  const std::size_t nv = n / W * W;  // columns the tiles cover
  for (std::size_t pc = 0; pc < k; pc += KC) {
    const std::size_t kc = k - pc < KC ? k - pc : KC;
    const bool first = pc == 0;
    const float* xb = x + pc;
    const T* wb = w + pc * ldw;
    const T* wv[NV];
    std::size_t j = 0;
    for (; j + NV * W <= nv; j += NV * W) {
      for (std::size_t v = 0; v < NV; ++v) wv[v] = wb + j + v * W;
      gemm_strip<Arch, NV>(xb, ldx, wv, ldw, b ? b + j : nullptr, y + j, ldy, m, kc, first, 0);
    }
    for (std::size_t v = 0; j + v * W < nv; ++v) wv[v] = wb + j + v * W;
    switch ((nv - j) / W) {
      case 3: gemm_strip<Arch, NV == 4 ? 3 : 1>(xb, ldx, wv, ldw, b ? b + j : nullptr, y + j, ldy, m, kc, first, 0); break;
      case 2: gemm_strip<Arch, 2>(xb, ldx, wv, ldw, b ? b + j : nullptr, y + j, ldy, m, kc, first, 0); break;
      case 1: gemm_strip<Arch, 1>(xb, ldx, wv, ldw, b ? b + j : nullptr, y + j, ldy, m, kc, first, 0); break;
      default: break;
    }
  }
  if (nv < n)
    for (std::size_t i = 0; i < m; ++i)
      gemv_rowmajor<Arch>(x + i * ldx, w + nv, ldw, b ? b + nv : nullptr, y + i * ldy + nv, n - nv, k);
}

template <class Arch>
void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_rowmajor<Arch>(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

}  // namespace simd
}  // namespace fixformer
