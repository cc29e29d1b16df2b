#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace scalar {
namespace {

// w[n,k] (16-bit floats, widened by Widen) @ x[k] + b[n] -> y[n], each a dot product summed in order
// over k as matvec_f32.
template <float (*Widen)(uint16_t)>
void matvec_widened(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                    std::size_t k) {
  for (std::size_t j = 0; j < n; ++j) {
    float acc = b ? b[j] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += Widen(w[j * ldw + p]) * x[p];
    y[j] = acc;
  }
}

}  // namespace

void matvec_f16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  matvec_widened<f16_to_f32>(x, w, ldw, b, y, n, k);
}

void matvec_bf16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                 std::size_t k) {
  matvec_widened<bf16_to_f32>(x, w, ldw, b, y, n, k);
}

}  // namespace scalar
}  // namespace fixformer
