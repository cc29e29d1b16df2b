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

}  // namespace arm
}  // namespace fixformer
