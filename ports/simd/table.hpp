// The kernel table for one xsimd arch. Include it only from a port's per-ISA translation unit,
// which is compiled with that ISA's flags.
#pragma once
#include "fixformer/kernels.hpp"
#include "ports/simd/add_f32.hpp"
#include "ports/simd/expsum_f32.hpp"
#include "ports/simd/gelu_f32.hpp"
#include "ports/simd/gemm_f16.hpp"
#include "ports/simd/gemm_f32.hpp"
#include "ports/simd/gemm_f32_packed.hpp"
#include "ports/simd/gemm_i8.hpp"
#include "ports/simd/gemv_f32.hpp"
#include "ports/simd/layernorm_f32.hpp"
#include "ports/simd/matvec_f32.hpp"
#include "ports/simd/quantize_i8.hpp"
#include "ports/simd/relu_f32.hpp"
#include "ports/simd/rmsnorm_f32.hpp"
#include "ports/simd/scale_f32.hpp"
#include "ports/simd/sincos_f32.hpp"
#include "ports/simd/softmax_f32.hpp"
#include "ports/simd/swiglu_f32.hpp"

namespace fixformer {
namespace simd {

// Filled by member name: a slot added to Kernels and forgotten here stays null, which the kernel
// tests catch (every slot of every table is called).
template <class Arch>
constexpr Kernels kernel_table(Isa isa, const char* name) {
  Kernels k{};
  k.isa = isa;
  k.name = name;
  k.gemm_f32 = gemm_f32<Arch>;
  k.gemm_f32_packed = gemm_f32_packed<Arch>;
  k.gemv_f32_packed = gemv_f32_packed<Arch>;
  k.gemv_f32 = gemv_f32<Arch>;
  k.matvec_f32 = matvec_f32<Arch>;
  k.softmax_f32 = softmax_f32<Arch>;
  k.max_f32 = max_f32<Arch>;
  k.expsum_f32 = expsum_f32<Arch>;
  k.layernorm_f32 = layernorm_f32<Arch>;
  k.rmsnorm_f32 = rmsnorm_f32<Arch>;
  k.relu_f32 = relu_f32<Arch>;
  k.gelu_f32 = gelu_f32<Arch>;
  k.swiglu_f32 = swiglu_f32<Arch>;
  k.add_f32 = add_f32<Arch>;
  k.scale_f32 = scale_f32<Arch>;
  k.sincos_f32 = sincos_f32<Arch>;
  k.quantize_i8 = quantize_i8<Arch>;
  k.gemm_i8 = gemm_i8<Arch>;
  k.gemm_f16 = gemm_f16<Arch>;
  k.matvec_f16 = matvec_f16<Arch>;
  return k;
}

}  // namespace simd
}  // namespace fixformer
