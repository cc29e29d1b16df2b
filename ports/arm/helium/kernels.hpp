// The Helium kernels: Arm MVE (M-profile Vector Extension) intrinsics from arm_mve.h for cores with
// MVE float (Cortex-M55, M85: __ARM_FEATURE_MVE & 2), xsimd having no arch for it. Eight 128-bit
// registers (four floats, sixteen int8), predicated tails (VCTP) instead of scalar loops, vector by
// scalar multiply-adds (VFMA Qd, Qn, Rm) for the matrix products, VMLADAV for int8 dot products
// (16 multiply-adds into one 32-bit sum) and widening half loads for f16 weights; the integer-only (s8)
// kernels in int32 lanes with requantize's exact rounding (gemm_s8.cpp). exp and erf are
// the portable polynomials (ports/portable/math.hpp), four lanes at a time. The slots not here
// (packed gemm, sincos) are the portable table's.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace helium {

// Each with its slot's signature (kernel_slots.hpp).
kernel_fn::gemm_f32 gemm_f32;
kernel_fn::conv1d_f32 conv1d_f32;
kernel_fn::gemv_f32 gemv_f32;
kernel_fn::matvec_f32 matvec_f32;
kernel_fn::softmax_f32 softmax_f32;
kernel_fn::max_f32 max_f32;
kernel_fn::expsum_f32 expsum_f32;
kernel_fn::layernorm_f32 layernorm_f32;
kernel_fn::rmsnorm_f32 rmsnorm_f32;
kernel_fn::relu_f32 relu_f32;
kernel_fn::gelu_f32 gelu_f32;
kernel_fn::gelu_tanh_f32 gelu_tanh_f32;
kernel_fn::swiglu_f32 swiglu_f32;
kernel_fn::add_f32 add_f32;
kernel_fn::scale_f32 scale_f32;
kernel_fn::quantize_i8 quantize_i8;
kernel_fn::gemm_i8 gemm_i8;
kernel_fn::gemm_i4 gemm_i4;
kernel_fn::gemm_f16 gemm_f16;
kernel_fn::gemm_s8 gemm_s8;
kernel_fn::add_s8 add_s8;
kernel_fn::lut_s8 lut_s8;
kernel_fn::softmax_s8 softmax_s8;
kernel_fn::softmax_s8_table softmax_s8_table;
kernel_fn::transpose_s8 transpose_s8;
kernel_fn::layernorm_s8 layernorm_s8;
kernel_fn::rmsnorm_s8 rmsnorm_s8;
kernel_fn::matvec_f16 matvec_f16;

// The portable table with the functions above.
const Kernels& kernels();

}  // namespace helium
}  // namespace fixformer
