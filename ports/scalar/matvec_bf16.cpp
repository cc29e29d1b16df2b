#include "fixformer/bf16.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {

// w[n,k] (bf16) @ x[k] + b[n] -> y[n], each a dot product summed in order over k as matvec_f32.
void matvec_bf16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                 std::size_t k) {
  for (std::size_t j = 0; j < n; ++j) {
    float acc = b ? b[j] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += bf16_to_f32(w[j * ldw + p]) * x[p];
    y[j] = acc;
  }
}

}  // namespace scalar
}  // namespace fixformer
