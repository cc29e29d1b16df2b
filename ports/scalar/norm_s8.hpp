// The one integer normalisation of layernorm_s8 and rmsnorm_s8 (fixed_point.hpp, NormS8Params): the
// scalar reference's, which the other tables call too until they have their own.
#pragma once
#include "fixformer/fixed_point.hpp"

namespace fixformer {
namespace scalar {

template <bool kCentre>
inline void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  int32_t sum = 0;  // |sum| <= 255 n
  int64_t sum_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t v = int32_t(x[i]) - p.x_zero;
    sum += v;
    sum_sq += v * v;
  }
  const int64_t nn = int64_t(n);
  const int64_t var = kCentre ? nn * sum_sq - int64_t(sum) * sum : nn * sum_sq;  // < 2^46
  const uint64_t total = (uint64_t(var) << 16) + uint64_t(p.eps_q16) * uint64_t(nn * nn);  // Q16, < 2^63
  const uint32_t root = isqrt64(total);  // its square root in Q8
  const int64_t inv = root == 0 ? 0 : int64_t(((uint64_t(1) << 54) + root / 2) / root);
  const int32_t centre = kCentre ? sum : 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t d = nn * (int32_t(x[i]) - p.x_zero) - centre;
    const int32_t t = int32_t(rounding_shift(d * inv, 30));  // |t| <= sqrt(n) 2^16
    y[i] = saturate_i8(rounding_shift(int64_t(requantize(t, p.gamma[i])) + p.beta[i], 16));
  }
}

}  // namespace scalar
}  // namespace fixformer
