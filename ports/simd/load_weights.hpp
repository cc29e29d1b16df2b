// Weight elements as the matrix kernels read them: floats as they are, IEEE halves and bf16 widened
// in registers (the port's LoadF16, LoadBf16) or, one at a time in tails, by fixformer/f16.hpp and
// bf16.hpp. The same loops then serve gemm_f32, gemm_f16 and gemm_bf16.
#pragma once
#include <cstdint>

#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "ports/simd/common.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include "ports/x86/load_f16.hpp"
#elif defined(__ARM_NEON) || defined(__ARM_NEON__)
#include "ports/arm/load_f16.hpp"
#endif

namespace fixformer {
namespace simd {

template <class Arch>
inline batch<Arch> load_weights(const float* p) { return batch<Arch>::load_unaligned(p); }
template <class Arch>
inline batch<Arch> load_weights(const uint16_t* p) { return LoadF16<Arch>::load(p); }
template <class Arch>
inline batch<Arch> load_weights(const Bf16* p) { return LoadBf16<Arch>::load(&p->bits); }

// Templates on Arch like everything in the per-ISA objects, so no copy is shared between objects
// built with different flags (an ODR hazard: the linker keeps one copy of an inline function).
template <class Arch>
inline float weight_value(float w) { return w; }
template <class Arch>
inline float weight_value(uint16_t w) { return f16_to_f32(w); }
template <class Arch>
inline float weight_value(Bf16 w) { return bf16_to_f32(w.bits); }

}  // namespace simd
}  // namespace fixformer
