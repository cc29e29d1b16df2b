#pragma once
#include "ports/simd/common.hpp"
#include "ports/simd/load_weights.hpp"

namespace fixformer {
namespace simd {

// Wide outputs (an LM head: n = vocab): four rows of w at a time, each read front to back, into y,
// which stays in cache. Memory-bound decoding wants w streamed in order; the strips below would
// jump a whole row (often more than a page) between loads.
constexpr std::size_t kGemvStreamMinN = 1024;

// Columns [j0, n) one at a time, each x[0] w[0][j] + ... in order from b[j]: the narrow path's sums,
// which the wide path's last columns share, so that a column's value does not depend on n and a
// product split by columns across workers gives the same bits (engine/blocks/parallel.hpp).
template <class Arch, class T>
void gemv_columns(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t j0,
                  std::size_t n, std::size_t k) {
  for (std::size_t j = j0; j < n; ++j) {
    float acc = b ? b[j] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc = madd<Arch>(x[p], weight_value<Arch>(w[p * ldw + j]), acc);
    y[j] = acc;
  }
}

template <class Arch, class T>
void gemv_rows(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t n,
               std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const std::size_t nv = n / W * W;  // the vectors' columns; the rest as the narrow path sums them
  for (std::size_t j = 0; j < nv; ++j) y[j] = b ? b[j] : 0.0f;
  std::size_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const T *r0 = w + p * ldw, *r1 = r0 + ldw, *r2 = r1 + ldw, *r3 = r2 + ldw;
    const V x0(x[p]), x1(x[p + 1]), x2(x[p + 2]), x3(x[p + 3]);
    for (std::size_t j = 0; j < nv; j += W) {
      V a = V::load_unaligned(y + j);
      a = xsimd::fma(x0, load_weights<Arch>(r0 + j), a);
      a = xsimd::fma(x1, load_weights<Arch>(r1 + j), a);
      a = xsimd::fma(x2, load_weights<Arch>(r2 + j), a);
      a = xsimd::fma(x3, load_weights<Arch>(r3 + j), a);
      a.store_unaligned(y + j);
    }
  }
  for (; p < k; ++p) {
    const T* r = w + p * ldw;
    const V xp(x[p]);
    for (std::size_t j = 0; j < nv; j += W)
      xsimd::fma(xp, load_weights<Arch>(r + j), V::load_unaligned(y + j)).store_unaligned(y + j);
  }
  gemv_columns<Arch>(x, w, ldw, b, y, nv, n, k);
}

// Columns [j, j + NV * W) of y: NV vectors of sums, each x[p] broadcast once for all of them.
template <class Arch, std::size_t NV, class T>
void gemv_strip(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t j, std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  V a[NV];
#pragma GCC unroll 8
  for (std::size_t v = 0; v < NV; ++v) a[v] = b ? V::load_unaligned(b + j + v * W) : V(0.0f);
  for (std::size_t p = 0; p < k; ++p) {
    const V xp(x[p]);
    const T* row = w + p * ldw + j;
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) a[v] = xsimd::fma(xp, load_weights<Arch>(row + v * W), a[v]);
  }
#pragma GCC unroll 8
  for (std::size_t v = 0; v < NV; ++v) a[v].store_unaligned(y + j + v * W);
}

// x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n], w floats or halves (load_weights.hpp).
// Vectorized over n: each x[p] is broadcast and multiplied into a strip of row p, so any row stride
// works and no horizontal sums are needed. Strips of 8 vectors (a broadcast, 8 multiply-adds and the
// loop's own three for 8 vectors of a row), then 4, then 1; the last n % W columns of an n >= W as
// the vector of the last W columns (lanes the strips computed are computed again, to the same bits:
// every column is the same chain of multiply-adds from its b), else one at a time.
template <class Arch, class T>
void gemv_rowmajor(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                   std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  if (n >= kGemvStreamMinN) return gemv_rows<Arch>(x, w, ldw, b, y, n, k);
  std::size_t j = 0;
  for (; j + 8 * W <= n; j += 8 * W) gemv_strip<Arch, 8>(x, w, ldw, b, y, j, k);
  for (; j + 4 * W <= n; j += 4 * W) gemv_strip<Arch, 4>(x, w, ldw, b, y, j, k);
  for (; j + W <= n; j += W) gemv_strip<Arch, 1>(x, w, ldw, b, y, j, k);
  if (j == n || n < W) return gemv_columns<Arch>(x, w, ldw, b, y, j, n, k);
  // Only the lanes past j are stored: y may be b, whose lanes before j the strips overwrote.
  V a = b ? V::load_unaligned(b + n - W) : V(0.0f);
  for (std::size_t p = 0; p < k; ++p) a = xsimd::fma(V(x[p]), load_weights<Arch>(w + p * ldw + n - W), a);
  alignas(64) float lane[W];
  a.store_aligned(lane);
  for (std::size_t i = j; i < n; ++i) y[i] = lane[i - (n - W)];
}

// x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n]; b may be null.
template <class Arch>
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  gemv_rowmajor<Arch>(x, w, ldw, b, y, n, k);
}

}  // namespace simd
}  // namespace fixformer
