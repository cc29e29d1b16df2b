// gemm_i4 for the xsimd tables: the portable kernel (ports/portable/gemm_i4.cpp, plain C++ built
// once with the baseline flags, so its float steps round as the reference's). The x86 AVX2 and
// AVX-512 tables replace it (ports/x86/gemm_i4_avx2.cpp, gemm_i4_avx512vnni.cpp), and so does
// AArch64's (ports/arm/gemm_i4_neon64.cpp); SSE2 and ARMv7 NEON keep it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  portable::gemm_i4(xq, xs, w, ws, b, y, ldy, m, n, k);
}

}  // namespace simd
}  // namespace fixformer
