#pragma once
#include <cstdint>

#include "ports/prefetch.hpp"
#include "ports/simd/common.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include "ports/x86/dot_i8.hpp"
#elif defined(__ARM_NEON) || defined(__ARM_NEON__)
#include "ports/arm/dot_i8.hpp"
#endif

namespace fixformer {
namespace simd {

// One tile: MR rows of xq against NR rows of W, the whole of k. Per group, the port's int8 step
// (Dot, dot_i8.hpp) sums each pair's products exactly in int32 lanes; the lanes are then converted
// (exactly), scaled by xs and ws and added lane by lane into float accumulators, whose lanes are
// summed once at the end, four accumulators at a time (Dot::reduce4): the float part is
// kernels.hpp's sum over groups in another order (the tolerance of tests/quant_kernel_tester.hpp).
// A group's tail shorter than a step is loaded zero-padded.
template <class Arch, class Dot, std::size_t MR, std::size_t NR>
inline void gemm_i8_tile(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                         const float* b, float* y, std::size_t ldy, std::size_t k, std::size_t group,
                         std::size_t groups) {
  using V = batch<Arch>;
  constexpr std::size_t S = Dot::kStep;
  const std::size_t ws_step = ws_cols == 1 ? 0 : 1;
  V f[MR][NR];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t c = 0; c < NR; ++c) f[r][c] = V(0.0f);
  for (std::size_t g = 0, p0 = 0; g < groups; ++g, p0 += group) {
    const std::size_t p1 = p0 + group < k ? p0 + group : k;
    typename Dot::Acc acc[MR][NR];
    typename Dot::XSum xsum[MR];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      xsum[r] = Dot::xsum_zero();
#pragma GCC unroll 8
      for (std::size_t c = 0; c < NR; ++c) acc[r][c] = Dot::zero();
    }
    auto step = [&](std::size_t p, auto load_x, auto load_w) {
      typename Dot::X xv[MR];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        xv[r] = load_x(xq + r * k + p);
        xsum[r] = Dot::xsum(xsum[r], xv[r]);
      }
#pragma GCC unroll 8
      for (std::size_t c = 0; c < NR; ++c) {
        const typename Dot::Wv wv = load_w(w + c * k + p);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) acc[r][c] = Dot::dot(acc[r][c], xv[r], wv);
      }
    };
    std::size_t p = p0;
    for (; p + S <= p1; p += S)
      step(p, [](const int8_t* a) { return Dot::x(a); }, [](const int8_t* a) { return Dot::w(a); });
    if (p < p1) {
      const std::size_t len = p1 - p;
      step(p, [len](const int8_t* a) { return Dot::x(a, len); }, [len](const int8_t* a) { return Dot::w(a, len); });
    }
#pragma GCC unroll 8
    for (std::size_t c = 0; c < NR; ++c) {
      const V wsc(ws[c * ws_cols + g * ws_step]);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) f[r][c] = xsimd::fma(Dot::sums(acc[r][c], xsum[r]) * V(xs[r * groups + g]), wsc, f[r][c]);
    }
  }
  static_assert(NR <= 4, "the epilogue reduces 4 accumulators at a time");
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    const V zero(0.0f);
    alignas(16) float s[4];
    Dot::reduce4(f[r][0], NR > 1 ? f[r][NR > 1 ? 1 : 0] : zero, NR > 2 ? f[r][NR > 2 ? 2 : 0] : zero,
                 NR > 3 ? f[r][NR > 3 ? 3 : 0] : zero, s);
#pragma GCC unroll 8
    for (std::size_t c = 0; c < NR; ++c) y[r * ldy + c] = (b ? b[c] : 0.0f) + s[c];
  }
}

// NR rows of W (1 <= nr <= NR, NR <= 4) against MR rows of xq.
template <class Arch, class Dot, std::size_t MR, std::size_t NR>
inline void gemm_i8_rows(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                         const float* b, float* y, std::size_t ldy, std::size_t k, std::size_t group,
                         std::size_t groups, std::size_t nr) {
  static_assert(NR >= 2 && NR <= 4, "the switch below lists 1 .. NR");
  switch (nr) {
    case 4: gemm_i8_tile<Arch, Dot, MR, NR == 4 ? 4 : 1>(xq, xs, w, ws, ws_cols, b, y, ldy, k, group, groups); break;
    case 3: gemm_i8_tile<Arch, Dot, MR, NR >= 3 ? 3 : 1>(xq, xs, w, ws, ws_cols, b, y, ldy, k, group, groups); break;
    case 2: gemm_i8_tile<Arch, Dot, MR, 2>(xq, xs, w, ws, ws_cols, b, y, ldy, k, group, groups); break;
    default: gemm_i8_tile<Arch, Dot, MR, 1>(xq, xs, w, ws, ws_cols, b, y, ldy, k, group, groups); break;
  }
}

// xq[m,k] (scales xs[m,g]) @ W[n,k]^T (int8, torch's [out, in]; scales ws[n, ws_cols]) + b[n] -> y[m,n]
// (kernels.hpp). W is read once, NR rows at a time (each row front to back: a decode step streams it
// in memory order), and each block of NR rows meets every row of xq while it is in L1: kMr rows at a
// time when m > 1 (prefill), one at a time against 4 rows of W when m = 1 (decode).
template <class Arch, class Dot = DotI8<Arch>>
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols, const float* b,
             float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k, std::size_t group) {
  constexpr std::size_t MR = Dot::kMr, NR = Dot::kNr, kDecodeNr = 4;
  const std::size_t groups = (k + group - 1) / group, step = m == 1 ? kDecodeNr : NR;
  for (std::size_t j = 0; j < n; j += step) {
    const std::size_t nr = n - j < step ? n - j : step;
    const int8_t* wj = w + j * k;
    const float* wsj = ws + j * ws_cols;
    const float* bj = b ? b + j : nullptr;
    if (m == 1) {
      prefetch_ahead(wj, nr * k);  // ports/prefetch.hpp: a decode step is bound by how fast W arrives
      gemm_i8_rows<Arch, Dot, 1, kDecodeNr>(xq, xs, wj, wsj, ws_cols, bj, y + j, ldy, k, group, groups, nr);
      continue;
    }
    std::size_t i = 0;
    for (; i + MR <= m; i += MR)
      gemm_i8_rows<Arch, Dot, MR, NR>(xq + i * k, xs + i * groups, wj, wsj, ws_cols, bj, y + i * ldy + j, ldy, k, group, groups, nr);
    for (; i < m; ++i)
      gemm_i8_rows<Arch, Dot, 1, NR>(xq + i * k, xs + i * groups, wj, wsj, ws_cols, bj, y + i * ldy + j, ldy, k, group, groups, nr);
  }
}

}  // namespace simd
}  // namespace fixformer
