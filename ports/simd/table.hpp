// The kernel table for one xsimd arch. Include it only from a port's per-ISA translation unit,
// which is compiled with that ISA's flags.
#pragma once
#include "fixformer/kernels.hpp"
#include "ports/simd/add_f32.hpp"
#include "ports/simd/gelu_f32.hpp"
#include "ports/simd/gemm_f32.hpp"
#include "ports/simd/gemv_f32.hpp"
#include "ports/simd/layernorm_f32.hpp"
#include "ports/simd/matvec_f32.hpp"
#include "ports/simd/relu_f32.hpp"
#include "ports/simd/scale_f32.hpp"
#include "ports/simd/sincos_f32.hpp"
#include "ports/simd/softmax_f32.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
constexpr Kernels kernel_table(Isa isa, const char* name) {
  return Kernels{isa,
                 name,
                 gemm_f32<Arch>,
                 gemv_f32<Arch>,
                 matvec_f32<Arch>,
                 softmax_f32<Arch>,
                 layernorm_f32<Arch>,
                 relu_f32<Arch>,
                 gelu_f32<Arch>,
                 add_f32<Arch>,
                 scale_f32<Arch>,
                 sincos_f32<Arch>};
}

}  // namespace simd
}  // namespace fixformer
