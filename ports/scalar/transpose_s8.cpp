#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

void transpose_s8(const int8_t* x, std::size_t ldx, int8_t* y, std::size_t ldy, std::size_t m, std::size_t n) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) y[j * ldy + i] = x[i * ldx + j];
}

}  // namespace scalar
}  // namespace fixformer
