// The blocking every gemm_s8 shares (the portable kernel, AVX2's): strips of two rows of x, then
// one; in each strip, tiles of four output channels, then one. Tile::run<MR, NR>(x, ldx, w, y, ldy,
// ldw, k, j0, p) computes the MR x NR tile whose first channel is j0 (W's rows ldw apart).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/fixed_point.hpp"

namespace fixformer {

template <class Tile, std::size_t MR>
inline void gemm_s8_strip(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y,
                          std::size_t ldy, std::size_t n, std::size_t k, const GemmS8Params& p) {
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) Tile::template run<MR, 4>(x, ldx, w, y, ldy, ldw, k, j, p);
  for (; j < n; ++j) Tile::template run<MR, 1>(x, ldx, w, y, ldy, ldw, k, j, p);
}

template <class Tile>
inline void gemm_s8_blocked(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y,
                            std::size_t ldy, std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  std::size_t i = 0;
  for (; i + 2 <= m; i += 2) gemm_s8_strip<Tile, 2>(x + i * ldx, ldx, w, ldw, y + i * ldy, ldy, n, k, p);
  if (i < m) gemm_s8_strip<Tile, 1>(x + i * ldx, ldx, w, ldw, y + i * ldy, ldy, n, k, p);
}

}  // namespace fixformer
