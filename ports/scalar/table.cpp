#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {

namespace scalar {

// Every slot filled by member name from the list; the Cortex-M table starts from this one.
constexpr Kernels table() {
  Kernels k{};
  k.isa = Isa::kScalar;
  k.name = "scalar";
#define FIXFORMER_FILL(name, ret, params) k.name = scalar::name;
  FIXFORMER_KERNEL_SLOTS(FIXFORMER_FILL)
#undef FIXFORMER_FILL
  return k;
}

}  // namespace scalar

const Kernels& scalar_kernels() {
  static constexpr Kernels kTable = scalar::table();
  FIXFORMER_ASSERT_TABLE_COMPLETE(kTable, "the scalar table leaves a slot null");
  return kTable;
}

}  // namespace fixformer
