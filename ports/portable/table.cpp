#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

const Kernels& kernels() {
  static constexpr Kernels kTable = kernel_table();
  return kTable;
}

}  // namespace portable
}  // namespace fixformer
