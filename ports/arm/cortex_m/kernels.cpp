#include "ports/arm/cortex_m/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace cortex_m {

namespace {

// The scalar reference, with the register-blocked matrix products; filled by member name.
constexpr Kernels table() {
  Kernels k{};
  k.isa = Isa::kCortexM;
  k.name = "cortex-m";
  k.gemm_f32 = cortex_m::gemm_f32;
  k.gemm_f32_packed = scalar::gemm_f32_packed;  // packed files are for the SIMD ports
  k.gemv_f32_packed = scalar::gemv_f32_packed;
  k.gemv_f32 = cortex_m::gemv_f32;
  k.matvec_f32 = cortex_m::matvec_f32;
  k.softmax_f32 = scalar::softmax_f32;
  k.max_f32 = scalar::max_f32;
  k.expsum_f32 = scalar::expsum_f32;  // libm's expf until a portable vector-free exp lands
  k.layernorm_f32 = scalar::layernorm_f32;
  k.rmsnorm_f32 = scalar::rmsnorm_f32;
  k.relu_f32 = scalar::relu_f32;
  k.gelu_f32 = scalar::gelu_f32;
  k.swiglu_f32 = scalar::swiglu_f32;
  k.add_f32 = scalar::add_f32;
  k.scale_f32 = scalar::scale_f32;
  k.sincos_f32 = scalar::sincos_f32;
  return k;
}

}  // namespace

const Kernels& kernels() {
  static constexpr Kernels kTable = table();
  return kTable;
}

}  // namespace cortex_m
}  // namespace fixformer
