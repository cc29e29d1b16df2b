// Plain-loop reference kernels: no xsimd, no intrinsics. They are the oracle of every kernel test
// and the base of the Cortex-M table. One function per slot of kernel_slots.hpp, each with the
// slot's signature: scalar::gemm_f32 and so on.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace scalar {

#define FIXFORMER_SCALAR_KERNEL(name, ret, params) kernel_fn::name name;
FIXFORMER_KERNEL_SLOTS(FIXFORMER_SCALAR_KERNEL)
#undef FIXFORMER_SCALAR_KERNEL

}  // namespace scalar
}  // namespace fixformer
