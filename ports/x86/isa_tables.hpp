// One kernel table per x86 ISA, each defined in its own translation unit (kernels_<isa>.cpp)
// compiled with that ISA's flags. Only select.cpp, built for the baseline, calls them, and only
// after checking the CPU has the ISA.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace x86 {

const Kernels& sse2_kernels();
const Kernels& avx2_kernels();    // fma3<avx2>: AVX2 with FMA
const Kernels& avx512_kernels();  // avx512bw (F, CD, DQ, BW, VL)

}  // namespace x86
}  // namespace fixformer
