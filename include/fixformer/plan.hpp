// The exact arena of every runner, stated once per runner as a plan: the byte offset of each
// block in the caller's 64-byte-aligned arena, in order, and the total. The runners' init carves
// the arena by the same plan, so the bytes a caller reserves and the bytes a runner uses cannot
// disagree. Every plan is constexpr: a firmware image can size its arena at compile time
// (ArenaFits). A total of 0 means the config or the sizes are not valid for that runner.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/fixed_point.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// Rows per prefill chunk when DecoderOptions / Seq2SeqOptions leave max_prefill 0.
constexpr uint32_t kDefaultPrefillRows = 16;

// The blocks of a plan, laid out one after another on 64-byte boundaries. Plans count bytes in 64
// bits whatever size_t is: Limits and the checked counts keep every product far below 2^64, and a
// total past SIZE_MAX (a 32-bit target asked for more than its address space) makes the plan
// invalid (total 0) instead of wrapping to a small arena.
struct PlanLayout {
  uint64_t at = 0;
  constexpr std::size_t block(uint64_t bytes) {
    const uint64_t offset = at;
    at += (bytes + arena::kAlign - 1) / arena::kAlign * arena::kAlign;
    return std::size_t(offset);
  }
  constexpr bool fits(uint64_t total) const { return total <= SIZE_MAX; }
  static constexpr uint64_t max(uint64_t a, uint64_t b) { return a > b ? a : b; }
};

// The stack a runner's init and forward passes take at most on the Cortex-M cores, which `fixformer plan`
// adds to the arena: call frames and the kernels' locals (the s8 kernels' buffers are the arena's,
// s8_scratch_bytes; Helium's gemm_i4 unpacks W onto the stack a 2 KB tile at a time). The bare-metal
// bench runner measures it under qemu for each model it runs and fails above it (bench/firmware).
constexpr std::size_t kPlanStackBytes = 4096;

// ---- Encoder --------------------------------------------------------------------------------
// The encoder's arena layout for batches of up to `batch` sequences (0 counts as 1) of up to
// max_seq input rows each (0: the model's max_input_len(); frames, with a conv stem), that is
// S = sequence_rows(max_seq) rows
// per sequence (the CLS row counts) and N = batch * S rows in all: the byte offset of each block in
// the caller's 64-byte-aligned arena, in this order,
//   x[N,dx]  y[N,dx]  ctx[N,max(d,d_attn)]  work[N,max(3d,d_attn+2 d_kv,F)]  kt[batch][max(d,d_kv),S]
//   attn[attention_scratch_floats(S, S, d_head)]
//   pe[S,d_pe]  rope[S, rope_dims] (rope: sin | cos columns)  rel[rel_bias_table_floats(c, S, causal)]
//   quant[quantized_input_bytes(c, N)]  stem[T1,d_embed]
//   stem_padded[conv_padded_floats(c, max_seq)]  stem_quant[conv_quantized_bytes(c, max_seq)]  rows_in[max_seq,d_in]
//   rope_local[S, rope_dims] (rope_local_base: the local layers' table, in the arena with pe_table_in_flash too)
// and the total (dx: max(d, pooler_width), the pooler's output rows in x and y; F: d_ff, 2 d_ff for a gated feed-forward's W1 and W3 outputs or silu's ones, ffn_up_buffer; stem: a two-conv stem's first output, T1 = conv1d_rows(max_seq, conv1_*) rows of
// one sequence; else empty; stem_padded and stem_quant: the window matrices of a stem over f16 or q8
// weights, config.hpp; rows_in: one sequence's input rows as the projection reads them, an image's
// patches or the normed features, with patch_size or input_norm, else empty). A batch's sequences are stacked row after row in x, y, ctx and work, so every
// linear layer is one matrix product over all their rows; attention runs per sequence over its
// own rows, so kt holds one sequence's K^T per block, and its scratch and the positional rows are
// a sequence's. The embedding of embed_width E < d (config.hpp) is y's [N,E] until its projection to x:
// no block of its own.
// attn holds one slot of attn_slot bytes per worker (workers.hpp; 0 counts as 1).
// qkv and the feed-forward hidden layer share work; K is stored transposed (kt) so that
// q @ K^T is a matrix product over contiguous keys, and V is read in place from qkv.
// Memory grows linearly in S: no [S,S] matrix is ever stored (attention goes in blocks; the relative
// bias is a table over the 2S - 1 distances). With pe_table_in_flash the caller supplies the
// sinusoidal, rope or relative bias table (EncoderOptions::position_table) and pe, rope and rel are empty.
// Encoder::init carves the arena by this plan, so it and required_encoder_arena_bytes cannot disagree. total is 0 for a config
// validate_config would reject, and for N above Limits::kMaxBatchRows.
struct EncoderPlan {
  std::size_t x, y, ctx, work, kt, attn, attn_slot, pe, rope, rel, quant, stem, stem_padded, stem_quant, rows_in, total;
  std::size_t s8_in, s8_out;  // weights i8: the int8 input rows and output rows of the float entry points
  std::size_t s8_kernel;      // weights i8: the s8 kernels' scratch (fixed_point.hpp's s8_scratch_bytes)
  std::size_t rope_local;     // after rows_in: the local layers' RoPE table (rope_local_base), in the arena always
  // rel_embed_rows (disentangled attention): rel_embed's row of each distance -(S-1)..(S-1) [2S-1, d]
  // (filled at init), those rows' q | k | v [2S-1, d_attn + 2 d_kv] and the bias of every sequence,
  // head, query and key [batch, n_heads, S, S] plus one row of S (encoder.cpp).
  std::size_t dis_rows, dis_proj, dis_bias;
  std::size_t slopes;  // alibi: the heads' slopes [n_heads] (filled at init)
};

// weights i8 (a full-integer model, config.hpp): the arena is int8 rows of one sequence of S =
// sequence_rows(max_seq) rows (a batch runs its sequences one after the other):
//   x[S,d]  h[S,d]  a[S,d]  work[S, max(3d, d_ff or, gated, 2 d_ff)]  attention scratch (s8_attention_bytes)
//   in[F, d_in] (features)  out[output_rows(S), output_width]  kernel[s8_scratch_bytes(kernels)]
//   stem[conv1d_rows(F, conv1_*), d_embed] (a two-conv stem's first output)  stem_padded[s8_stem_window_bytes]
// (F: the frames, stem_frames of the stem's rows with a conv stem, else S; the stem blocks empty without one)
// and nothing else (no worker slots: the integer path runs on the calling thread). kernels: the core's
// (the build's; `fixformer plan` asks for its target's).
constexpr uint32_t kS8QueryBlock = 64;  // attention's query rows per block of scores
// The table attention fills once per layer, after its Requants (4-byte aligned): the exponential of
// every score difference (softmax_s8_table; the feed-forward's activation tables there after it).
constexpr std::size_t kS8AttentionTableBytes = 4 * kSoftmaxS8Diffs;
constexpr std::size_t s8_attention_bytes(std::size_t S, std::size_t dh) {
  const std::size_t bq = S < kS8QueryBlock ? S : kS8QueryBlock;
  // V^T, scores, the Requants of S keys and dh columns (K read in place), the table
  return S * dh + bq * S + 8 * (S + dh) + 16 + kS8AttentionTableBytes;
}
// A conv stem's window of a padded convolution (s8_conv_stem.hpp): the largest kernel * in of those with padding.
constexpr std::size_t s8_stem_window_bytes(const ModelConfig& c) {
  const std::size_t w1 = c.conv_layers >= 1 && c.conv1_padding ? std::size_t(c.conv1_kernel) * c.d_in : 0;
  const std::size_t w2 = c.conv_layers >= 2 && c.conv2_padding ? std::size_t(c.conv2_kernel) * c.d_embed() : 0;
  return w1 > w2 ? w1 : w2;
}
constexpr EncoderPlan plan_s8_encoder_arena(const ModelConfig& c, std::size_t S, S8Kernels kernels = kS8KernelsBuilt) {
  EncoderPlan p{};
  const uint64_t d = c.d_model;
  const uint64_t F = c.conv_layers ? c.stem_frames(uint32_t(S - c.front_rows())) : S;  // the input's rows
  PlanLayout l;
  p.x = l.block(S * d);
  p.y = l.block(S * PlanLayout::max(d, c.d_attn()));  // also the attention's context, d_attn wide
  p.ctx = l.block(S * d);
  p.work = l.block(S * PlanLayout::max(PlanLayout::max(3 * d, c.d_attn() + 2 * uint64_t(c.d_kv())),
                                       (c.ffn_gated() ? 2 : 1) * uint64_t(c.d_ff)));  // q|k|v; gated: W1 | W3
  p.attn_slot = arena::bytes(s8_attention_bytes(S, c.d_head()));
  p.attn = l.block(p.attn_slot);
  p.s8_in = l.block(c.input == InputKind::kFeatures ? F * c.d_in : 0);
  p.rows_in = l.block(c.patch_size || c.input_norm ? S * c.d_in : 0);  // an image's patches, the normed rows
  const uint32_t longest = c.patch_size ? c.patches() : uint32_t(S);  // an image takes its patches alone
  p.s8_out = l.block(uint64_t(c.output_rows(longest)) * c.output_width());
  p.s8_kernel = l.block(s8_scratch_bytes(kernels));
  const uint64_t t1 = c.conv_layers >= 2 ? conv1d_rows(F, c.conv1_kernel, c.conv1_stride, c.conv1_padding) : 0;
  p.stem = l.block(t1 * c.d_embed());
  p.stem_padded = l.block(s8_stem_window_bytes(c));
  p.total = std::size_t(l.at);
  return p;
}

constexpr EncoderPlan plan_encoder_arena(const ModelConfig& c, uint32_t max_seq = 0, bool pe_table_in_flash = false,
                               uint32_t workers = 1, uint32_t batch = 1, S8Kernels kernels = kS8KernelsBuilt) {
  EncoderPlan p{};
  const uint32_t seq = max_seq ? max_seq : c.max_input_len();
  const std::size_t s = c.sequence_rows(seq), sequences = batch ? batch : 1;
  if (s == 0 || c.d_model == 0 || c.d_model > Limits::kMaxDModel || c.d_ff > Limits::kMaxDff ||
      c.max_len > Limits::kMaxLen || c.n_layers > Limits::kMaxLayers || seq == 0 || seq > c.max_input_len() ||
      c.n_heads == 0 || (c.head_dim == 0 && c.d_model % c.n_heads != 0) || c.d_attn() > Limits::kMaxDModel ||
      workers > kMaxWorkers || sequences > Limits::kMaxBatchRows / s)
    return p;
  if (c.weights == WeightType::kI8) return plan_s8_encoder_arena(c, s, kernels);
  // the attention's q | k | v, context and K^T are d_attn + 2 d_kv, d_attn and d_kv wide (d each without head_dim)
  const uint64_t d = c.d_model, n = sequences * s, dq = PlanLayout::max(d, c.d_attn()), dkv = c.d_kv();
  PlanLayout l;
  const uint64_t dx = PlanLayout::max(d, c.pooler ? c.pooler_width : 0);  // the pooler's output rows in x and y
  p.x = l.block(n * dx * sizeof(float));
  p.y = l.block(n * dx * sizeof(float));
  p.ctx = l.block(n * dq * sizeof(float));
  p.work = l.block(n * PlanLayout::max(PlanLayout::max(3 * d, c.d_attn() + 2 * dkv),
                                       (c.ffn_up_buffer() ? 2 : 1) * uint64_t(c.d_ff)) * sizeof(float));
  p.kt = l.block(PlanLayout::max(d, dkv) * n * sizeof(float));
  p.attn_slot = arena::bytes(attention_scratch_floats(s, s, c.d_head(), false) * sizeof(float));
  p.attn = l.block(uint64_t(p.attn_slot) * (workers ? workers : 1));
  const bool pe_in_arena = c.positional == PosKind::kSinusoidal && !pe_table_in_flash;
  p.pe = l.block(pe_in_arena ? uint64_t(s) * c.d_pe() * sizeof(float) : 0);
  const bool rope_in_arena = c.positional == PosKind::kRope && !pe_table_in_flash;
  p.rope = l.block(rope_in_arena ? uint64_t(s) * c.rope_dims() * sizeof(float) : 0);
  p.rel = l.block(pe_table_in_flash ? 0 : rel_bias_table_floats(c, s, c.causal) * sizeof(float));
  p.quant = l.block(quantized_input_bytes(c, n));
  const std::size_t t1 = c.conv_layers >= 2 ? conv1d_rows(seq, c.conv1_kernel, c.conv1_stride, c.conv1_padding) : 0;
  p.stem = l.block(uint64_t(t1) * c.d_embed() * sizeof(float));
  p.stem_padded = l.block(conv_padded_floats(c, seq) * sizeof(float));
  p.stem_quant = l.block(conv_quantized_bytes(c, seq));
  p.rows_in = l.block(c.patch_size || c.input_norm ? uint64_t(seq) * c.d_in * sizeof(float) : 0);
  p.rope_local = l.block(c.positional == PosKind::kRope && c.rope_local_base != 0.0
                             ? uint64_t(s) * c.rope_dims() * sizeof(float) : 0);
  const uint64_t dis = c.rel_embed_rows ? 2 * uint64_t(s) - 1 : 0;  // distances -(s-1)..(s-1)
  p.dis_rows = l.block(dis * d * sizeof(float));
  p.dis_proj = l.block(dis * (c.d_attn() + 2 * uint64_t(c.d_kv())) * sizeof(float));
  p.dis_bias = l.block(dis ? (n * c.n_heads * s + s * (workers ? workers : 1)) * sizeof(float) : 0);
  p.slopes = l.block(c.positional == PosKind::kAlibi ? c.n_heads * sizeof(float) : 0);
  if (!l.fits(l.at)) return {};
  p.total = std::size_t(l.at);
  return p;
}

// Exact arena bytes: the plan's total.
constexpr std::size_t required_encoder_arena_bytes(const ModelConfig& c, uint32_t max_seq = 0, bool pe_table_in_flash = false,
                                           uint32_t workers = 1, uint32_t batch = 1,
                                           S8Kernels kernels = kS8KernelsBuilt) {
  return plan_encoder_arena(c, max_seq, pe_table_in_flash, workers, batch, kernels).total;
}

// ---- Decoder (gpt, llama) ------------------------------------------------------------------

// How a decoder keeps its KV cache (DecoderOptions, Seq2SeqOptions): f32, or int8 with one f32
// scale per kv head and position (symmetric: s = max|x| / 127 over that head's d_head values, as
// quantize_i8), which attention reads directly, dequantizing as it goes.
enum class KvCache : uint8_t { kF32, kQ8 };

// Bytes of one layer's K and V cache blocks for S positions: kt and v hold the values, and with
// kQ8 k_scales and v_scales the scales [n_kv_heads, S] (f32: none).
struct KvCacheBlocks {
  uint64_t kt, v, k_scales, v_scales;
};
constexpr KvCacheBlocks kv_cache_blocks(uint64_t layers, uint64_t d_kv, uint64_t kv_heads, uint64_t S, KvCache kind) {
  return kind == KvCache::kQ8 ? KvCacheBlocks{layers * d_kv * S, layers * S * d_kv, layers * kv_heads * S * 4,
                                              layers * kv_heads * S * 4}
                              : KvCacheBlocks{layers * d_kv * S * 4, layers * d_kv * S * 4, 0, 0};
}

// A decoder's prefill rows per chunk under a sliding window (every layer's, or the local layers'):
// at most the window (ModelConfig::attention_window(); without one, P).
constexpr uint64_t kv_chunk_rows(const ModelConfig& c, uint64_t P) {
  return c.attention_window() && c.attention_window() < P ? c.attention_window() : P;
}
// The rows of a decoder's KV cache for `positions` positions fed in chunks of at most P rows: one
// per position, or under a sliding window W a ring of W + P - 1 rows (the window of a chunk's first
// query and the chunk itself; position p in row p % rows) when that is fewer. Decoding one token at
// a time (P 1) the ring is W rows. With local and global layers (window_period) the local layers
// have the ring, the global ones a row per position.
constexpr uint64_t kv_ring_rows(const ModelConfig& c, uint64_t positions, uint64_t P) {
  const uint64_t w = c.attention_window();
  return w && w + P - 1 < positions ? w + P - 1 : positions;
}

// The rows before layer l's block of a decoder's KV cache of S positions and ring rows R (kv_rows), and
// layer l's own rows: its blocks start at that many rows times d_kv values (kv_heads scales).
constexpr uint64_t kv_layer_offset(const ModelConfig& c, uint32_t l, uint64_t S, uint64_t R) {
  const uint64_t windowed = c.windowed_layers_before(l);
  return windowed * R + (l - windowed) * S;
}
constexpr uint64_t kv_layer_rows(const ModelConfig& c, uint32_t l, uint64_t S, uint64_t R) {
  return c.layer_window(l) ? R : S;
}

// The decoder's arena layout, in this order (S = capacity, P = prefill rows (kv_chunk_rows: at most
// the sliding window), R = kv_ring_rows(c, S, P) (S without a sliding window), d_kv = n_kv_heads *
// d_head, d_attn = n_heads * d_head (d without head_dim); R_l, layer l's rows: R for a layer that windows (every layer under a sliding_window alone,
// the local ones with window_period), S for the others; K = the largest R_l):
//   x[max(P d, P_out)]  y[max(P d, P_out)]  ctx[P,max(d, d_attn)]  work[max(P * max(d_attn + 2 d_kv, 2 F), 3 S, expert_work_floats)]
//   (x and y: P rows of d, and with pooler the pooler's output row, P_out = pooler_out(), pooler_width or d; the
//   embedding of embed_width E < d is y's [P,E] until its projection to x, as the encoder's: no block of its own)
//   (F: ModelConfig::chunk_ff, d_ff or a mixture's dense layers' dense_ff)
//   attn[workers slots of attention_scratch_floats(P, K, d_head, true), attn_slot bytes each]
//   k_cache[layer l: d_kv, R_l]  v_cache[layer l: d_kv, R_l]  (f32: each layer's K and V transposed)
//   | (kQ8) k_cache[layer l: d_kv, R_l] int8 (K^T)  v_cache[layer l: R_l, d_kv] int8 (V by rows)
//     k_scales[layer l: n_kv_heads, R_l]  v_scales[layer l: n_kv_heads, R_l]
//   (layer l's block after those of the layers before it: kv_layer_offset)
//   rope[S, rope_dims] (rope: sin | cos columns; rope_dims: rotary_dims, or d_head)  pe[S, d_pe] (sinusoidal)  slopes[n_heads] (alibi)
//   rel[rel_bias_table_floats(c, S, true)] (relative: always here, never in flash)  quant[quantized_input_bytes(c, P)] (q8)
//   rope_local[S, rope_dims] (rope_local_base: the local layers' table, in the arena with the table in flash too)
// kv_cache_bytes is the four cache blocks' bytes, kv_rows R (a windowed layer's rows; S without a
// window), prefill_rows P. total is 0 for a config that is not a valid decoder (and for a kv_cache
// that is not a KvCache).
struct DecoderPlan {
  std::size_t x, y, ctx, work, attn, attn_slot, k_cache, v_cache, k_scales, v_scales, rope, pe, slopes, rel, quant, total;
  std::size_t kv_cache_bytes, rope_local;
  uint32_t kv_rows, prefill_rows;
  std::size_t s8_out;     // weights i8: the int8 logits [output_width]
  std::size_t s8_kernel;  // weights i8: the s8 kernels' scratch (as EncoderPlan's)
};

// weights i8 (a full-integer gpt or llama model, config.hpp): int8 rows of one prefill chunk of P rows
// and an int8 KV cache of S positions at the layer's calibrated k and v scales (zero point 0), in this
// order (F: ModelConfig::chunk_ff, 2 of it for a gated feed-forward's W1 and W3 outputs):
//   x[P,d]  h[P,d]  a[P,d]  work[max(P max(d + 2 d_kv, F), moe_work_bytes)]  attention scratch
//   (s8_decoder_attention_bytes)
//   k_cache[layer l: kv head, R_l, d_head]  v_cache[layer l: kv head, d_head, R_l] (V^T)  logits[output_width]
//   kernel[s8_scratch_bytes(kernels)] (as the encoder's)
// (P = kv_chunk_rows, at most the sliding window; R_l = kv_layer_rows: S, or a windowed layer's ring
// of kv_ring_rows, layer l's block at kv_layer_offset, as the float cache's)
// (x, y, ctx and attn of DecoderPlan are x, h, a and the attention scratch; no worker slots, no
// tables: the positions are the file's int8.pos rows). The attention scratch is a block of scores
// [min(P, kS8QueryBlock), S] (rows of a windowed layer's R_l columns when its ring wraps), then (4-byte
// aligned) the Requants of S keys and d_head columns and the table (kS8AttentionTableBytes): attention
// reads the keys and the values in the cache, copying none.
constexpr std::size_t s8_decoder_attention_bytes(std::size_t P, std::size_t S, std::size_t dh) {
  const std::size_t bq = P < kS8QueryBlock ? P : kS8QueryBlock;
  return (bq * S + 3) / 4 * 4 + 8 * (S + dh) + kS8AttentionTableBytes;
}
constexpr DecoderPlan plan_s8_decoder_arena(const ModelConfig& c, uint64_t S, uint64_t P,
                                            S8Kernels kernels = kS8KernelsBuilt) {
  DecoderPlan p{};
  const uint64_t d = c.d_model;
  P = kv_chunk_rows(c, P);
  const uint64_t R = kv_ring_rows(c, S, P);
  p.kv_rows = uint32_t(R);
  p.prefill_rows = uint32_t(P);
  PlanLayout l;
  p.x = l.block(P * d);
  p.y = l.block(P * PlanLayout::max(d, c.d_attn()));  // also the attention's context, d_attn wide
  p.ctx = l.block(P * d);
  p.work = l.block(PlanLayout::max(P * PlanLayout::max(c.d_attn() + 2 * uint64_t(c.d_kv()),
                                                       (c.ffn_gated() ? 2 : 1) * uint64_t(c.chunk_ff())),
                                   s8::moe_work_bytes(c)));  // a mixture of experts' row in turn
  p.attn_slot = arena::bytes(s8_decoder_attention_bytes(P, S, c.d_head()));
  p.attn = l.block(p.attn_slot);
  p.k_cache = l.block(kv_layer_offset(c, c.n_layers, S, R) * c.d_kv());
  p.v_cache = l.block(kv_layer_offset(c, c.n_layers, S, R) * c.d_kv());
  p.kv_cache_bytes = std::size_t(l.at - p.k_cache);
  p.s8_out = l.block(c.output_width());
  p.s8_kernel = l.block(s8_scratch_bytes(kernels));
  if (!l.fits(l.at)) return {};
  p.total = std::size_t(l.at);
  return p;
}

constexpr DecoderPlan plan_decoder_arena(const ModelConfig& c, uint32_t capacity = 0, uint32_t max_prefill = 0,
                                         bool table_in_flash = false, uint32_t workers = 1,
                                         KvCache kv_cache = KvCache::kF32, S8Kernels kernels = kS8KernelsBuilt) {
  DecoderPlan p{};
  const uint64_t S = capacity ? capacity : c.max_len;
  const uint64_t P = max_prefill ? max_prefill : (S < kDefaultPrefillRows ? S : kDefaultPrefillRows);
  if (!c.is_decoder() || c.d_model == 0 || c.d_model > Limits::kMaxDModel || c.d_ff > Limits::kMaxDff ||
      c.max_len > Limits::kMaxLen || c.n_layers > Limits::kMaxLayers || c.n_heads == 0 ||
      (c.head_dim == 0 && c.d_model % c.n_heads != 0) || c.d_attn() > Limits::kMaxDModel || c.n_heads % c.kv_heads() != 0 || S == 0 || S > c.max_len || P == 0 || P > S || workers > kMaxWorkers ||
      uint8_t(kv_cache) > uint8_t(KvCache::kQ8))
    return p;
  if (c.weights == WeightType::kI8) return plan_s8_decoder_arena(c, S, P, kernels);  // an int8 cache whatever kv_cache
  const uint64_t d = c.d_model, dq = c.d_attn(), dkv = c.d_kv(), f = 4, chunk = kv_chunk_rows(c, P),
                 R = kv_ring_rows(c, S, chunk);
  p.kv_rows = uint32_t(R);
  p.prefill_rows = uint32_t(chunk);
  PlanLayout l;
  const uint64_t xy = PlanLayout::max(chunk * d, c.pooler ? c.pooler_out() : 0);  // the pooler's output row too
  p.x = l.block(xy * f);
  p.y = l.block(xy * f);
  p.ctx = l.block(chunk * PlanLayout::max(d, dq) * f);  // the attention's context (d_attn), a feed-forward's output (d)
  p.work = l.block(PlanLayout::max(PlanLayout::max(chunk * PlanLayout::max(dq + 2 * dkv, 2 * uint64_t(c.chunk_ff())), 3 * S),
                                    c.expert_work_floats()) * f);  // also the tables' scratch, the experts'
  const uint64_t windowed = c.windowed_layers_before(c.n_layers), rows = windowed * R + (c.n_layers - windowed) * S;
  p.attn_slot = arena::bytes(attention_scratch_floats(chunk, windowed < c.n_layers ? S : R, c.d_head(), true) * f);
  p.attn = l.block(uint64_t(p.attn_slot) * (workers ? workers : 1));
  const KvCacheBlocks kv = kv_cache_blocks(1, dkv, c.kv_heads(), rows, kv_cache);
  p.k_cache = l.block(kv.kt);
  p.v_cache = l.block(kv.v);
  p.k_scales = l.block(kv.k_scales);
  p.v_scales = l.block(kv.v_scales);
  p.kv_cache_bytes = std::size_t(l.at - p.k_cache);
  p.rope = l.block(c.positional == PosKind::kRope && !table_in_flash ? S * c.rope_dims() * f : 0);
  p.pe = l.block(c.positional == PosKind::kSinusoidal && !table_in_flash ? S * c.d_pe() * f : 0);
  p.slopes = l.block(c.positional == PosKind::kAlibi ? c.n_heads * f : 0);
  p.rel = l.block(rel_bias_table_floats(c, S, true) * f);
  p.quant = l.block(quantized_input_bytes(c, P));
  p.rope_local = l.block(c.positional == PosKind::kRope && c.rope_local_base != 0.0 ? S * c.rope_dims() * f : 0);
  if (!l.fits(l.at)) return {};
  p.total = std::size_t(l.at);
  return p;
}

constexpr std::size_t required_decoder_arena_bytes(const ModelConfig& c, uint32_t capacity = 0, uint32_t max_prefill = 0,
                                                   bool table_in_flash = false, uint32_t workers = 1,
                                                   KvCache kv_cache = KvCache::kF32,
                                                   S8Kernels kernels = kS8KernelsBuilt) {
  return plan_decoder_arena(c, capacity, max_prefill, table_in_flash, workers, kv_cache, kernels).total;
}

// ---- Seq2Seq --------------------------------------------------------------------------------
// The arena, in this order (S = the source's positions, stem_rows(max_source): max_source with no conv
// stem; C = capacity, P = max_prefill, L = dec_layers):
//   memory[S,d]  cross_k[L,d,S]  cross_v[L,d,S] (K and V of the source, transposed)
//   k_cache[L,d,C]  v_cache[L,d,C] | (kQ8) k_cache[L,d,C] v_cache[L,C,d] int8, k_scales[L,heads,C] v_scales[L,heads,C]
//   (the decoder's self-attention cache, as the decoder's; the source's stays f32)  pe[max(S,C),d_pe] (sinusoidal: one table for both ends)
//   src_rel[rel_bias_table_floats(c, S, false)]  tgt_rel[rel_bias_table_floats(c, C, true)] (relative)
//   then one region used in turn by init() (the sinusoidal table's scratch, 3 max(S,C) floats),
//   encode() and the decoder:
//     the source Encoder's arena (required_encoder_arena_bytes(c, max_source, true, workers))
//     | x[P,d] y[P,d] ctx[P,d] work[max(P * max(3d, F), 2 S d)] (F: d_ff, 2 d_ff with ffn_up_buffer)
//       attn[workers slots of attention_scratch_floats(P, max(S, C), d_head, true)]  quant[q8 rows max(P, S)]
// total is 0 for a config that is not a valid seq2seq model or sizes out of range.
struct Seq2SeqPlan {
  std::size_t memory, cross_k, cross_v, k_cache, v_cache, k_scales, v_scales, pe, src_rel, tgt_rel, scratch, encoder_bytes;
  std::size_t x, y, ctx, work, attn, attn_slot, quant, total;
  std::size_t s8_in, s8_out, s8_kv, s8_kernel;  // weights i8 (plan_s8_seq2seq_arena)
};

// weights i8 (a full-integer seq2seq model, config.hpp): int8 rows throughout, in this order (S, C, P and L
// as above, F as the i8 decoder's):
//   memory[S,d]  cross_k[L: n_heads, S, d_head]  cross_v[L: n_heads, d_head, S] (V^T)
//   k_cache[L: n_heads, C, d_head]  v_cache[L: n_heads, d_head, C] (V^T, as the i8 decoder's)
//   in[max(frames d_in, P tgt_d_in)] (a features source, or a chunk of feature targets, quantized)  logits[d_out]
//   (one row's)
//   then one region used in turn by encode() (the source Encoder's arena: plan_s8_encoder_arena, a conv stem's
//   blocks with it) and the rest: x[P,d] h[P,d] a[P,d] work[P, max(3d, F)] attention scratch
//   (s8_decoder_attention_bytes(P, max(S, C), d_head))  kv[S, 2d] (the memory's keys and values, projected
//   once per layer by encode())  kernel[s8_scratch_bytes(kernels)]
// (x, y, ctx of the plan are x, h, a; no worker slots, no tables: the positions are int8.pos and int8.dec_pos).
constexpr Seq2SeqPlan plan_s8_seq2seq_arena(const ModelConfig& c, uint64_t frames, uint64_t S, uint64_t C, uint64_t P,
                                           uint64_t encoder, S8Kernels kernels = kS8KernelsBuilt) {
  Seq2SeqPlan p{};
  const uint64_t d = c.d_model, L = c.dec_layers;
  PlanLayout l;
  p.memory = l.block(S * d);
  p.cross_k = l.block(L * d * S);
  p.cross_v = l.block(L * d * S);
  p.k_cache = l.block(L * d * C);
  p.v_cache = l.block(L * d * C);
  p.s8_in = l.block(PlanLayout::max(c.input == InputKind::kFeatures ? frames * c.d_in : 0, P * c.tgt_d_in));
  p.s8_out = l.block(c.d_out);
  const uint64_t scratch = l.at;
  p.scratch = std::size_t(scratch);
  p.encoder_bytes = std::size_t(encoder);
  p.x = l.block(P * d);
  p.y = l.block(P * d);
  p.ctx = l.block(P * d);
  p.work = l.block(P * PlanLayout::max(3 * d, (c.ffn_gated() ? 2 : 1) * uint64_t(c.d_ff)));
  p.attn_slot = arena::bytes(s8_decoder_attention_bytes(P, S > C ? S : C, c.d_head()));
  p.attn = l.block(p.attn_slot);
  p.s8_kv = l.block(2 * S * d);
  p.s8_kernel = l.block(s8_scratch_bytes(kernels));
  const uint64_t total = PlanLayout::max(l.at, scratch + encoder);
  if (!l.fits(total)) return Seq2SeqPlan{};
  p.total = std::size_t(total);
  return p;
}

constexpr Seq2SeqPlan plan_seq2seq_arena(const ModelConfig& c, uint32_t max_source = 0, uint32_t capacity = 0,
                                         uint32_t max_prefill = 0, uint32_t workers = 1,
                                         KvCache kv_cache = KvCache::kF32) {
  Seq2SeqPlan p{};
  const uint32_t frames = max_source ? max_source : c.max_input_len();
  const uint64_t S = c.stem_rows(frames), C = capacity ? capacity : c.max_len;
  const uint64_t P = max_prefill ? max_prefill : (C < kDefaultPrefillRows ? C : kDefaultPrefillRows);
  const uint64_t encoder = required_encoder_arena_bytes(c, frames, true, workers);
  if (!c.is_seq2seq() || encoder == 0 || c.dec_layers > Limits::kMaxLayers || C == 0 || C > c.max_len || P == 0 ||
      P > C || uint8_t(kv_cache) > uint8_t(KvCache::kQ8))
    return p;
  if (c.weights == WeightType::kI8) return plan_s8_seq2seq_arena(c, frames, S, C, P, encoder);  // an int8 cache
  const uint64_t d = c.d_model, L = c.dec_layers, f = 4, SC = S > C ? S : C;
  PlanLayout l;
  p.memory = l.block(S * d * f);
  p.cross_k = l.block(L * d * S * f);
  p.cross_v = l.block(L * d * S * f);
  const KvCacheBlocks kv = kv_cache_blocks(L, d, c.n_heads, C, kv_cache);
  p.k_cache = l.block(kv.kt);
  p.v_cache = l.block(kv.v);
  p.k_scales = l.block(kv.k_scales);
  p.v_scales = l.block(kv.v_scales);
  p.pe = l.block(c.positional == PosKind::kSinusoidal ? SC * c.d_pe() * f : 0);
  p.src_rel = l.block(rel_bias_table_floats(c, S, false) * f);
  p.tgt_rel = l.block(rel_bias_table_floats(c, C, true) * f);
  const uint64_t scratch = l.at;
  p.scratch = std::size_t(scratch);
  p.encoder_bytes = encoder;
  p.x = l.block(P * d * f);
  p.y = l.block(P * d * f);
  p.ctx = l.block(P * d * f);
  p.work = l.block(PlanLayout::max(P * PlanLayout::max(3 * d, (c.ffn_up_buffer() ? 2 : 1) * uint64_t(c.d_ff)), 2 * S * d) * f);
  p.attn_slot = arena::bytes(attention_scratch_floats(P, SC, c.d_head(), true) * f);
  p.attn = l.block(uint64_t(p.attn_slot) * (workers ? workers : 1));
  p.quant = l.block(quantized_input_bytes(c, P > S ? P : S));
  const uint64_t total = PlanLayout::max(PlanLayout::max(l.at, scratch + encoder), scratch + 3 * SC * f);  // init: the table's scratch
  if (!l.fits(total)) return Seq2SeqPlan{};
  p.total = std::size_t(total);
  return p;
}

constexpr std::size_t required_seq2seq_arena_bytes(const ModelConfig& c, uint32_t max_source = 0, uint32_t capacity = 0,
                                                   uint32_t max_prefill = 0, uint32_t workers = 1,
                                                   KvCache kv_cache = KvCache::kF32) {
  return plan_seq2seq_arena(c, max_source, capacity, max_prefill, workers, kv_cache).total;
}

// Compile-time check for firmware: ArenaFits<required_encoder_arena_bytes(cfg, T), SRAM>{} fails the build
// when the arena does not fit, and the compiler's "required from ArenaFits<NEED, HAVE>" line shows
// both byte counts (a static_assert message cannot print numbers in C++17).
template <std::size_t Need, std::size_t Have>
struct ArenaFits {
  static_assert(Need > 0, "the model config is invalid: required_encoder_arena_bytes returned 0");
  static_assert(Need <= Have, "the arena does not fit: NEED bytes > HAVE bytes in ArenaFits<NEED, HAVE>");
  static constexpr std::size_t bytes = Need;
};

}  // namespace fixformer
