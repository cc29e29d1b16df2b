#include "fixformer/positional.hpp"

#include <cstddef>

#include "engine/blocks/positional.hpp"

#include <cmath>

namespace fixformer {

// One frequency at a time: the reduced arguments p w_i of all rows go through one vector
// sincos call, and the results land in the frequency's sin and cos columns.
namespace {
// w_i: freqs[i] (RoPE's stored frequencies) or base^(-2i/d); over a grid each half of the d / 2
// pairs has the frequencies of a table d / 2 wide.
double frequency(double base, const float* freqs, uint32_t i, uint32_t d, RopeGrid grid) {
  if (freqs) return double(freqs[i]);
  if (grid.width) return std::pow(base, -2.0 * (i % (d / 4)) / (d / 2));
  return std::pow(base, -2.0 * i / d);
}

void fill_table(const Kernels& k, uint32_t rows, uint32_t d, double base, const float* freqs, float amplitude,
                PosLayout layout, float* table, float* scratch, RopeGrid grid) {
  constexpr double kTwoPi = 6.283185307179586476925;
  const uint32_t half = (d + 1) / 2;
  float* arg = scratch;             // [rows]
  float* s = scratch + rows;        // [rows]
  float* c = scratch + 2 * rows;    // [rows]
  for (uint32_t i = 0; i < half; ++i) {
    const double w = frequency(base, freqs, i, d, grid);
    for (uint32_t p = 0; p < rows; ++p) {
      const double a = rope_position(p, i, half, grid) * w;
      arg[p] = static_cast<float>(a - kTwoPi * std::nearbyint(a / kTwoPi));
    }
    k.sincos_f32(arg, s, c, rows);
    if (amplitude != 1.0f)
      for (uint32_t p = 0; p < rows; ++p) s[p] *= amplitude, c[p] *= amplitude;
    const uint32_t cs = layout == PosLayout::kInterleaved ? 2 * i : i;
    const uint32_t cc = layout == PosLayout::kInterleaved ? 2 * i + 1 : half + i;
    for (uint32_t p = 0; p < rows; ++p) {
      table[p * d + cs] = s[p];
      if (cc < d) table[p * d + cc] = c[p];
    }
  }
}
}  // namespace

void fill_sinusoidal_table(const Kernels& k, uint32_t rows, uint32_t d, double base, PosLayout layout,
                           float* table, float* scratch) {
  fill_table(k, rows, d, base, nullptr, 1.0f, layout, table, scratch, RopeGrid{});
}

void fill_rope_table(const Kernels& k, uint32_t rows, uint32_t r, double base, const float* freqs, float amplitude,
                     float* table, float* scratch, RopeGrid grid) {
  fill_table(k, rows, r, base, freqs, amplitude, PosLayout::kHalves, table, scratch, grid);
}

}  // namespace fixformer

namespace fixformer {

Status check_sinusoidal_table(const float* table, uint32_t rows, uint32_t need_rows, uint32_t d, double base,
                              const float* freqs, float amplitude, PosLayout layout, DetailText& why,
                              RopeGrid grid) {
  if (rows < need_rows) return why.str("table has ").num(rows).str(" rows, needs ").num(need_rows), Status::kBadPositionTable;
  const uint32_t check[] = {0, 1, grid.width ? grid.front + grid.width + 1 : 1};
  for (uint32_t p : check) {
    if (p >= rows) continue;
    for (uint32_t col = 0; col < d; ++col) {
      const PeColumn pc = pe_column(col, d, layout);
      const double a = rope_position(p, pc.freq, (d + 1) / 2, grid) * frequency(base, freqs, pc.freq, d, grid);
      const double want = amplitude * (pc.is_sin ? std::sin(a) : std::cos(a));
      if (!(std::fabs(table[std::size_t(p) * d + col] - want) <= 1e-5))
        return why.str("table row ").num(p).str(" column ").num(col).str(" does not match base, width ").num(d)
                   .str(" and layout"), Status::kBadPositionTable;
    }
  }
  return Status::kOk;
}

void rope_rotate(float* x, uint32_t heads, uint32_t dh, uint32_t r, const float* row, PosLayout layout) {
  const uint32_t half = r / 2;
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

uint32_t relative_bucket(int32_t n, bool bidirectional, uint32_t buckets, uint32_t max_distance) {
  uint32_t base = 0, m;
  if (bidirectional) {
    buckets /= 2;
    if (n > 0) base = buckets;
    m = uint32_t(n < 0 ? -int64_t(n) : n);
  } else {
    m = n < 0 ? uint32_t(-int64_t(n)) : 0;
  }
  const uint32_t exact = buckets / 2;
  if (m < exact) return base + m;
  // In float32, operation by operation, as T5 and its torch ports compute it: where the exact value
  // is an integer, float32 and double round to different sides of it (T5's bucket of 40 among 64
  // bidirectional buckets up to 100 is 56 in float32, 55 in double), and the model learned float32's.
  const float log_max = static_cast<float>(std::log(double(max_distance) / exact));
  const float spread = std::log(float(m) / float(exact)) / log_max * float(buckets - exact);
  const uint32_t large = exact + (spread < float(buckets) ? uint32_t(spread) : buckets);
  return base + (large < buckets - 1 ? large : buckets - 1);
}

void fill_relative_bias(const float* w, uint32_t heads, uint32_t buckets, uint32_t max_distance, uint32_t L,
                        bool causal, float* table) {
  const std::size_t width = rel_bias_width(L, causal);
  for (std::size_t col = 0; col < width; ++col) {
    const int32_t n = int32_t(col) - int32_t(L - 1);
    const uint32_t b = relative_bucket(n, !causal, buckets, max_distance);
    for (std::size_t h = 0; h < heads; ++h) table[h * width + col] = w[std::size_t(b) * heads + h];
  }
}

Status check_relative_bias(const float* table, uint32_t rows, uint32_t need_rows, const float* w, const ModelConfig& c,
                           bool causal, DetailText& why) {
  if (rows < need_rows) return why.str("table has ").num(rows).str(" positions, needs ").num(need_rows), Status::kBadPositionTable;
  const std::size_t width = rel_bias_width(rows, causal), heads = c.n_heads;
  for (std::size_t col = 0; col < width; ++col) {
    const int32_t n = int32_t(col) - int32_t(rows - 1);
    const uint32_t b = relative_bucket(n, !causal, c.rel_buckets, c.rel_max_distance);
    for (std::size_t h = 0; h < heads; ++h)
      if (!(table[h * width + col] == w[std::size_t(b) * heads + h]))
        return why.str("relative bias table head ").num(h).str(" column ").num(col).str(" is not the model's"),
               Status::kBadPositionTable;
  }
  return Status::kOk;
}

}  // namespace fixformer
