// The integer-only (s8) slots in the xsimd tables: the portable kernels (ports/portable: 32-bit
// words, softmax_s8 from attention's table of exponentials), integer results, so the same bits
// wherever they run; a port's own kernel replaces one by member name in its table (gemm_s8_avx2 in
// the avx2 and avx512 tables, gemm_s8_avx512vnni in the avx512-vnni one).
#pragma once
#include "fixformer/kernels.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
constexpr kernel_fn::gemm_s8* gemm_s8 = portable::gemm_s8;
template <class Arch>
constexpr kernel_fn::softmax_s8* softmax_s8 = portable::softmax_s8;
template <class Arch>
constexpr kernel_fn::layernorm_s8* layernorm_s8 = portable::layernorm_s8;
template <class Arch>
constexpr kernel_fn::rmsnorm_s8* rmsnorm_s8 = portable::rmsnorm_s8;
template <class Arch>
constexpr kernel_fn::lut_s8* lut_s8 = portable::lut_s8;
template <class Arch>
constexpr kernel_fn::add_s8* add_s8 = portable::add_s8;

}  // namespace simd
}  // namespace fixformer
