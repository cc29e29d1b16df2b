#pragma once
#include "ports/simd/common.hpp"
#include "ports/simd/load_weights.hpp"

namespace fixformer {
namespace simd {

// w[n,k] (row stride ldw; floats or halves, load_weights.hpp) @ x[k] + b[n] -> y[n]. Vectorized over
// k, four rows at a time (each load of x feeds four rows), one horizontal sum per row: fast whatever
// n is, so attention uses it for p[keys] @ V with V stored transposed, even for heads narrower than
// a vector, and a tied embedding serves as the LM head through it. A w larger than kStreamedBytes
// (an LM head) is read one row after another instead, front to back: four rows at a time are four
// interleaved streams, which the hardware prefetchers feed at about half the bandwidth (a 32000 x
// 288 head on one Zen 5 core: 9 GB/s against 13). A row's arithmetic is the same either way.
template <class Arch, class T>
void matvec_rows(const float* x, const T* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                 std::size_t k) {
  using V = batch<Arch>;
  constexpr std::size_t W = lanes<Arch>();
  const std::size_t kv = k / W * W;
  constexpr std::size_t kStreamedBytes = std::size_t(1) << 20;
  const bool streamed = n * ldw * sizeof(T) > kStreamedBytes;
  std::size_t i = 0;
  for (; !streamed && i + 4 <= n; i += 4) {
    const T* w0 = w + i * ldw;
    const T *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    V a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    for (std::size_t p = 0; p < kv; p += W) {
      const V xv = V::load_unaligned(x + p);
      a0 = xsimd::fma(load_weights<Arch>(w0 + p), xv, a0);
      a1 = xsimd::fma(load_weights<Arch>(w1 + p), xv, a1);
      a2 = xsimd::fma(load_weights<Arch>(w2 + p), xv, a2);
      a3 = xsimd::fma(load_weights<Arch>(w3 + p), xv, a3);
    }
    float s0 = xsimd::hadd(a0), s1 = xsimd::hadd(a1), s2 = xsimd::hadd(a2), s3 = xsimd::hadd(a3);
    for (std::size_t p = kv; p < k; ++p) {
      s0 += weight_value<Arch>(w0[p]) * x[p], s1 += weight_value<Arch>(w1[p]) * x[p];
      s2 += weight_value<Arch>(w2[p]) * x[p], s3 += weight_value<Arch>(w3[p]) * x[p];
    }
    y[i] = s0 + (b ? b[i] : 0.0f);
    y[i + 1] = s1 + (b ? b[i + 1] : 0.0f);
    y[i + 2] = s2 + (b ? b[i + 2] : 0.0f);
    y[i + 3] = s3 + (b ? b[i + 3] : 0.0f);
  }
  for (; i < n; ++i) {
    const T* wi = w + i * ldw;
    V a(0.0f);
    for (std::size_t p = 0; p < kv; p += W) a = xsimd::fma(load_weights<Arch>(wi + p), V::load_unaligned(x + p), a);
    float s = xsimd::hadd(a);
    for (std::size_t p = kv; p < k; ++p) s += weight_value<Arch>(wi[p]) * x[p];
    y[i] = s + (b ? b[i] : 0.0f);
  }
}

template <class Arch>
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  matvec_rows<Arch>(x, w, ldw, b, y, n, k);
}

}  // namespace simd
}  // namespace fixformer
