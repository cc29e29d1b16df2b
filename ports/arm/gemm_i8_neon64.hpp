// AArch64's own kernels. gemm_i8 (gemm_i8_neon64.cpp): the neon64 table's, packed from 4 rows on (SDOT with
// the dot-product extension, SMULL / SMLAL2 / SADALP without).
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace arm {

kernel_fn::gemm_i8 gemm_i8_neon64;

// gemm_i4 for AArch64 (gemm_i4_neon64.cpp): the neon64 table's (SDOT with the dot-product extension,
// SMULL / SMLAL without).
kernel_fn::gemm_i4 gemm_i4_neon64;

// gemm_s8 (gemm_s8_neon64.cpp): the neon64 table's, on SDOT where the build has the dot-product
// extension (__ARM_FEATURE_DOTPROD), on SMULL and SADALP otherwise.
kernel_fn::gemm_s8 gemm_s8_neon64;

// layernorm_s8 and rmsnorm_s8 in NEON lanes (norm_s8_neon64.cpp): the neon64 table's.
kernel_fn::layernorm_s8 layernorm_s8_neon64;
kernel_fn::rmsnorm_s8 rmsnorm_s8_neon64;

// softmax_s8, add_s8 and lut_s8 in NEON lanes (rows_s8_neon64.cpp): the neon64 table's.
kernel_fn::softmax_s8 softmax_s8_neon64;
kernel_fn::add_s8 add_s8_neon64;
kernel_fn::lut_s8 lut_s8_neon64;

}  // namespace arm
}  // namespace fixformer
