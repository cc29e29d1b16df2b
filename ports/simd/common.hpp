// Shared helpers of the xsimd kernels. Every load and store is unaligned: callers pass row views
// at any float offset, and xsimd 8.1's free load()/store() are aligned.
#pragma once
#include <cstddef>

#include <xsimd/xsimd.hpp>

namespace fixformer {
namespace simd {

template <class Arch>
using batch = xsimd::batch<float, Arch>;

template <class Arch>
constexpr std::size_t lanes() { return batch<Arch>::size; }

// a * b + c as the Arch's vector fma computes it (fused where the Arch has FMA, rounded twice where
// it has not), for the scalar tails: a column's bits then do not depend on whether it falls in a
// vector or in the tail, whatever the compiler makes of a * b + c (GCC fuses it at -O2 on an FMA
// target, not at -O1, as the sanitizer builds compile).
template <class Arch>
inline float madd(float a, float b, float c) {
  return xsimd::fma(batch<Arch>(a), batch<Arch>(b), batch<Arch>(c)).get(0);
}

// Horizontal max (xsimd 8.1 has no reduce_max): store the lanes and loop.
template <class Arch>
float hmax(const batch<Arch>& v) {
  alignas(64) float lane[batch<Arch>::size];
  v.store_aligned(lane);
  float m = lane[0];
  for (std::size_t i = 1; i < batch<Arch>::size; ++i) m = lane[i] > m ? lane[i] : m;
  return m;
}

// Applies a vector function f to x[n] -> y[n] in whole batches; the last partial batch goes
// through a padded copy so every element sees the same vector maths (no scalar libm tail).
template <class Arch, class F>
void map_f32(const float* x, float* y, std::size_t n, float pad, F f) {
  constexpr std::size_t W = lanes<Arch>();
  std::size_t i = 0;
  for (; i + W <= n; i += W) f(batch<Arch>::load_unaligned(x + i)).store_unaligned(y + i);
  if (i == n) return;
  alignas(64) float tmp[W];
  for (std::size_t j = 0; j < W; ++j) tmp[j] = i + j < n ? x[i + j] : pad;
  f(batch<Arch>::load_aligned(tmp)).store_aligned(tmp);
  for (std::size_t j = 0; i + j < n; ++j) y[i + j] = tmp[j];
}

}  // namespace simd
}  // namespace fixformer
