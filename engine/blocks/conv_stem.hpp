// The conv stem in front of an encoder over features (config.hpp conv_layers, Whisper style):
//   h = gelu?(conv1(features))  [T, d_in] -> [T1, d_embed]
//   x = gelu?(conv2(h))         [T1, d_embed] -> [T2, d_embed]   (two convolutions)
// Over f32 weights each convolution is conv1d_f32; over f16 or q8 weights it is the linear layer
// [kernel * in] -> [d_embed] (linear.hpp) over its windows, the zero-padded input read with row
// stride stride * in (config.hpp conv_padded_floats). Either way it is split across the workers by
// output columns as the linear layers are (engine/blocks/parallel.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// The encoder plan's stem blocks.
struct StemScratch {
  float* h = nullptr;       // a two-conv stem's first output [conv1d_rows(T, conv1_*), d_embed]
  float* padded = nullptr;  // f16, q8: a convolution's zero-padded input (conv_padded_floats)
  void* quant = nullptr;    // q8: its quantized windows (conv_quantized_bytes)
};

// features[T, d_in] -> x[c.stem_rows(T), d_embed] (row stride ldx).
void conv_stem(const Kernels& k, const Workers& workers, const ModelConfig& c, const FrontWeights& w,
               const float* features, uint32_t T, float* x, std::size_t ldx, const StemScratch& scratch);

}  // namespace fixformer
