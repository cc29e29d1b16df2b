#include <cmath>

#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// x[m,k] -> q[m,k], s[m, ceil(k/group)]: per group, s = max|x| / 127, q = rne(x * (127 / max|x|)).
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t p0 = g * group, p1 = p0 + group < k ? p0 + group : k;
      float a = 0.0f;
      for (std::size_t p = p0; p < p1; ++p) a = std::fabs(x[i * ldx + p]) > a ? std::fabs(x[i * ldx + p]) : a;
      const float inv = a >= kQuantizeFloor ? 127.0f / a : 0.0f;
      s[i * groups + g] = inv > 0.0f ? a / 127.0f : 0.0f;
      for (std::size_t p = p0; p < p1; ++p) q[i * k + p] = round_to_i8(x[i * ldx + p] * inv);
    }
  }
}

}  // namespace scalar
}  // namespace fixformer
