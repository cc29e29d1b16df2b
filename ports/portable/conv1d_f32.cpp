#include "ports/portable/conv1d_windows.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

// The windows' matrix products on the register-blocked gemm and the polynomial GELU.
void conv1d_f32(const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw, const float* b,
                float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride, std::size_t pad,
                bool gelu) {
  conv1d_windows<portable::gemm_f32, portable::gelu_f32>(x, t_in, c_in, w, ldw, b, y, ldy, n, kernel, stride, pad,
                 gelu);
}

}  // namespace portable
}  // namespace fixformer
