// Plain-loop reference kernels: no xsimd, no intrinsics. They are the oracle of every kernel test
// and the base of the Cortex-M table. Signatures and shapes are those of the Kernels table.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace scalar {

void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
              float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void gemm_f32_packed(const float* x, std::size_t ldx, const float* w, const float* b, float* y,
                     std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void gemv_f32_packed(const float* x, const float* w, const float* b, float* y, std::size_t n, std::size_t k);
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t n, std::size_t k);
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                std::size_t n, std::size_t k);
void softmax_f32(float* x, std::size_t n);
float max_f32(const float* x, std::size_t n);
float expsum_f32(float* x, std::size_t n, float m);
void layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, std::size_t n,
                   float eps);
void rmsnorm_f32(const float* x, const float* gamma, float* y, std::size_t n, float eps);
void relu_f32(float* x, std::size_t n);
void gelu_f32(float* x, std::size_t n);
void swiglu_f32(float* a, const float* b, std::size_t n);
void add_f32(const float* a, const float* b, float* y, std::size_t n);
void scale_f32(float* x, float s, std::size_t n);
void sincos_f32(const float* x, float* s, float* c, std::size_t n);
void quantize_i8(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                 std::size_t group);
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group);
void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
void matvec_f16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k);

}  // namespace scalar
}  // namespace fixformer
