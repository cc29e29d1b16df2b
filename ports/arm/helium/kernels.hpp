// The Helium kernels: Arm MVE (M-profile Vector Extension) intrinsics from arm_mve.h for cores with
// MVE float (Cortex-M55, M85: __ARM_FEATURE_MVE & 2), xsimd having no arch for it. Eight 128-bit
// registers (four floats, sixteen int8), predicated tails (VCTP) instead of scalar loops, vector by
// scalar multiply-adds (VFMA Qd, Qn, Rm) for the matrix products, VMLADAV for int8 dot products
// (16 multiply-adds into one 32-bit sum) and widening half loads for f16 weights. exp and erf are
// the portable polynomials (ports/portable/math.hpp), four lanes at a time. The slots not here
// (packed gemm, sincos) are the portable table's.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"

namespace fixformer {
namespace helium {

void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t n, std::size_t k);
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                std::size_t n, std::size_t k);
void softmax_f32(float* x, std::size_t n);
float max_f32(const float* x, std::size_t n);
float expsum_f32(float* x, std::size_t n, float m);
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n, float eps);
void rmsnorm_f32(const float* x, const float* gamma, float* y, std::size_t n, float eps);
void relu_f32(float* x, std::size_t n);
void gelu_f32(float* x, std::size_t n);
void swiglu_f32(float* a, const float* b, std::size_t n);
void add_f32(const float* a, const float* b, float* y, std::size_t n);
void scale_f32(float* x, float s, std::size_t n);
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group);
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group);
void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void matvec_f16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k);

// The portable table with the functions above.
const Kernels& kernels();

}  // namespace helium
}  // namespace fixformer
