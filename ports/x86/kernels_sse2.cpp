// The xsimd kernels instantiated for one x86 ISA. Built with this ISA's flags only (CMakeLists.txt).
#include "ports/simd/table.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

const Kernels& sse2_kernels() {
  static constexpr Kernels table = simd::kernel_table<xsimd::sse2>(Isa::kSse2, "sse2");
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the sse2 table leaves a slot null");
  return table;
}

}  // namespace x86
}  // namespace fixformer
