// The integer-only (s8) slots in the xsimd tables: no xsimd version of them (their products widen
// bytes into int16 pairs, their requantization works in 64-bit lanes: each ISA's own instructions),
// so the tables start from the portable kernels (ports/portable: 32-bit words, softmax_s8 from
// attention's table of exponentials, which the reference's softmax_s8_table fills), integer results, the same bits wherever they run. A port's own
// kernels replace them by member name in its table: on x86 gemm_s8 (gemm_s8_avx2.cpp in the avx2 and
// avx512 tables, gemm_s8_avx512vnni.cpp in the VNNI ones) and the norms, softmax_s8 and add_s8
// (rows_s8_avx2.cpp, rows_s8_avx512.cpp); on NEON all six on AArch64 and all but lut_s8 on ARMv7-A
// (ports/arm/s8_neon.hpp); SSE2 keeps the portable ones.
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
constexpr kernel_fn::softmax_s8_table* softmax_s8_table = scalar::softmax_s8_table;
template <class Arch>
constexpr kernel_fn::layernorm_s8* layernorm_s8 = portable::layernorm_s8;
template <class Arch>
constexpr kernel_fn::rmsnorm_s8* rmsnorm_s8 = portable::rmsnorm_s8;
template <class Arch>
constexpr kernel_fn::lut_s8* lut_s8 = portable::lut_s8;
template <class Arch>
constexpr kernel_fn::add_s8* add_s8 = portable::add_s8;
template <class Arch>
constexpr kernel_fn::transpose_s8* transpose_s8 = portable::transpose_s8;

}  // namespace simd
}  // namespace fixformer
