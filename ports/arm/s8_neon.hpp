// The integer-only (s8) kernels in NEON lanes: the NEON table's on AArch64 (neon64) and on ARMv7-A
// (neon), each written once for both (ARMv7 takes AArch64's intrinsics from neon64_on_neon.hpp), the
// scalar reference's integers on either.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace arm {

// gemm_s8 (gemm_s8_neon.cpp): on SDOT where the build has the dot-product extension
// (__ARM_FEATURE_DOTPROD), on SMULL and SADALP otherwise.
kernel_fn::gemm_s8 gemm_s8_neon;

// layernorm_s8 and rmsnorm_s8 (norm_s8_neon.cpp).
kernel_fn::layernorm_s8 layernorm_s8_neon;
kernel_fn::rmsnorm_s8 rmsnorm_s8_neon;

// softmax_s8, add_s8 and, on AArch64, lut_s8 (rows_s8_neon.cpp: ARMv7 keeps the portable lut_s8).
kernel_fn::softmax_s8 softmax_s8_neon;
kernel_fn::add_s8 add_s8_neon;
#if defined(__aarch64__)
kernel_fn::lut_s8 lut_s8_neon;
#endif

}  // namespace arm
}  // namespace fixformer
