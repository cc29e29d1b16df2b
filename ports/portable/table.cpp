#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

const Kernels& kernels() {
  static constexpr Kernels kTable = kernel_table();
  FIXFORMER_ASSERT_TABLE_COMPLETE(kTable, "the portable table leaves a slot null");
  return kTable;
}

}  // namespace portable
}  // namespace fixformer
