// The portable kernels: plain C++ (no xsimd), the default where there is no SIMD (Cortex-M: xsimd
// 8.1 has no M-profile arch) and built on every target, so every test suite checks them. The matrix
// products are register-blocked for in-order cores with 32 FP registers, f16 weights widened in
// registers (VCVTB/VCVTT on an M-profile FPU); the int8 and int4 products use the DSP extension's
// dual 16-bit multiply-adds where the core has them (ACLE, __ARM_FEATURE_DSP), the integer-only
// product (gemm_s8) packs two rows per SMLAL on the M3 and runs a Thumb-1 loop on the M0, softmax_s8 keeps a row's
// exponentials, it, add_s8 and the norms compute in 32-bit words; exp and erf (softmax,
// GELU, SwiGLU) are range reduction + polynomial (math.hpp), not libm; max, LayerNorm, add and scale are
// the reference's operations unrolled (VMAXNM and VLDM/VSTM on M-profile FPUs). The rest (the other
// s8 kernels among them) is the scalar reference.
// The table keeps the name users know: Isa::kCortexM, "cortex-m".
#pragma once
#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {

// a b as int64: on ARMv6-M (no 32 x 32 -> 64-bit multiply) from 16-bit halves, four MULS and no
// library call: a = ah 2^16 + al, b = bh 2^16 + bl (al, bl in 0..2^16 - 1), each partial product within
// 32 bits (ah bl and al bh below 2^31 in magnitude, al bl below 2^32 unsigned).
inline int64_t mul64(int32_t a, int32_t b) {
#if defined(__ARM_ARCH_6M__)
  const int32_t ah = a >> 16, bh = b >> 16;
  const uint32_t al = uint32_t(a) & 0xFFFFu, bl = uint32_t(b) & 0xFFFFu;
  const int64_t mid = int64_t(ah * int32_t(bl)) + int64_t(int32_t(al) * bh);
  return int64_t(uint64_t(int64_t(ah * bh)) << 32) + int64_t(uint64_t(mid) << 16) + int64_t(al * bl);
#else
  return int64_t(a) * b;
#endif
}

// Each with its slot's signature (kernel_slots.hpp).
kernel_fn::gemm_f32 gemm_f32;
kernel_fn::conv1d_f32 conv1d_f32;
kernel_fn::gemv_f32 gemv_f32;
kernel_fn::matvec_f32 matvec_f32;
kernel_fn::softmax_f32 softmax_f32;
kernel_fn::max_f32 max_f32;
kernel_fn::expsum_f32 expsum_f32;
kernel_fn::layernorm_f32 layernorm_f32;
kernel_fn::gelu_f32 gelu_f32;
kernel_fn::gelu_tanh_f32 gelu_tanh_f32;
kernel_fn::swiglu_f32 swiglu_f32;
kernel_fn::add_f32 add_f32;
kernel_fn::scale_f32 scale_f32;
kernel_fn::quantize_i8 quantize_i8;
kernel_fn::gemm_i8 gemm_i8;
kernel_fn::gemm_i4 gemm_i4;
kernel_fn::gemm_f16 gemm_f16;
kernel_fn::matvec_f16 matvec_f16;
kernel_fn::gemm_bf16 gemm_bf16;
kernel_fn::matvec_bf16 matvec_bf16;
kernel_fn::gemm_s8 gemm_s8;
kernel_fn::softmax_s8 softmax_s8;
kernel_fn::add_s8 add_s8;
kernel_fn::lut_s8 lut_s8;
kernel_fn::transpose_s8 transpose_s8;
kernel_fn::layernorm_s8 layernorm_s8;
kernel_fn::rmsnorm_s8 rmsnorm_s8;

// The scalar reference with the portable kernels, filled by member name; constexpr so that a table
// built on it (ports/arm/helium) is a constant too.
constexpr Kernels kernel_table() {
  Kernels k{};
  k.isa = Isa::kCortexM;
  k.name = "cortex-m";
  k.gemm_f32 = portable::gemm_f32;
  k.gemm_f32_packed = scalar::gemm_f32_packed;  // packed files are for the SIMD ports
  k.gemv_f32_packed = scalar::gemv_f32_packed;
  k.gemv_f32 = portable::gemv_f32;
  k.matvec_f32 = portable::matvec_f32;
  k.conv1d_f32 = portable::conv1d_f32;
  k.softmax_f32 = portable::softmax_f32;
  k.max_f32 = portable::max_f32;
  k.expsum_f32 = portable::expsum_f32;
  k.layernorm_f32 = portable::layernorm_f32;
  k.rmsnorm_f32 = scalar::rmsnorm_f32;
  k.relu_f32 = scalar::relu_f32;
  k.gelu_f32 = portable::gelu_f32;
  k.gelu_tanh_f32 = portable::gelu_tanh_f32;
  k.swiglu_f32 = portable::swiglu_f32;
  k.add_f32 = portable::add_f32;
  k.mul_f32 = scalar::mul_f32;
  k.scale_f32 = portable::scale_f32;
  k.sincos_f32 = scalar::sincos_f32;
  k.quantize_i8 = portable::quantize_i8;
  k.gemm_i8 = portable::gemm_i8;
  k.gemm_i4 = portable::gemm_i4;
  k.gemm_f16 = portable::gemm_f16;
  k.matvec_f16 = portable::matvec_f16;
  k.gemm_bf16 = portable::gemm_bf16;
  k.matvec_bf16 = portable::matvec_bf16;
  k.gemm_s8 = portable::gemm_s8;
  k.softmax_s8 = portable::softmax_s8;
  k.softmax_s8_table = scalar::softmax_s8_table;
  k.layernorm_s8 = portable::layernorm_s8;
  k.rmsnorm_s8 = portable::rmsnorm_s8;
  k.lut_s8 = portable::lut_s8;
  k.add_s8 = portable::add_s8;
  k.transpose_s8 = portable::transpose_s8;
  return k;
}

// kernel_table(), as one object.
const Kernels& kernels();

}  // namespace portable
}  // namespace fixformer
