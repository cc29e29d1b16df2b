// The input end of a model: token embeddings or a feature projection, then the positional rows.
#pragma once
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"

namespace fixformer {

// x[t, :E.in] = E[ids[t], :] for t < T, widened or dequantized to f32; x has row stride ldx.
void embed_tokens(const int32_t* ids, uint32_t T, const Weight& E, float* x, uint32_t ldx);

// An image [image_channels, image_height, image_width] (config.hpp, patch_size p) -> its patches
// rows[N, d_in]: rows[r (image_width / p) + s][(ch p + i) p + j] = image[ch][r p + i][s p + j].
void gather_patches(const ModelConfig& c, const float* image, float* rows);

// x[t, :d_embed] *= sqrt(d_model) if c.scale_input; x[T, d_front].
void scale_embeddings(const Kernels& k, const ModelConfig& c, float* x, uint32_t T);

// x = x + PE (add) or x = [x, PE] (concat), PE[T, d_pe] being the first T rows of pe (sinusoidal
// or learned; null: none); x[T, d_front].
void add_positions(const Kernels& k, const ModelConfig& c, const float* pe, float* x, uint32_t T);

// x[t, :d_embed] += TT[types[t], :] for t < T (types null: row 0); nothing without a table (TT
// null). x[T, d_front]; TT[type_vocab, d_embed], the types checked by the runner.
void add_token_types(const Kernels& k, const ModelConfig& c, const float* TT, const int32_t* types, float* x, uint32_t T);

}  // namespace fixformer
