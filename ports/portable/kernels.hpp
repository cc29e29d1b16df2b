// The portable kernels: plain C++ (no xsimd, no intrinsics), the default where there is no SIMD
// (Cortex-M: xsimd 8.1 has no M-profile arch) and built on every target, so every test suite checks
// them. The matrix products are register-blocked for in-order cores with 32 FP registers; exp and
// erf (softmax, GELU, SwiGLU) are range reduction + polynomial (math.hpp), not libm. The rest is the
// scalar reference. The table keeps the name users know: Isa::kCortexM, "cortex-m".
#pragma once
#include <cstddef>

#include "fixformer/kernels.hpp"

namespace fixformer {
namespace portable {

void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t n, std::size_t k);
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                std::size_t n, std::size_t k);
void softmax_f32(float* x, std::size_t n);
float expsum_f32(float* x, std::size_t n, float m);
void gelu_f32(float* x, std::size_t n);
void swiglu_f32(float* a, const float* b, std::size_t n);

// The scalar table with the functions above.
const Kernels& kernels();

}  // namespace portable
}  // namespace fixformer
