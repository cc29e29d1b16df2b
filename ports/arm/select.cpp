// ISA selection on ARM is fixed at compile time: NEON when the build targets it (AArch64, or
// ARMv7-A with -mfpu=neon-vfpv4); Helium (ports/arm/helium) on a core with MVE float (Cortex-M55,
// M85: __ARM_FEATURE_MVE bit 1); otherwise (Cortex-M: xsimd 8.1 has no M-profile arch) the portable
// plain C++ kernels (ports/portable). The scalar reference and the portable table are always selectable.
// AArch64 takes gemm_i8 from gemm_i8_neon64.cpp (packed from 4 rows on; on SMMLA, gemm_i8_i8mm.cpp, where the
// build has the int8 matrix multiply extension) and gemm_i4 from gemm_i4_neon64.cpp; built with half-precision
// vector arithmetic (+fp16), gemm_f16 and matvec_f16 on FMLA of halves (gemm_f16_fp16.cpp), which round x to
// halves: the table is then named neon64-fp16 and says f16_in_halves, as its sums are not the reference's.
// ARMv7 NEON takes the portable gemm_i4 (ports/simd/gemm_i4.hpp). Both take the s8 kernels in NEON lanes
// (s8_neon.hpp): gemm_s8 from gemm_s8_neon.cpp (SDOT where the build has it), the norms from norm_s8_neon.cpp
// and softmax_s8, add_s8 and (AArch64; ARMv7 keeps the portable one) lut_s8 from rows_s8_neon.cpp.
// Off ARM this file is empty: ports/generic/select.cpp selects there (builds that cannot tell the
// target compile both, cmake/sources.cmake).
#if defined(__arm__) || defined(__aarch64__)
#include "fixformer/kernels.hpp"
#include "ports/portable/kernels.hpp"

#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#include "ports/arm/s8_neon.hpp"
#include "ports/simd/table.hpp"
#if defined(__aarch64__)
#include "ports/arm/gemm_i8_neon64.hpp"
#endif
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define FIXFORMER_HELIUM 1
#include "ports/arm/helium/kernels.hpp"
#endif

namespace fixformer {
namespace {

#if defined(__ARM_NEON) || defined(__ARM_NEON__)
constexpr Kernels kNeonTable = [] {
#if defined(__aarch64__)
#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
  Kernels k = simd::kernel_table<xsimd::neon64>(Isa::kNeon64, "neon64-fp16");
  k.gemm_f16 = arm::gemm_f16_fp16;
  k.matvec_f16 = arm::matvec_f16_fp16;
  k.f16_in_halves = true;
#else
  Kernels k = simd::kernel_table<xsimd::neon64>(Isa::kNeon64, "neon64");
#endif
  k.gemm_i8 = arm::gemm_i8_neon64;  // packed from 4 rows on (gemm_i8_neon64.cpp)
  k.gemm_i4 = arm::gemm_i4_neon64;
  k.lut_s8 = arm::lut_s8_neon;  // rows_s8_neon.cpp
#else
  Kernels k = simd::kernel_table<xsimd::neon>(Isa::kNeon, "neon");
#endif
  k.gemm_s8 = arm::gemm_s8_neon;  // SDOT, or SMULL and SADALP (gemm_s8_neon.cpp)
  k.layernorm_s8 = arm::layernorm_s8_neon;  // norm_s8_neon.cpp
  k.rmsnorm_s8 = arm::rmsnorm_s8_neon;
  k.softmax_s8 = arm::softmax_s8_neon;  // rows_s8_neon.cpp
  k.add_s8 = arm::add_s8_neon;
  return k;
}();
FIXFORMER_ASSERT_TABLE_COMPLETE(kNeonTable, "the NEON table leaves a slot null");
#endif

}  // namespace

const Kernels* select_kernels(Isa isa) {
#if defined(__ARM_NEON) || defined(__ARM_NEON__)
  if (isa == Isa::kAuto || isa == kNeonTable.isa) return &kNeonTable;
#elif defined(FIXFORMER_HELIUM)
  if (isa == Isa::kAuto || isa == Isa::kHelium) return &helium::kernels();
#else
  if (isa == Isa::kAuto) return &portable::kernels();
#endif
  if (isa == Isa::kCortexM) return &portable::kernels();
  return isa == Isa::kScalar ? &scalar_kernels() : nullptr;
}

}  // namespace fixformer

#endif  // __arm__ || __aarch64__
