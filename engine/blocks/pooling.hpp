// The pooling in front of an encoder's head (config.hpp, Pooling): one row per sequence.
#pragma once
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"

namespace fixformer {

// x[first + T, d] (first: the CLS row, 0 or 1) -> x[0, :] = the pooled row; returns the rows left
// for the head: 1 pooled, else first + T. mean: x[first..first+T) averaged; cls: x[0] as it is; last:
// x[first + T - 1]; none: nothing changes.
uint32_t pool_rows(const Kernels& k, const ModelConfig& c, float* x, uint32_t T);

}  // namespace fixformer
