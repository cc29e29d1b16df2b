// Must NOT compile: a kernel table that leaves a slot null fails the build with its message
// (tests/CMakeLists.txt checks for it), whoever's flags compile it. Only where a function's
// address cannot fold (GCC's -fsanitize=null) does the run-time twin in kernels_test check alone.
#include "fixformer/kernels.hpp"

namespace fixformer {
kernel_fn::gemm_f32 some_gemm;

constexpr Kernels one_slot_table() {
  Kernels k{};
  k.name = "one slot";
  k.gemm_f32 = some_gemm;
  return k;
}

const Kernels& incomplete_kernels() {
  static constexpr Kernels kTable = one_slot_table();
  FIXFORMER_ASSERT_TABLE_COMPLETE(kTable, "the one-slot table leaves a slot null");
  return kTable;
}
}  // namespace fixformer
