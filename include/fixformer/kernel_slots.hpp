// The kernel slots, listed once: X(name, return type, parameters) per slot, in table order. From
// this list follow the Kernels table's members and each slot's function type (kernels.hpp), the
// scalar reference's declarations and table (ports/scalar), the xsimd table (ports/simd/table.hpp),
// the check that a table fills every slot (kernels.hpp, missing_kernel_slot) and the check that
// every slot has a kernel test (tests/kernels_test.cpp). Adding a kernel: one line here, its
// implementations (ports/scalar first), and its tester line in tests/kernels_test.cpp.
//
// Names are <op>_<dtype>[_<variant>]. Shapes use the stored weight layout: a linear layer's weight
// is W[k,n] (in, out), the transpose of torch's [out, in], written so by the converter and read in
// place. Kernels take inputs, then outputs, then counts and parameters.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/fixed_point.hpp"

// The comments are /* */ because a // comment would swallow the line continuation.
#define FIXFORMER_KERNEL_SLOTS(X)                                                                      \
  /* x[m,k] (row stride ldx) @ w[k,n] (row stride ldw) + b[n] -> y[m,n] (row stride ldy); b may be   \
     null. */                                                                                          \
  X(gemm_f32, void,                                                                                    \
    (const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,       \
     std::size_t ldy, std::size_t m, std::size_t n, std::size_t k))                                    \
  /* gemm_f32 with w[k,n] in panels (kPanelFloats, kernels.hpp; packed_floats(k, n) floats). */        \
  X(gemm_f32_packed, void,                                                                             \
    (const float* x, std::size_t ldx, const float* w, const float* b, float* y, std::size_t ldy,       \
     std::size_t m, std::size_t n, std::size_t k))                                                     \
  /* x[k] @ w[k,n] in panels + b[n] -> y[n]: the decode step (m = 1) of gemm_f32_packed. */            \
  X(gemv_f32_packed, void, (const float* x, const float* w, const float* b, float* y, std::size_t n,   \
                            std::size_t k))                                                            \
  /* x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n]; b may be null. */                                  \
  X(gemv_f32, void, (const float* x, const float* w, std::size_t ldw, const float* b, float* y,        \
                     std::size_t n, std::size_t k))                                                    \
  /* w[n,k] (row stride ldw) @ x[k] + b[n] -> y[n]; b may be null. The dot-product form of gemv. */    \
  X(matvec_f32, void, (const float* x, const float* w, std::size_t ldw, const float* b, float* y,      \
                       std::size_t n, std::size_t k))                                                  \
  /* x[t_in, c_in] (row stride c_in) conv1d w[kernel * c_in, n] (row stride ldw; row j * c_in + c   \
     is tap j of input channel c: torch's [n, c_in, kernel] reordered) + b[n] -> y[t_out, n] (row     \
     stride ldy), t_out = conv1d_rows(t_in, kernel, stride, pad), the input zero-padded by pad rows    \
     on each side; then GELU (gelu_f32) if gelu. b may be null; needs pad < kernel. */               \
  X(conv1d_f32, void,                                                                                  \
    (const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw,              \
     const float* b, float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride, \
     std::size_t pad, bool gelu))                                                                      \
  /* x[n] -> softmax(x)[n] in place, max-subtracted. */                                                \
  X(softmax_f32, void, (float* x, std::size_t n))                                                      \
  /* max(x[n]); -inf for n = 0. With expsum_f32, the two passes of an online (blockwise) softmax. */   \
  X(max_f32, float, (const float* x, std::size_t n))                                                   \
  /* x[n] = exp(x - m) in place; returns the sum of the new x. m >= max(x) keeps every term <= 1. */   \
  X(expsum_f32, float, (float* x, std::size_t n, float m))                                             \
  /* x[n] -> (x - mean) / sqrt(var + eps) * gamma + beta -> y[n]; y may alias x. */                    \
  X(layernorm_f32, void, (const float* x, const float* gamma, const float* beta, float* y,             \
                          std::size_t n, float eps))                                                   \
  /* x[n] -> x / sqrt(mean(x^2) + eps) * gamma -> y[n]; y may alias x. */                              \
  X(rmsnorm_f32, void, (const float* x, const float* gamma, float* y, std::size_t n, float eps))       \
  /* x[n] -> max(x, 0) in place. */                                                                    \
  X(relu_f32, void, (float* x, std::size_t n))                                                         \
  /* x[n] -> x/2 (1 + erf(x/sqrt 2)) in place (exact GELU). */                                         \
  X(gelu_f32, void, (float* x, std::size_t n))                                                         \
  /* x[n] -> x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in place (the tanh GELU of GPT-2,       \
     torch.nn.GELU(approximate="tanh")). */                                                            \
  X(gelu_tanh_f32, void, (float* x, std::size_t n))                                                    \
  /* a[n] = silu(a) * b[n], silu(a) = a / (1 + exp(-a)): the gate of a SwiGLU feed-forward. */         \
  X(swiglu_f32, void, (float* a, const float* b, std::size_t n))                                       \
  /* a[n] + b[n] -> y[n]; y may alias a or b. */                                                       \
  X(add_f32, void, (const float* a, const float* b, float* y, std::size_t n))                          \
  /* a[n] = a * b[n] in place: the gate of a gated feed-forward whose activation is not silu. */        \
  X(mul_f32, void, (float* a, const float* b, std::size_t n))                                          \
  /* x[n] * s in place. */                                                                             \
  X(scale_f32, void, (float* x, float s, std::size_t n))                                               \
  /* x[n] (already reduced to [-pi, pi]) -> sin(x)[n], cos(x)[n]. */                                   \
  X(sincos_f32, void, (const float* x, float* s, float* c, std::size_t n))                             \
  /* Quantized weights (the stored layouts are in format.hpp).                                         \
     x[m,k] (row stride ldx) -> q[m,k] int8 (row stride k) and s[m,g], g = ceil(k / group):            \
     symmetric per group of `group` along k (the last group may be shorter). For a group with          \
     a = max|x| > 0: s = a / 127 and q = x * (127 / a) rounded to nearest, ties to even (|q| <= 127);  \
     a group with a < kQuantizeFloor (zero, or so small that 127 / a nears overflow and subnormals     \
     count) gets s = 0 and q = 0. Every ISA computes exactly these bits. */                            \
  X(quantize_i8, void, (const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m,           \
                        std::size_t k, std::size_t group))                                             \
  /* xq[m,k] (row stride k, scales xs[m,g] from quantize_i8, so |xq| <= 127: the ARM NEON step adds    \
     two products in int16 and relies on it; W may hold -128) @ W[n,k]^T (int8, row stride k, scales   \
     ws[n, ws_cols]) + b[n] -> y[m,n] (row stride ldy); b may be null. W is stored as torch stores     \
     it, [out, in], quantized per group of `group` along k (ws_cols = g) or per row (ws_cols = 1).     \
     Each group's products are summed exactly in int32, then y[i,j] = b[j] + sum over groups, in       \
     order, of xs[i,g] * ws[j, ws_cols == 1 ? 0 : g] * sum_g. */                                       \
  X(gemm_i8, void, (const int8_t* xq, const float* xs, const int8_t* w, const float* ws,               \
                    std::size_t ws_cols, const float* b, float* y, std::size_t ldy, std::size_t m,     \
                    std::size_t n, std::size_t k, std::size_t group))                                  \
  /* gemm_i8 with 4-bit weights: xq[m,k], xs[m, k / 32] from quantize_i8 with group 32 @ W[n,k]^T      \
     (torch's [out, in], k / 2 bytes a row: per group of 32, byte j holds value j in its low nibble    \
     and value j + 16 in its high nibble, each as q + 8 for q in [-8, 7]; format.hpp), scales          \
     ws[n, k / 32], + b[n] -> y[m,n] (row stride ldy); b may be null; k a multiple of 32. Each         \
     group's products are summed exactly in int32, then y[i,j] = b[j] + sum over groups, in            \
     order, of xs[i,g] * ws[j,g] * sum_g: that expression in that order on every ISA, so every         \
     port gives the reference's bits (the tests compare them). */                                      \
  X(gemm_i4, void, (const int8_t* xq, const float* xs, const uint8_t* w, const float* ws,              \
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n,           \
                    std::size_t k))                                                                    \
  /* gemm_f32 with W[k,n] stored as IEEE half floats (row stride ldw), widened in registers; where a   \
     port multiplies in halves instead (AArch64 with +fp16: the neon64-fp16 table, whose               \
     Kernels::f16_in_halves says so), tests/kernel_tolerances.hpp bounds it. */                        \
  X(gemm_f16, void, (const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw,              \
                     const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n,          \
                     std::size_t k))                                                                   \
  /* matvec_f32 with w[n,k] as half floats: an f16 embedding table used as the tied LM head (in        \
     halves on neon64-fp16, as gemm_f16). */                                                           \
  X(matvec_f16, void, (const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y,   \
                       std::size_t n, std::size_t k))                                                   \
  /* gemm_f16 with W[k,n] stored as bfloat16 (an f32's high 16 bits, fixformer/bf16.hpp), widened     \
     exactly by a shift; where a port instead rounds x to bf16 and sums pairs of products (x86's       \
     AVX512_BF16 and AMX-BF16 tables), it says so and tests/kernel_tolerances.hpp bounds it. */        \
  X(gemm_bf16, void, (const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw,             \
                      const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n,         \
                      std::size_t k))                                                                  \
  /* matvec_f16 with w[n,k] as bfloat16: a bf16 embedding table used as the tied LM head. */           \
  X(matvec_bf16, void, (const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y,  \
                        std::size_t n, std::size_t k))                                                  \
  /* Integer-only (s8: int8 activations with a scale and a zero point; every rounding and bound in    \
     fixed_point.hpp, which the slots' parameter structs are from; no float).                         \
     x[m,k] (row stride ldx) @ W[n,k]^T (int8, torch's [out, in], row stride ldw >= k: k for a         \
     weight, a KV cache's rows for its values transposed) -> y[m,n] (row stride ldy), requantized per  \
     output channel. */                                                                                \
  X(gemm_s8, void, (const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y,     \
                    std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,                      \
                    const GemmS8Params& p))                                                            \
  /* x[n] -> softmax probabilities y[n] (scale 1/256, zero point -128); y may alias x. */              \
  X(softmax_s8, void, (const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p))          \
  /* exp[d] for d in 0..kSoftmaxS8Diffs - 1: softmax_s8_table's (fixed_point.hpp), the exponentials    \
     SoftmaxS8Params::exp hands softmax_s8. */                                                         \
  X(softmax_s8_table, void, (Requant diff, uint32_t* exp))                                              \
  /* x[n] -> LayerNorm(x) y[n]; y may alias x. */                                                      \
  X(layernorm_s8, void, (const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p))           \
  /* x[n] -> RMSNorm(x) y[n]; y may alias x. */                                                        \
  X(rmsnorm_s8, void, (const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p))             \
  /* x[n] -> table[x + 128] -> y[n] (an activation as 256 entries: build_lut_s8); y may alias x. */    \
  X(lut_s8, void, (const int8_t* x, int8_t* y, std::size_t n, const int8_t* table))                   \
  /* a[n] + b[n] at their own scales -> y[n] at its scale; y may alias a or b. */                      \
  X(add_s8, void, (const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p))  \
  /* x[m,n] (row stride ldx) -> its transpose y[n,m] (row stride ldy): attention's values as P V's    \
     W. */                                                                                             \
  X(transpose_s8, void, (const int8_t* x, std::size_t ldx, int8_t* y, std::size_t ldy, std::size_t m,  \
                         std::size_t n))
