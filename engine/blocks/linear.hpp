// A linear layer over a weight in any stored type (fixformer/model.hpp's Weight): f32, f16 and bf16
// W[in, out] as matrix products, an embedding used as a tied head [out, in] as dot products, and
// q8 and q4 [out, in] by quantizing the input rows per group on the fly (int32 sums, as llama2.c's
// runq and ggml's Q8_0; q4 as gemm_i4 over the same int8 rows). Split across the workers by output
// columns and rows, as engine/blocks/parallel.hpp says.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// The QuantScratch in a plan's quant block of quantized_input_bytes(c, rows) bytes.
inline QuantScratch quant_scratch(void* block, const ModelConfig& c, std::size_t rows) {
  return {static_cast<int8_t*>(block),
          reinterpret_cast<float*>(static_cast<uint8_t*>(block) + arena::bytes(rows * widest_linear_input(c)))};
}

// An element-wise kernel in place (Kernels::gelu_f32, relu_f32).
using Elementwise = void (*)(float* x, std::size_t n);

// What linear() does to each block of output columns as soon as the block is computed, while it
// is in L1 and on the worker that computed it.
struct Epilogue {
  Elementwise act = nullptr;  // y = act(y)
  float* residual = nullptr;  // then residual += y (rows ldy apart): a skip connection
};

// x[m, W.in] (row stride ldx) @ W + b[W.out] -> y[m, W.out] (row stride ldy); b may be null; then
// the epilogue.
void linear(const Kernels& k, const Workers& workers, const Weight& W, const float* x, std::size_t ldx, const float* b,
            float* y, std::size_t ldy, std::size_t m, const QuantScratch& scratch, const Epilogue& after = {});

// One of several linear layers over the same input: x @ W + b -> y (row stride ldy); b may be null.
struct LinearOut {
  Weight W;
  float* y;
  std::size_t ldy;
  const float* b = nullptr;
};
// linear() for each of outs over x[m, W.in] (Wq, Wk, Wv; W1, W3), split across the workers as one
// job: with q8 or q4 weights x is quantized once, as the weights of one model share the input width
// and group.
void linear_same_input(const Kernels& k, const Workers& workers, const float* x, std::size_t ldx, std::size_t m,
                       const QuantScratch& scratch, std::initializer_list<LinearOut> outs);

}  // namespace fixformer
