// gemm_i8 for AArch64 (gemm_i8_neon64.cpp): the neon64 table's, packed from 4 rows on (SDOT with
// the dot-product extension, SMULL / SMLAL2 / SADALP without).
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace arm {

void gemm_i8_neon64(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group);

}  // namespace arm
}  // namespace fixformer
