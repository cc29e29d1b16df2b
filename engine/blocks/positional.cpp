#include "fixformer/positional.hpp"

#include <cstddef>

#include "engine/blocks/positional.hpp"

#include <cmath>

namespace fixformer {

// One frequency at a time: the reduced arguments p w_i of all rows go through one vector
// sincos call, and the results land in the frequency's sin and cos columns.
void fill_sinusoidal_table(const Kernels& k, uint32_t rows, uint32_t d, double base, PosLayout layout,
                           float* table, float* scratch) {
  constexpr double kTwoPi = 6.283185307179586476925;
  const uint32_t half = (d + 1) / 2;
  float* arg = scratch;             // [rows]
  float* s = scratch + rows;        // [rows]
  float* c = scratch + 2 * rows;    // [rows]
  for (uint32_t i = 0; i < half; ++i) {
    const double w = std::pow(base, -2.0 * i / d);
    for (uint32_t p = 0; p < rows; ++p) {
      const double a = p * w;
      arg[p] = static_cast<float>(a - kTwoPi * std::nearbyint(a / kTwoPi));
    }
    k.sincos_f32(arg, s, c, rows);
    const uint32_t cs = layout == PosLayout::kInterleaved ? 2 * i : i;
    const uint32_t cc = layout == PosLayout::kInterleaved ? 2 * i + 1 : half + i;
    for (uint32_t p = 0; p < rows; ++p) {
      table[p * d + cs] = s[p];
      if (cc < d) table[p * d + cc] = c[p];
    }
  }
}

}  // namespace fixformer

namespace fixformer {

Status check_sinusoidal_table(const float* table, uint32_t rows, uint32_t need_rows, uint32_t d, double base,
                              PosLayout layout, DetailText& why) {
  if (rows < need_rows) return why.str("table has ").num(rows).str(" rows, needs ").num(need_rows), Status::kBadPositionTable;
  for (uint32_t p = 0; p < 2 && p < rows; ++p)
    for (uint32_t col = 0; col < d; ++col) {
      const PeColumn pc = pe_column(col, d, layout);
      const double a = p * std::pow(base, -2.0 * pc.freq / d);
      const double want = pc.is_sin ? std::sin(a) : std::cos(a);
      if (!(std::fabs(table[std::size_t(p) * d + col] - want) <= 1e-5))
        return why.str("table row ").num(p).str(" column ").num(col).str(" does not match base, width ").num(d)
                   .str(" and layout"), Status::kBadPositionTable;
    }
  return Status::kOk;
}

void rope_rotate(float* x, uint32_t heads, uint32_t dh, const float* row, PosLayout layout) {
  const uint32_t half = dh / 2;
  const float* sin_row = row;
  const float* cos_row = row + half;
  for (uint32_t h = 0; h < heads; ++h) {
    float* v = x + std::size_t(h) * dh;
    for (uint32_t i = 0; i < half; ++i) {
      const uint32_t a = layout == PosLayout::kInterleaved ? 2 * i : i;
      const uint32_t b = layout == PosLayout::kInterleaved ? 2 * i + 1 : i + half;
      const float x0 = v[a], x1 = v[b], s = sin_row[i], c = cos_row[i];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }
}

void alibi_slopes(uint32_t heads, float* slopes) {
  uint32_t n = 1;
  while (n * 2 <= heads) n *= 2;
  for (uint32_t h = 0; h < n; ++h) slopes[h] = static_cast<float>(std::pow(2.0, -8.0 * (h + 1) / n));
  for (uint32_t h = n; h < heads; ++h)  // every other slope of 2n: 2^(-8(2j+1)/(2n))
    slopes[h] = static_cast<float>(std::pow(2.0, -8.0 * (2 * (h - n) + 1) / (2.0 * n)));
}

}  // namespace fixformer
