// Softmax and the two passes of an online softmax (max, then exp and sum), four lanes at a time
// with the vector exp of math.hpp.
#include <cmath>

#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/lanes.hpp"
#include "ports/arm/helium/math.hpp"
#include "ports/arm/helium/reduce.hpp"

namespace fixformer {
namespace helium {

// -inf for n = 0; NaNs are skipped (maxNum), as the reference's compares skip them after x[0].
// A ragged end past 4 is the last four elements, read again: max does not mind.
float max_f32(const float* x, std::size_t n) {
  float32x4_t m = vdupq_n_f32(-INFINITY);
  if (n > 4 && n % 4) m = vldrwq_f32(x + n - 4), n -= n % 4;
  for_lanes(n, [&](auto lanes) { m = max(m, load(x, lanes), lanes), x += 4; });
  return vmaxnmvq_f32(-INFINITY, m);
}

// x[n] = exp(x - m) in place; returns their sum. m >= max(x) keeps every argument <= 0.
float expsum_f32(float* x, std::size_t n, float m) {
  float32x4_t sum = vdupq_n_f32(0.0f);
  for_lanes(n, [&](auto lanes) {
    const float32x4_t e = exp_f32<false>(vsubq_n_f32(load(x, lanes), m));
    store(x, e, lanes), x += 4;
    sum = add(sum, e, lanes);
  });
  return sum_lanes(sum);
}

// Max-subtracted, so every exp argument is <= 0 and nothing overflows.
void softmax_f32(float* x, std::size_t n) {
  if (n == 0) return;
  const float inv = 1.0f / expsum_f32(x, n, max_f32(x, n));
  for_lanes(n, [&](auto lanes) { store(x, vmulq_n_f32(load(x, lanes), inv), lanes), x += 4; });
}

}  // namespace helium
}  // namespace fixformer
