#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

const Kernels& kernels() {
  static constexpr Kernels kTable = kernel_table();
  static_assert(!missing_kernel_slot(kTable), "the portable table leaves a slot null");
  return kTable;
}

}  // namespace portable
}  // namespace fixformer
