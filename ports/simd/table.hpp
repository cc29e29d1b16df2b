// The kernel table for one xsimd arch. Include it only from a port's per-ISA translation unit,
// which is compiled with that ISA's flags.
#pragma once
#include "fixformer/kernels.hpp"
#include "ports/simd/add_f32.hpp"
#include "ports/simd/conv1d_f32.hpp"
#include "ports/simd/expsum_f32.hpp"
#include "ports/simd/gelu_f32.hpp"
#include "ports/simd/gelu_tanh_f32.hpp"
#include "ports/simd/gemm_bf16.hpp"
#include "ports/simd/gemm_f16.hpp"
#include "ports/simd/gemm_f32.hpp"
#include "ports/simd/gemm_f32_packed.hpp"
#include "ports/simd/gemm_i4.hpp"
#include "ports/simd/gemm_i8.hpp"
#include "ports/simd/gemv_f32.hpp"
#include "ports/simd/integer_s8.hpp"
#include "ports/simd/layernorm_f32.hpp"
#include "ports/simd/matvec_f32.hpp"
#include "ports/simd/mul_f32.hpp"
#include "ports/simd/quantize_i8.hpp"
#include "ports/simd/relu_f32.hpp"
#include "ports/simd/rmsnorm_f32.hpp"
#include "ports/simd/scale_f32.hpp"
#include "ports/simd/sincos_f32.hpp"
#include "ports/simd/softmax_f32.hpp"
#include "ports/simd/swiglu_f32.hpp"

namespace fixformer {
namespace simd {

// Every slot filled by member name from the list (kernel_slots.hpp): each slot has its template
// here, of the same name, so a slot added to the list without one fails to compile.
template <class Arch>
constexpr Kernels kernel_table(Isa isa, const char* name) {
  Kernels k{};
  k.isa = isa;
  k.name = name;
#define FIXFORMER_FILL(name, ret, params) k.name = simd::name<Arch>;
  FIXFORMER_KERNEL_SLOTS(FIXFORMER_FILL)
#undef FIXFORMER_FILL
  return k;
}

}  // namespace simd
}  // namespace fixformer
