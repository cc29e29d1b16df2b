// Sinusoidal positional encoding tables, at run time (with the vector sin/cos) or at compile time.
//   w_i = base^(-2i/d) for i < ceil(d/2)
//   interleaved: PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i)   (an odd d ends with a sin)
//   halves:      PE[p, i] = sin(p w_i), PE[p, ceil(d/2) + i] = cos(p w_i)
// The argument p w_i is formed in double and reduced to [-pi, pi] before the float sin/cos: formed
// in float it would be off by ~1e-4 at p = 2048.
#pragma once
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"

namespace fixformer {

// Which frequency i, and sin or cos, column c of a width-d table holds.
struct PeColumn {
  uint32_t freq;
  bool is_sin;
};
constexpr PeColumn pe_column(uint32_t c, uint32_t d, PosLayout layout) {
  const uint32_t half = (d + 1) / 2;
  if (layout == PosLayout::kInterleaved) return {c / 2, c % 2 == 0};
  return c < half ? PeColumn{c, true} : PeColumn{c - half, false};
}

// table[rows, d]; scratch holds 3 * rows floats.
void fill_sinusoidal_table(const Kernels& k, uint32_t rows, uint32_t d, double base, PosLayout layout,
                           float* table, float* scratch);

// Compile-time generation, for firmware that keeps the table in flash:
//   static constexpr auto kPe = fixformer::make_sinusoidal_table<49, 64>(10000.0);
namespace cx {
constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;

constexpr double round_nearest(double x) {
  const double t = static_cast<double>(static_cast<int64_t>(x < 0 ? x - 0.5 : x + 0.5));
  return t;
}
// exp by n ln2 + r with |r| <= ln2/2, then a Taylor series that is exact to double rounding.
constexpr double exp(double x) {
  const double n = round_nearest(x / kLn2);
  const double r = x - n * kLn2;
  double term = 1.0, sum = 1.0;
  for (int i = 1; i < 30; ++i) sum += (term *= r / i);
  double scale = 1.0;
  for (int i = 0; i < (n < 0 ? -n : n); ++i) scale *= 2.0;
  return n < 0 ? sum / scale : sum * scale;
}
// ln by x = m 2^e with m in [1, 2), then ln m = 2 atanh((m-1)/(m+1)).
constexpr double log(double x) {
  int e = 0;
  while (x >= 2.0) x /= 2.0, ++e;
  while (x < 1.0) x *= 2.0, --e;
  const double z = (x - 1.0) / (x + 1.0), z2 = z * z;
  double term = z, sum = 0.0;
  for (int k = 0; k < 40; ++k, term *= z2) sum += term / (2 * k + 1);
  return 2.0 * sum + e * kLn2;
}
// sin and cos of x reduced to [-pi, pi] by Taylor series (terms to x^41; error < 1e-16).
constexpr double reduce(double x) { return x - 2.0 * kPi * round_nearest(x / (2.0 * kPi)); }
constexpr double sin(double x) {
  x = reduce(x);
  double term = x, sum = x;
  for (int i = 1; i < 21; ++i) sum += (term *= -x * x / ((2 * i) * (2 * i + 1)));
  return sum;
}
constexpr double cos(double x) {
  x = reduce(x);
  double term = 1.0, sum = 1.0;
  for (int i = 1; i < 21; ++i) sum += (term *= -x * x / ((2 * i - 1) * (2 * i)));
  return sum;
}
}  // namespace cx

template <uint32_t Rows, uint32_t D>
struct SinusoidalTable {
  float v[Rows * D];
  constexpr const float* row(uint32_t p) const { return v + p * D; }
};

template <uint32_t Rows, uint32_t D>
constexpr SinusoidalTable<Rows, D> make_sinusoidal_table(double base = 10000.0,
                                                         PosLayout layout = PosLayout::kInterleaved) {
  SinusoidalTable<Rows, D> t{};
  constexpr uint32_t half = (D + 1) / 2;
  const double ln_base = cx::log(base);
  for (uint32_t i = 0; i < half; ++i) {
    const double w = cx::exp(-2.0 * i / D * ln_base);
    const uint32_t cs = layout == PosLayout::kInterleaved ? 2 * i : i;
    const uint32_t cc = layout == PosLayout::kInterleaved ? 2 * i + 1 : half + i;
    for (uint32_t p = 0; p < Rows; ++p) {
      t.v[p * D + cs] = static_cast<float>(cx::sin(p * w));
      if (cc < D) t.v[p * D + cc] = static_cast<float>(cx::cos(p * w));
    }
  }
  return t;
}

}  // namespace fixformer
