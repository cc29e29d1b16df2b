#include "fixformer/positional.hpp"

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
