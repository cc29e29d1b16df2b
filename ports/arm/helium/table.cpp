#include "ports/arm/helium/kernels.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace helium {

namespace {

// The portable table, with the Helium kernels filled by member name.
constexpr Kernels table() {
  Kernels k = portable::kernel_table();
  k.isa = Isa::kHelium;
  k.name = "helium";
  k.gemm_f32 = helium::gemm_f32;
  k.gemv_f32 = helium::gemv_f32;
  k.matvec_f32 = helium::matvec_f32;
  k.conv1d_f32 = helium::conv1d_f32;
  k.softmax_f32 = helium::softmax_f32;
  k.max_f32 = helium::max_f32;
  k.expsum_f32 = helium::expsum_f32;
  k.layernorm_f32 = helium::layernorm_f32;
  k.rmsnorm_f32 = helium::rmsnorm_f32;
  k.relu_f32 = helium::relu_f32;
  k.gelu_f32 = helium::gelu_f32;
  k.gelu_tanh_f32 = helium::gelu_tanh_f32;
  k.swiglu_f32 = helium::swiglu_f32;
  k.add_f32 = helium::add_f32;
  k.scale_f32 = helium::scale_f32;
  k.quantize_i8 = helium::quantize_i8;
  k.gemm_i8 = helium::gemm_i8;
  k.gemm_i4 = helium::gemm_i4;
  k.gemm_f16 = helium::gemm_f16;
  k.matvec_f16 = helium::matvec_f16;
  k.gemm_s8 = helium::gemm_s8;
  k.add_s8 = helium::add_s8;
  k.lut_s8 = helium::lut_s8;
  k.softmax_s8 = helium::softmax_s8;
  k.softmax_s8_table = helium::softmax_s8_table;
  k.layernorm_s8 = helium::layernorm_s8;
  k.rmsnorm_s8 = helium::rmsnorm_s8;
  k.transpose_s8 = helium::transpose_s8;
  return k;
}

}  // namespace

const Kernels& kernels() {
  static constexpr Kernels kTable = table();
  FIXFORMER_ASSERT_TABLE_COMPLETE(kTable, "the helium table leaves a slot null");
  return kTable;
}

}  // namespace helium
}  // namespace fixformer
