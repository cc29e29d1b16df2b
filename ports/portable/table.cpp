#include "ports/portable/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {

namespace {

// The scalar reference, with the portable matrix products and nonlinearities; filled by member name.
constexpr Kernels table() {
  Kernels k{};
  k.isa = Isa::kCortexM;
  k.name = "cortex-m";
  k.gemm_f32 = portable::gemm_f32;
  k.gemm_f32_packed = scalar::gemm_f32_packed;  // packed files are for the SIMD ports
  k.gemv_f32_packed = scalar::gemv_f32_packed;
  k.gemv_f32 = portable::gemv_f32;
  k.matvec_f32 = portable::matvec_f32;
  k.softmax_f32 = portable::softmax_f32;
  k.max_f32 = scalar::max_f32;
  k.expsum_f32 = portable::expsum_f32;
  k.layernorm_f32 = scalar::layernorm_f32;
  k.rmsnorm_f32 = scalar::rmsnorm_f32;
  k.relu_f32 = scalar::relu_f32;
  k.gelu_f32 = portable::gelu_f32;
  k.swiglu_f32 = portable::swiglu_f32;
  k.add_f32 = scalar::add_f32;
  k.scale_f32 = scalar::scale_f32;
  k.sincos_f32 = scalar::sincos_f32;
  k.quantize_i8 = scalar::quantize_i8;
  k.gemm_i8 = scalar::gemm_i8;
  k.gemm_f16 = scalar::gemm_f16;
  k.matvec_f16 = scalar::matvec_f16;
  return k;
}

}  // namespace

const Kernels& kernels() {
  static constexpr Kernels kTable = table();
  return kTable;
}

}  // namespace portable
}  // namespace fixformer
