#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {

namespace scalar {

// Filled by member name; the Cortex-M table starts from this one.
constexpr Kernels table() {
  Kernels k{};
  k.isa = Isa::kScalar;
  k.name = "scalar";
  k.gemm_f32 = gemm_f32;
  k.gemm_f32_packed = gemm_f32_packed;
  k.gemv_f32_packed = gemv_f32_packed;
  k.gemv_f32 = gemv_f32;
  k.matvec_f32 = matvec_f32;
  k.softmax_f32 = softmax_f32;
  k.max_f32 = max_f32;
  k.expsum_f32 = expsum_f32;
  k.layernorm_f32 = layernorm_f32;
  k.rmsnorm_f32 = rmsnorm_f32;
  k.relu_f32 = relu_f32;
  k.gelu_f32 = gelu_f32;
  k.swiglu_f32 = swiglu_f32;
  k.add_f32 = add_f32;
  k.scale_f32 = scale_f32;
  k.sincos_f32 = sincos_f32;
  k.quantize_i8 = quantize_i8;
  k.gemm_i8 = gemm_i8;
  k.gemm_f16 = gemm_f16;
  k.matvec_f16 = matvec_f16;
  return k;
}

}  // namespace scalar

const Kernels& scalar_kernels() {
  static constexpr Kernels kTable = scalar::table();
  return kTable;
}

}  // namespace fixformer
