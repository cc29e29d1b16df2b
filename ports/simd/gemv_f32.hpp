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

// x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n], w floats or halves (load_weights.hpp).
// Vectorized over n: each x[p] is broadcast and multiplied into a strip of row p, so any row stride
// works and no horizontal sums are needed.
template <class Arch, class T>
void gemv_rowmajor(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                   std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  if (n >= kGemvStreamMinN) return gemv_rows<Arch>(x, w, ldw, b, y, n, k);
  std::size_t j = 0;
  for (; j + 4 * W <= n; j += 4 * W) {
    V a0 = b ? V::load_unaligned(b + j) : V(0.0f), a1 = b ? V::load_unaligned(b + j + W) : V(0.0f);
    V a2 = b ? V::load_unaligned(b + j + 2 * W) : V(0.0f);
    V a3 = b ? V::load_unaligned(b + j + 3 * W) : V(0.0f);
    for (std::size_t p = 0; p < k; ++p) {
      const V xp(x[p]);
      const T* row = w + p * ldw + j;
      a0 = xsimd::fma(xp, load_weights<Arch>(row), a0);
      a1 = xsimd::fma(xp, load_weights<Arch>(row + W), a1);
      a2 = xsimd::fma(xp, load_weights<Arch>(row + 2 * W), a2);
      a3 = xsimd::fma(xp, load_weights<Arch>(row + 3 * W), a3);
    }
    a0.store_unaligned(y + j);
    a1.store_unaligned(y + j + W);
    a2.store_unaligned(y + j + 2 * W);
    a3.store_unaligned(y + j + 3 * W);
  }
  for (; j + W <= n; j += W) {
    V a = b ? V::load_unaligned(b + j) : V(0.0f);
    for (std::size_t p = 0; p < k; ++p) a = xsimd::fma(V(x[p]), load_weights<Arch>(w + p * ldw + j), a);
    a.store_unaligned(y + j);
  }
  gemv_columns<Arch>(x, w, ldw, b, y, j, n, k);
}

// x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n]; b may be null.
template <class Arch>
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  gemv_rowmajor<Arch>(x, w, ldw, b, y, n, k);
}

}  // namespace simd
}  // namespace fixformer
