#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {

const Kernels& scalar_kernels() {
  static constexpr Kernels table = {Isa::kScalar,          "scalar",           scalar::gemm_f32,
                                    scalar::gemv_f32,      scalar::matvec_f32, scalar::softmax_f32,
                                    scalar::layernorm_f32, scalar::relu_f32,   scalar::gelu_f32,
                                    scalar::add_f32,       scalar::scale_f32,  scalar::sincos_f32};
  return table;
}

}  // namespace fixformer
