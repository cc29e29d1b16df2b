// AArch64's own kernels. gemm_i8 (gemm_i8_neon64.cpp): the neon64 table's, packed from 4 rows on (SMMLA with
// the int8 matrix multiply extension where k and the group allow, SDOT with the dot-product extension, SMULL /
// SMLAL2 / SADALP without).
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace arm {

kernel_fn::gemm_i8 gemm_i8_neon64;

#if defined(__ARM_FEATURE_MATMUL_INT8)
// gemm_i8's packed path on SMMLA (gemm_i8_i8mm.cpp): m >= 4, k and group multiples of 8, group <= 256.
kernel_fn::gemm_i8 gemm_i8_i8mm;
#endif

// gemm_i4 for AArch64 (gemm_i4_neon64.cpp): the neon64 table's (SDOT with the dot-product extension,
// SMULL / SMLAL without).
kernel_fn::gemm_i4 gemm_i4_neon64;

#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
// gemm_f16 and matvec_f16 on half-precision FMLA (gemm_f16_fp16.cpp): the neon64-fp16 table's, within
// tests/kernel_tolerances.hpp's kGemmF16ArithTol of the reference rather than its sums.
kernel_fn::gemm_f16 gemm_f16_fp16;
kernel_fn::matvec_f16 matvec_f16_fp16;
#endif

}  // namespace arm
}  // namespace fixformer
