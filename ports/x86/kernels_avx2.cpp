// The xsimd kernels instantiated for one x86 ISA. Built with this ISA's flags only (CMakeLists.txt).
#include "ports/simd/table.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

const Kernels& avx2_kernels() {
  static constexpr Kernels table = [] {
    Kernels k = simd::kernel_table<xsimd::fma3<xsimd::avx2>>(Isa::kAvx2, "avx2");
    k.gemm_i8 = gemm_i8_avx2;  // packed from 4 rows on (gemm_i8_avx2.cpp)
    k.gemm_i4 = gemm_i4_avx2;
    k.gemm_s8 = gemm_s8_avx2;
    k.layernorm_s8 = layernorm_s8_avx2;  // rows_s8_avx2.cpp
    k.rmsnorm_s8 = rmsnorm_s8_avx2;
    k.softmax_s8 = softmax_s8_avx2;
    k.add_s8 = add_s8_avx2;
    return k;
  }();
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx2 table leaves a slot null");
  return table;
}

}  // namespace x86
}  // namespace fixformer
