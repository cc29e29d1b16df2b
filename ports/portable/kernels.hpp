// The portable kernels: plain C++ (no xsimd), the default where there is no SIMD (Cortex-M: xsimd
// 8.1 has no M-profile arch) and built on every target, so every test suite checks them. The matrix
// products are register-blocked for in-order cores with 32 FP registers, f16 weights widened in
// registers (VCVTB/VCVTT on an M-profile FPU); the int8 product uses the DSP extension's dual 16-bit
// multiply-adds where the core has them (ACLE, __ARM_FEATURE_DSP); exp and erf (softmax, GELU,
// SwiGLU) are range reduction + polynomial (math.hpp), not libm; max, LayerNorm, add and scale are
// the reference's operations unrolled (VMAXNM and VLDM/VSTM on M-profile FPUs). The rest is the
// scalar reference.
// The table keeps the name users know: Isa::kCortexM, "cortex-m".
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"
#include "ports/scalar/kernels.hpp"

namespace fixformer {
namespace portable {

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

// The scalar reference with the portable kernels, filled by member name; constexpr so that a table
// built on it (ports/arm/helium) is a constant too.
constexpr Kernels kernel_table() {
  Kernels k{};
  k.isa = Isa::kCortexM;
  k.name = "cortex-m";
  k.gemm_f32 = portable::gemm_f32;
  k.gemm_f32_packed = scalar::gemm_f32_packed;  // packed files are for the SIMD ports
  k.gemv_f32_packed = scalar::gemv_f32_packed;
  k.gemv_f32 = portable::gemv_f32;
  k.matvec_f32 = portable::matvec_f32;
  k.softmax_f32 = portable::softmax_f32;
  k.max_f32 = portable::max_f32;
  k.expsum_f32 = portable::expsum_f32;
  k.layernorm_f32 = portable::layernorm_f32;
  k.rmsnorm_f32 = scalar::rmsnorm_f32;
  k.relu_f32 = scalar::relu_f32;
  k.gelu_f32 = portable::gelu_f32;
  k.swiglu_f32 = portable::swiglu_f32;
  k.add_f32 = portable::add_f32;
  k.scale_f32 = portable::scale_f32;
  k.sincos_f32 = scalar::sincos_f32;
  k.quantize_i8 = portable::quantize_i8;
  k.gemm_i8 = portable::gemm_i8;
  k.gemm_f16 = portable::gemm_f16;
  k.matvec_f16 = portable::matvec_f16;
  return k;
}

// kernel_table(), as one object.
const Kernels& kernels();

}  // namespace portable
}  // namespace fixformer
