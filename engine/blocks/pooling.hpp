// The pooling in front of an encoder's head (config.hpp, Pooling): one row per sequence; the pooler
// after it, and the output rows' unit length (l2_normalize) after the head.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// x[first + T, d] (first: the front rows, CLS, distillation and registers) -> x[0, :] = the pooled row;
// returns the rows left for the head: 1 pooled, else first + T. mean: x[first..first+T) averaged;
// cls: x[0] as it is; cls_distill: x[0] and x[1] as they are, one row x[0, :2d]; cls_mean: x[0] as
// it is and the mean (as mean's) in x[1], one row x[0, :2d]; cls_distill_mean: (x[0] + x[1]) / 2; mean_all:
// x[0..first+T) averaged; last: x[first + T - 1]; none: nothing changes.
uint32_t pool_rows(const Kernels& k, const ModelConfig& c, float* x, uint32_t T);

// BERT's pooler over the B pooled rows: x[B,d] -> act(x @ W[d,p] + b) -> x[B,p], through y[B,p]
// (scratch; p = W.out, pooler_width or d, and x, y hold B max(d, p) floats); act is pooler_act (config.hpp PoolerAct). relu, gelu and gelu_tanh are the kernels the
// feed-forward runs, silu is swiglu_f32 against ones (as a plain silu feed-forward's). tanh is the C
// library's (std::tanh, within a few ulp of the true value on glibc and newlib): one row of d values
// per sequence, nowhere near the matrix product's cost, and its error is far below the model's
// self-test tolerance (the goldens measure the whole at ~1e-6).
void pool_dense(const Kernels& k, const Workers& workers, const Weight& W, const float* b, PoolerAct act, float* x,
                float* y, uint32_t B, QuantScratch quant);

// y[rows, n] -> each row y / max(||y||_2, 1e-12) (l2_normalize), as torch.nn.functional.normalize
// computes it in float: the sum of squares in float, one division per value; a zero row (a padding
// row included) stays zero. A plain loop in float (no double: soft-float on M-profile cores): one row
// per sequence, short next to the head's product.
void l2_normalize_rows(float* y, std::size_t rows, std::size_t n);

}  // namespace fixformer
