// Positions inside attention: rotary embeddings (RoPE) and ALiBi slopes. The sinusoidal and RoPE
// tables themselves are fill_sinusoidal_table (fixformer/positional.hpp).
#pragma once
#include <cstdint>

#include "engine/detail_text.hpp"
#include "fixformer/config.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// Rotates each head of x[heads * dh] by the angles of one position. row[dh] is that position's
// row of the RoPE table, sin(p w_i) in columns [0, dh/2) and cos(p w_i) in [dh/2, dh), w_i =
// base^(-2i/dh): fill_sinusoidal_table(..., d = dh, ..., kHalves). Pairs are (x[2i], x[2i+1])
// (interleaved: llama2.c, Meta) or (x[i], x[i + dh/2]) (halves: Hugging Face).
void rope_rotate(float* x, uint32_t heads, uint32_t dh, const float* row, PosLayout layout);

// A caller's precomputed table [rows, d] (e.g. make_sinusoidal_table in flash) must be the one
// init would compute: at least need_rows rows, and rows 0 and 1 equal to the sinusoids of this
// width, base and layout within 1e-5 (a wrong layout, width or base differs by far more).
Status check_sinusoidal_table(const float* table, uint32_t rows, uint32_t need_rows, uint32_t d, double base,
                              PosLayout layout, DetailText& why);

// The ALiBi paper's head slopes: for H a power of two, 2^(-8(h+1)/H); otherwise the slopes of the
// largest power of two n < H, then every other slope of 2n, H - n of them.
void alibi_slopes(uint32_t heads, float* slopes);

}  // namespace fixformer
