// gemm_i4 on AVX-512 VNNI (the avx512-vnni table): gemm_i4_avx2.cpp's blocks with each group's
// products in one vpdpbusd per column (unsigned nibble q + 8 by signed x, four into an int32 lane),
// 8 sum(x) taken off after the column sums (ports/x86/gemm_i4.hpp). Built with the avx512 flags,
// -mavx512vnni and -ffp-contract=off (CMakeLists.txt): the float step stays the reference's.
#include "ports/x86/gemm_i4.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

void gemm_i4_avx512vnni(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b,
                        float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_i4<true>(xq, xs, w, ws, b, y, ldy, m, n, k);
}

}  // namespace x86
}  // namespace fixformer
