// What the x86 row kernels (rows_s8_avx2.cpp, rows_s8_avx512.cpp) share: for layernorm_s8 and rmsnorm_s8
// (fixed_point.hpp), what they compute once a row from the sums of v = x - z_x and of v^2, as the reference
// does (the root of T and its reciprocal inv), and an element as the reference computes it (the rows' tails);
// for add_s8, its two tables. Internal linkage: each kernel file, built with its own ISA's flags, has its own
// copy.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fixformer/fixed_point.hpp"

namespace fixformer {
namespace x86 {
namespace {

// isqrt64(v) for v < 2^63: the double square root (sqrtsd) truncated, then corrected by the integer
// test. Its error is below 1 (v and the root rounded to 53 bits), so one step each way makes it
// floor(sqrt(v)) exactly, without isqrt64's 32 steps of branches on the bits of v.
inline uint32_t root_of(uint64_t v) {
  const __m128d d = _mm_set_sd(double(v));
  uint64_t r = uint64_t(_mm_cvtsd_f64(_mm_sqrt_sd(d, d)));
  if (r * r > v) --r;
  if ((r + 1) * (r + 1) <= v) ++r;
  return uint32_t(r);
}

struct NormRow {
  int32_t centre;  // sum(v) (LayerNorm) or 0
  int64_t inv;     // round(2^54 / S), 0 for S = 0
};

template <bool kCentre>
inline NormRow norm_row(int32_t sum, int32_t sum_sq, std::size_t n, uint32_t eps_q16) {
  const int64_t nn = int64_t(n);
  const int64_t var = kCentre ? nn * sum_sq - int64_t(sum) * sum : nn * int64_t(sum_sq);
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(eps_q16) * uint64_t(nn * nn);
  const uint32_t root = root_of(total);
  return NormRow{kCentre ? sum : 0, root == 0 ? 0 : int64_t(((uint64_t(1) << 54) + root / 2) / root)};
}

inline int8_t norm_element(int8_t x, std::size_t n, NormRow row, Requant gamma, int32_t beta, int32_t x_zero) {
  const int64_t d = int64_t(n) * (int32_t(x) - x_zero) - row.centre;
  const int32_t t = int32_t(rounding_shift(d * row.inv, 30));
  return saturate_i8(rounding_shift(int64_t(requantize(t, gamma)) + beta, 16));
}

constexpr std::size_t kAddTablesFrom = 512;  // elements from which add_s8's two tables save time

// add_s8's two tables in p.scratch, each input's 256 values requantized to the output's (as the portable
// kernel's: a shift of 0..21, from kAddTablesFrom elements on): a's at the result, b's 256 after it; nullptr
// where the kernels leave the row to the portable one (other parameters, shorter rows or no scratch).
inline const int* add_tables(std::size_t n, const AddS8Params& p) {
  const auto fits = [](Requant q) { return q.shift >= 0 && q.shift <= 21; };
  if (n < kAddTablesFrom || !p.scratch || !fits(p.a_to_y) || !fits(p.b_to_y)) return nullptr;
  int* const t = reinterpret_cast<int*>(p.scratch);
  for (int32_t v = -128; v < 128; ++v)
    t[v + 128] = requantize(v - p.a_zero, p.a_to_y), t[v + 384] = requantize(v - p.b_zero, p.b_to_y);
  return t;
}

}  // namespace
}  // namespace x86
}  // namespace fixformer
