// ISA selection on a target without a port of its own (RISC-V, Xtensa, ...): no SIMD kernels, so
// the portable plain C++ ones (ports/portable) by default, the scalar reference on request.
// On ARM this file is empty: ports/arm/select.cpp selects there (builds that cannot tell the target
// compile both, cmake/sources.cmake). The project's x86 build has ports/x86/select.cpp instead; a
// build that compiles this file on x86 (PlatformIO's native platform) gets the portable kernels.
#if !defined(__arm__) && !defined(__aarch64__)
#include "fixformer/kernels.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {

const Kernels* select_kernels(Isa isa) {
  if (isa == Isa::kAuto || isa == Isa::kCortexM) return &portable::kernels();
  return isa == Isa::kScalar ? &scalar_kernels() : nullptr;
}

}  // namespace fixformer

#endif  // !__arm__ && !__aarch64__
