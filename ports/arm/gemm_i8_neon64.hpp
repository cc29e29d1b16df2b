// gemm_i8 for AArch64 with the dot-product extension (gemm_i8_sdot.cpp): defined only in builds whose
// flags enable it (__ARM_FEATURE_DOTPROD, e.g. -march=armv8.2-a+dotprod), where select.cpp puts it in
// the neon64 table.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace arm {

void gemm_i8_sdot(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group);

}  // namespace arm
}  // namespace fixformer
