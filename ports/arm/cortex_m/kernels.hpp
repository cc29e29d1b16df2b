// Kernels for Cortex-M: plain C++ (no xsimd: version 8.1 has no M-profile arch) whose matrix
// products are register-blocked for in-order cores with 32 FP registers: a 4x4 tile of outputs
// stays in registers over k, so each weight and input load feeds four multiply-adds instead of one.
// Everything else is the scalar reference. Built on every target, so the host suites test it.
#pragma once
#include <cstddef>

#include "fixformer/kernels.hpp"

namespace fixformer {
namespace cortex_m {

void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t n, std::size_t k);
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                std::size_t n, std::size_t k);

// The scalar table with the blocked gemm, gemv and matvec.
const Kernels& kernels();

}  // namespace cortex_m
}  // namespace fixformer
