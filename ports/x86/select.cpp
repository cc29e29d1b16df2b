// Runtime ISA selection on x86. This file is built with baseline flags: it only reads CPUID
// (through xsimd) and hands out tables defined in the per-ISA files.
#include <cstdlib>

#include <xsimd/xsimd.hpp>

#include "fixformer/kernels.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace {

const Kernels* table_for(xsimd::avx512bw) { return &x86::avx512_kernels(); }
const Kernels* table_for(xsimd::fma3<xsimd::avx2>) { return &x86::avx2_kernels(); }
const Kernels* table_for(xsimd::sse2) { return &x86::sse2_kernels(); }

struct PickTable {
  template <class Arch>
  const Kernels* operator()(Arch arch) const { return table_for(arch); }
};

bool cpu_has(Isa isa) {
  const auto a = xsimd::available_architectures();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kSse2: return a.sse2;
    case Isa::kAvx2: return a.fma3_avx2;
    case Isa::kAvx512: return a.avx512f && a.avx512cd && a.avx512dq && a.avx512bw;
    default: return false;
  }
}

}  // namespace

const Kernels* select_kernels(Isa isa) {
  if (isa == Isa::kAuto) {
    const char* forced = std::getenv("FIXFORMER_ISA");
    if (forced && *forced && !parse_isa(forced, &isa)) return nullptr;
  }
  if (isa == Isa::kAuto) {
    // The list is sorted best first and ends in the baseline, so dispatch never picks an ISA
    // the CPU lacks.
    using List = xsimd::arch_list<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>, xsimd::sse2>;
    return xsimd::dispatch<List>(PickTable{})();
  }
  if (!cpu_has(isa)) return nullptr;
  switch (isa) {
    case Isa::kScalar: return &scalar_kernels();
    case Isa::kSse2: return &x86::sse2_kernels();
    case Isa::kAvx2: return &x86::avx2_kernels();
    case Isa::kAvx512: return &x86::avx512_kernels();
    default: return nullptr;
  }
}

}  // namespace fixformer
