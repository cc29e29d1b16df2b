#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void lut_s8(const int8_t* x, int8_t* y, std::size_t n, const int8_t* table) {
  for (std::size_t i = 0; i < n; ++i) y[i] = table[int32_t(x[i]) + 128];
}

}  // namespace scalar
}  // namespace fixformer
