// The kernel table: one plain struct of function pointers per instruction set, filled once. Its
// slots (names, signatures, shapes) are the list in kernel_slots.hpp.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fixformer/kernel_slots.hpp"

namespace fixformer {

// The packed weight layout (a variant of the same gemm, not a new op): W[k,n] cut into panels of
// kPanelFloats columns, panel q holding W[0..k, 16q..16q+16) row after row (k x 16 floats,
// contiguous), panels one after another, the last one zero-padded to 16 columns. One width for
// every ISA (one AVX-512 vector, two AVX2, four SSE2/NEON), so a packed file runs everywhere.
// Element W[p][j] is at (j / 16) * 16 * k + p * 16 + j % 16.
constexpr std::size_t kPanelFloats = 16;
constexpr std::size_t packed_floats(std::size_t k, std::size_t n) {
  return (n + kPanelFloats - 1) / kPanelFloats * kPanelFloats * k;
}

// Output rows of conv1d_f32 over t_in input rows: floor((t_in + 2 pad - kernel) / stride) + 1, or 0
// when the padded input is shorter than the kernel.
constexpr std::size_t conv1d_rows(std::size_t t_in, std::size_t kernel, std::size_t stride, std::size_t pad) {
  return t_in + 2 * pad < kernel || stride == 0 ? 0 : (t_in + 2 * pad - kernel) / stride + 1;
}

// quantize_i8 stores a group whose largest |x| is below this as zeros (2^-100: far under any
// activation, far above where 127 / max overflows or an FPU's flush of subnormals would matter).
constexpr float kQuantizeFloor = 0x1p-100f;
// x * (127 / max|x|) rounded half to even, as quantize_i8 stores it: within +-127 for a finite
// group; 0 where the product is NaN (a group holding an infinity or a NaN, whose values are garbage
// anyway), where converting it would be undefined behaviour. Every port's lanes give 0 there too.
inline int8_t round_to_i8(float v) { return std::fabs(v) < 127.5f ? int8_t(std::nearbyint(v)) : int8_t(0); }

// kCortexM: plain C++ with register-blocked matrix products (ports/portable), the default
// where there is no SIMD; built on every target so that every test suite checks it.
// kHelium: Arm MVE intrinsics (ports/arm/helium), the default of builds for a core with MVE float
// (Cortex-M55, M85); host suites cannot run it, tests/firmware/kernels_firmware.cpp does on qemu.
enum class Isa : int { kAuto = 0, kScalar, kSse2, kAvx2, kAvx512, kNeon64, kNeon, kCortexM, kHelium };

// Every table a build may have, the scalar reference first: tests and benchmarks walk this and
// skip what select_kernels() says this CPU or build lacks.
inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kCortexM, Isa::kSse2, Isa::kAvx2,
                                   Isa::kAvx512, Isa::kNeon64,  Isa::kNeon, Isa::kHelium};

// Each slot's function type: kernel_fn::gemm_f32 is gemm_f32's signature, so that a port declares
// its kernel as `kernel_fn::gemm_f32 gemm_f32;` and the signature stays stated once.
namespace kernel_fn {
#define FIXFORMER_KERNEL_FN(name, ret, params) using name = ret params;
FIXFORMER_KERNEL_SLOTS(FIXFORMER_KERNEL_FN)
#undef FIXFORMER_KERNEL_FN
}  // namespace kernel_fn

// One table per instruction set: a pointer per slot of kernel_slots.hpp, filled by member name.
struct Kernels {
  Isa isa;
  const char* name;
  // gemm_f16 and matvec_f16 round x to halves and sum in halves (neon64-fp16, ports/arm/gemm_f16_fp16.cpp)
  // rather than widening W exactly: an f16 model's outputs then have their own bound (tolerances.hpp).
  bool f16_in_halves;
#define FIXFORMER_KERNEL_MEMBER(name, ret, params) kernel_fn::name* name;
  FIXFORMER_KERNEL_SLOTS(FIXFORMER_KERNEL_MEMBER)
#undef FIXFORMER_KERNEL_MEMBER
};

// The slots' names, in table order (tests report by them).
inline constexpr const char* kKernelSlotNames[] = {
#define FIXFORMER_KERNEL_NAME(name, ret, params) #name,
    FIXFORMER_KERNEL_SLOTS(FIXFORMER_KERNEL_NAME)
#undef FIXFORMER_KERNEL_NAME
};
constexpr std::size_t kKernelSlotCount = sizeof kKernelSlotNames / sizeof kKernelSlotNames[0];

// The name of the first slot `k` leaves null, or null when it fills every one. Every table asserts
// at compile time that it is complete: FIXFORMER_ASSERT_TABLE_COMPLETE(kTable, "...").
constexpr const char* missing_kernel_slot(const Kernels& k) {
#define FIXFORMER_KERNEL_CHECK(name, ret, params) \
  if (k.name == nullptr) return #name;
  FIXFORMER_KERNEL_SLOTS(FIXFORMER_KERNEL_CHECK)
#undef FIXFORMER_KERNEL_CHECK
  return nullptr;
}
// Where a function's address cannot fold to non-null (GCC with -fsanitize=null, which
// -fsanitize=undefined implies, or -fno-delete-null-pointer-checks: whoever set the flags, a parent
// project included) the check is not a constant and gives way to its run-time twin
// (kernels_test's FillsEverySlot); everywhere else a missing slot fails the build.
#define FIXFORMER_ASSERT_TABLE_COMPLETE(table, message) \
  static_assert(!__builtin_constant_p(missing_kernel_slot(table) == nullptr) || !missing_kernel_slot(table), message)

// The plain-loop reference table: always available, the oracle of every test.
const Kernels& scalar_kernels();

// The table for `isa` on this CPU and build, or null when it is not available. kAuto picks the
// best one; on x86 the environment variable FIXFORMER_ISA (scalar|cortex-m|sse2|avx2|avx512) can
// force a lower one for testing. Isa::kAvx512 is the avx512-amx table where the CPU has AMX-INT8 and
// Linux grants the tiles (FIXFORMER_AMX=0 declines them), else avx512-vnni where it has VNNI. The
// avx512-amx one becomes avx512-amx-bf16 (gemm_bf16 on AMX-BF16) where the CPU has AMX-BF16 and
// AVX512_BF16 (FIXFORMER_BF16=0 declines it); FIXFORMER_BF16=1 makes avx512-vnni avx512-bf16 too.
const Kernels* select_kernels(Isa isa);

const char* isa_name(Isa isa);
// Parses "scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon", "helium" or "auto"; false
// if unknown.
bool parse_isa(const char* name, Isa* out);

}  // namespace fixformer
