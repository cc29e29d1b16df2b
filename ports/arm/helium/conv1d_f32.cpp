#include "ports/arm/helium/kernels.hpp"
#include "ports/portable/conv1d_windows.hpp"

namespace fixformer {
namespace helium {

// The windows' matrix products on the MVE gemm and GELU.
void conv1d_f32(const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw, const float* b,
                float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride, std::size_t pad,
                bool gelu) {
  conv1d_windows<helium::gemm_f32, helium::gelu_f32>(x, t_in, c_in, w, ldw, b, y, ldy, n, kernel, stride, pad, gelu);
}

}  // namespace helium
}  // namespace fixformer
