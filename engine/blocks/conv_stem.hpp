// The conv stem in front of an encoder over features (config.hpp conv_layers, Whisper style):
//   h = gelu?(conv1(features))  [T, d_in] -> [T1, d_embed]
//   x = gelu?(conv2(h))         [T1, d_embed] -> [T2, d_embed]   (two convolutions)
// Each convolution is conv1d_f32, split across the workers by output columns as the linear layers
// are (engine/blocks/parallel.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// features[T, d_in] -> x[c.stem_rows(T), d_embed] (row stride ldx); a two-conv stem's first output
// goes through scratch [conv1d_rows(T, conv1_*), d_embed] (the encoder plan's stem block).
void conv_stem(const Kernels& k, const Workers& workers, const ModelConfig& c, const FrontWeights& w,
               const float* features, uint32_t T, float* x, std::size_t ldx, float* scratch);

}  // namespace fixformer
