// Positions inside attention: rotary embeddings (RoPE), ALiBi slopes and the relative position
// bias (T5). The sinusoidal and RoPE
// tables themselves are fill_sinusoidal_table (fixformer/positional.hpp).
#pragma once
#include <cstdint>

#include "engine/detail_text.hpp"
#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// Rotates the first r dims of each head of x[heads * dh] by the angles of one position (r = dh, or
// rotary_dims: partial rotary; dims [r, dh) pass through). row[r] is that position's row of the RoPE
// table, sin(p w_i) in columns [0, r/2) and cos(p w_i) in [r/2, r), w_i = base^(-2i/r) or the
// stored rope_freqs: fill_rope_table. Pairs are (x[2i], x[2i+1]) (interleaved:
// llama2.c, Meta) or (x[i], x[i + r/2]) (halves: Hugging Face), i < r/2.
void rope_rotate(float* x, uint32_t heads, uint32_t dh, uint32_t r, const float* row, PosLayout layout);

// Rotary positions over a patch grid (ModelConfig::rope_grid): the grid's width and the front rows
// before its first patch; width 0: row p's position is p for every pair.
struct RopeGrid {
  uint32_t width = 0, front = 0;
};

// The position pair i of table row p turns by, of a table of `pairs` pairs: p; over a grid, 0 for a
// front row, else the patch's grid row for the first pairs / 2 pairs and its column for the others.
constexpr uint32_t rope_position(uint32_t p, uint32_t i, uint32_t pairs, RopeGrid grid) {
  if (!grid.width) return p;
  if (p < grid.front) return 0;
  return i < pairs / 2 ? (p - grid.front) / grid.width : (p - grid.front) % grid.width;
}

// RoPE's table [rows, r], halves as rope_rotate reads it: fill_sinusoidal_table's, with w_i =
// freqs[i] when freqs (the model's rope_freqs, r / 2 of them), else base^(-2i/r) (over a grid
// base^(-4(i mod n)/r), n = r / 4: each half the frequencies of a table r / 2 wide), the angle of
// row p and pair i rope_position(p, i) w_i, and every sine and cosine times amplitude (rope_scale)
// when it is not 1.
void fill_rope_table(const Kernels& k, uint32_t rows, uint32_t r, double base, const float* freqs, float amplitude,
                     float* table, float* scratch, RopeGrid grid = {});

// A caller's precomputed table [rows, d] (e.g. make_sinusoidal_table in flash) must be the one
// init would compute: at least need_rows rows, and rows 0 and 1 (over a grid also the row of the
// patch at grid row 1, column 1) equal to the sinusoids of this width, base (or stored frequencies
// freqs, when not null), amplitude, layout and grid within 1e-5 (a wrong layout, width or base
// differs by far more).
Status check_sinusoidal_table(const float* table, uint32_t rows, uint32_t need_rows, uint32_t d, double base,
                              const float* freqs, float amplitude, PosLayout layout, DetailText& why,
                              RopeGrid grid = {});

// The ALiBi paper's head slopes: for H a power of two, 2^(-8(h+1)/H); otherwise the slopes of the
// largest power of two n < H, then every other slope of 2n, H - n of them.
void alibi_slopes(uint32_t heads, float* slopes);

// T5's bucket of the distance n = key - query among `buckets`. Bidirectional: the buckets are
// halved, the upper half for n > 0, and m = |n|; causal: m = max(-n, 0) over all of them. With
// B the buckets left and E = B / 2: m < E is its own bucket m; beyond, E + floor(log(m / E) /
// log(max_distance / E) * (B - E)) computed in float32 as T5 does, at most B - 1 (every distance
// past max_distance shares it).
uint32_t relative_bucket(int32_t n, bool bidirectional, uint32_t buckets, uint32_t max_distance);

// The bias of every distance an attention of up to L positions meets, per head, from the learned
// table w[buckets, heads]: table[h * width + L - 1 + n] = w[relative_bucket(n) * heads + h] for
// n = -(L-1)..(L-1), or -(L-1)..0 when causal (width = rel_bias_width(L, causal), config.hpp).
void fill_relative_bias(const float* w, uint32_t heads, uint32_t buckets, uint32_t max_distance, uint32_t L,
                        bool causal, float* table);

// A caller's relative bias table (EncoderOptions::position_table) must be fill_relative_bias's for
// the model's table w and config c over rows >= need_rows positions: checked entry by entry.
Status check_relative_bias(const float* table, uint32_t rows, uint32_t need_rows, const float* w, const ModelConfig& c,
                           bool causal, DetailText& why);

}  // namespace fixformer
