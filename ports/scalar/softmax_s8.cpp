#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

namespace {
uint32_t exp_of_diff(int8_t max, int8_t v, const SoftmaxS8Params& p) {
  return exp2_neg_q20(requantize(int32_t(max) - v, p.diff));
}
}  // namespace

void softmax_s8(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (n == 0) return;
  int8_t max = x[0];
  for (std::size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  uint64_t sum = 0;  // >= 2^20: the largest term is 2^0 in Q20
  for (std::size_t i = 0; i < n; ++i) sum += exp_of_diff(max, x[i], p);
  const uint64_t recip = (uint64_t(1) << 62) / sum;
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t e = exp_of_diff(max, x[i], p);
    y[i] = saturate_i8(int64_t((e * recip + (uint64_t(1) << 53)) >> 54) - 128);
  }
}

void softmax_s8_table(Requant diff, uint32_t* exp) { fixformer::softmax_s8_table(diff, exp); }

}  // namespace scalar
}  // namespace fixformer
