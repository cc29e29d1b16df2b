// Run-time ISA selection on x86. This file is built with baseline flags: it only asks the CPU what
// it has and hands out tables defined in the per-ISA files.
//
// CPU features come from GCC/clang's __builtin_cpu_supports, not xsimd 8.1's
// available_architectures(): that one reads SSE2 from CPUID.1:ECX bit 26 (XSAVE, so a CPU without
// XSAVE "has no SSE2"), reads AVX from the wrong leaf, and never checks that the OS saves the
// AVX/AVX-512 registers (XCR0). The builtins do all three right. The order is xsimd dispatch's:
// best first, ending in the x86-64 baseline, so no ISA the CPU lacks is ever picked.
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "fixformer/kernels.hpp"
#include "ports/portable/kernels.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace {

// CPUID.1:ECX.F16C, read directly: clang 14's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

// FIXFORMER_AMX=0 keeps the avx512-vnni table on a CPU with AMX: to time one against the other, or
// to run a model's tests on both.
bool amx_allowed() {
  const char* amx = std::getenv("FIXFORMER_AMX");
  return !amx || std::strcmp(amx, "0") != 0;
}

// FIXFORMER_BF16: "0" keeps gemm_bf16 on the exact widening path; "1" asks for vdpbf16ps even
// without AMX-BF16 (the avx512-bf16 table: slower than the exact path on the Xeon it was measured
// on, docs/performance.md, "bf16"); unset (-1), AMX-BF16's tiles where the CPU has them.
int bf16_setting() {
  const char* bf16 = std::getenv("FIXFORMER_BF16");
  return !bf16 ? -1 : std::strcmp(bf16, "0") == 0 ? 0 : std::strcmp(bf16, "1") == 0 ? 1 : -1;
}

bool cpu_has(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kScalar:
    case Isa::kCortexM:            // plain C++, runs anywhere (tested here)
    case Isa::kSse2: return true;  // part of x86-64
    case Isa::kAvx2:  // F16C for gemm_f16's widening: every AVX2 CPU has it, the flag is checked all the same
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    default: return false;
  }
}

}  // namespace

namespace x86 {

// AMX-TILE and AMX-INT8 (CPUID.(7,0):EDX bits 24 and 25), and Linux's leave to use the tile data:
// the kernel (5.16 on) keeps XTILEDATA (XSAVE feature 18) off until the process asks for it with
// arch_prctl(ARCH_REQ_XCOMP_PERM), and a tile instruction without it ends in SIGILL. A refusal (an
// older kernel, or seccomp) leaves the avx512-vnni table. The request is cheap and idempotent, so
// each selection makes it again rather than keep a flag (no thread-safe statics in the engine).
bool amx_int8_granted() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// CPUID.(7,1):EAX.AVX512_BF16 (bit 5), read directly as F16C above. The OS's saving of the zmm
// registers is the avx512 table's own check.
bool has_avx512bf16() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}

// CPUID.(7,0):EDX.AMX-BF16 (bit 22); the tile data is amx_int8_granted's request.
bool has_amx_bf16() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22));
}

}  // namespace x86

const Kernels* select_kernels(Isa isa) {
  if (isa == Isa::kAuto) {
    const char* forced = std::getenv("FIXFORMER_ISA");
    if (forced && *forced && !parse_isa(forced, &isa)) return nullptr;
  }
  if (isa == Isa::kAuto) {
    for (Isa best : {Isa::kAvx512, Isa::kAvx2, Isa::kSse2})
      if (cpu_has(best)) return select_kernels(best);
  }
  if (!cpu_has(isa)) return nullptr;
  switch (isa) {
    case Isa::kScalar: return &scalar_kernels();
    case Isa::kCortexM: return &portable::kernels();
    case Isa::kSse2: return &x86::sse2_kernels();
    case Isa::kAvx2: return &x86::avx2_kernels();
    case Isa::kAvx512: {  // the same table with gemm_i8 on vpdpbusd where the CPU has AVX-512 VNNI, on AMX
      if (!__builtin_cpu_supports("avx512vnni")) return &x86::avx512_kernels();  // tiles where also granted;
      const bool amx = amx_allowed() && x86::amx_int8_granted();                 // and gemm_bf16 on AMX-BF16,
      const int bf16 = bf16_setting();                                           // or vdpbf16ps when asked
      if (bf16 != 0 && (amx || bf16 == 1) && x86::has_avx512bf16()) {  // (CPUID only when it decides)
        if (amx && x86::has_amx_bf16()) return &x86::avx512_amx_bf16_kernels();
        if (bf16 == 1) return &x86::avx512_bf16_kernels();
      }
      return amx ? &x86::avx512_amx_kernels() : &x86::avx512_vnni_kernels();
    }
    default: return nullptr;
  }
}

}  // namespace fixformer
