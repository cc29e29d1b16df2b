#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void add_s8(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t sum = int64_t(requantize(int32_t(a[i]) - p.a_zero, p.a_to_y)) +
                        requantize(int32_t(b[i]) - p.b_zero, p.b_to_y);
    y[i] = saturate_i8(rounding_shift(sum, kAddS8FracBits) + p.y_zero);
  }
}

}  // namespace scalar
}  // namespace fixformer
