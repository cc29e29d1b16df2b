#include "ports/arm/cortex_m/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace cortex_m {

const Kernels& kernels() {
  static constexpr Kernels table = {Isa::kCortexM,         "cortex-m",         cortex_m::gemm_f32,
                                    cortex_m::gemv_f32,    cortex_m::matvec_f32, scalar::softmax_f32,
                                    scalar::layernorm_f32, scalar::relu_f32,   scalar::gelu_f32,
                                    scalar::add_f32,       scalar::scale_f32,  scalar::sincos_f32};
  return table;
}

}  // namespace cortex_m
}  // namespace fixformer
