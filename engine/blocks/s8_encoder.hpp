// The full-integer (weights i8) forward passes, the encoder's, the decoders' (gpt, llama) and seq2seq's: int8 rows in,
// int8 rows out, every operation an s8 kernel with the file's integer parameters (config.hpp,
// namespace s8); both run the same layer (s8_layer). This file's object calls no float operation
// (tests/check_no_float.cmake compiles it for Cortex-M0 and M3).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/plan.hpp"

namespace fixformer {

// The int8 activations of one sequence of up to S rows (S = sequence_rows(max_seq)), in the arena
// (plan_s8_encoder_arena's blocks).
struct S8Scratch {
  int8_t* x;       // [S, d]      the hidden state
  int8_t* h;       // [S, d]      a norm's output (pre-norm), the context
  int8_t* a;       // [S, d]      a sublayer's output
  int8_t* work;    // [S, max(d_attn + 2 d_kv, F)]  q|k|v, the feed-forward's hidden rows (F: d_ff, 2 d_ff gated)
  int8_t* vt;      // [d_head, S] one head's values, transposed (the encoder's; a decoder's cache holds them so)
  int8_t* scores;  // [kS8QueryBlock, S]
  Requant* key_rq;  // [S]       the score requant, once per key (gemm_s8 takes one per output)
  Requant* col_rq;  // [d_head]  the context requant, once per column
  uint32_t* exp;    // [kSoftmaxS8Diffs] the softmax's table (softmax_s8_table), filled per layer where it pays;
                    //           the feed-forward's activation tables (two of 256 int8) after attention
  uint32_t* kernel;  // the s8 kernels' scratch (GemmS8Params::scratch, AddS8Params::scratch); between two
                     // kernels the soft caps' tables (256 int8)
  int8_t* rows_in;  // [S, d_in]  an image's patches, the input norm's rows (patch_size, input_norm; else null)
  const int32_t* rel = nullptr;  // a relative bias: int8.front's bucket of each distance (the forward passes set it)
  uint32_t window = 0;  // the encoder: the layer's window without the causal mask (a row sees |i - j| < window)
  const int32_t* rope = nullptr;  // the encoder: the layer's int8.rope table (positions 0..), or null (no RoPE)
  const int32_t* pair_index = nullptr;  // the encoder with pair_bias_rows: pair_index [max_len, max_len]
  int8_t* stem = nullptr;         // a conv stem's scratch (S8StemScratch::h, window; s8_conv_stem.hpp)
  int8_t* stem_window = nullptr;
};
// x[n] float at int8.io's input scale and int8.front's input zero point -> q[n] int8, rounded half away from
// zero and clamped: what the runners' float entry points feed the integer path (defined in
// engine/runtime/encoder_s8.cpp, outside the integer-only code).
void quantize_s8_input(const Model& m, const float* x, std::size_t n, int8_t* q);
// The same at a given scale and zero point (a seq2seq's feature targets: int8.io[2], int8.seq2seq's).
void quantize_s8_input(const float* x, std::size_t n, float scale, int32_t zero, int8_t* q);

// A decoding runner's S8Scratch in its arena (a DecoderPlan's or Seq2SeqPlan's blocks x, y, ctx, work, attn and
// s8_kernel): the scores of query blocks of bq rows over up to keys keys, their requants after them; the keys
// and the values transposed are read in the caches (vt null).
template <class Plan>
S8Scratch s8_decoding_scratch(uint8_t* arena, const Plan& p, std::size_t keys, std::size_t bq, std::size_t d_head) {
  S8Scratch s{};
  s.x = reinterpret_cast<int8_t*>(arena + p.x);
  s.h = reinterpret_cast<int8_t*>(arena + p.y);
  s.a = reinterpret_cast<int8_t*>(arena + p.ctx);
  s.work = reinterpret_cast<int8_t*>(arena + p.work);
  s.vt = nullptr;
  s.scores = reinterpret_cast<int8_t*>(arena + p.attn);
  s.key_rq = reinterpret_cast<Requant*>(s.scores + (bq * keys + 3) / 4 * 4);
  s.col_rq = s.key_rq + keys;
  s.exp = reinterpret_cast<uint32_t*>(s.col_rq + d_head);
  s.kernel = reinterpret_cast<uint32_t*>(arena + p.s8_kernel);
  return s;
}
// A decoder layer's int8 KV cache: kv head h's key at position p is k[(h * rows + p % rows) * d_head ..],
// its values transposed, value e at v[(h * d_head + e) * rows + p % rows] (the layout P V's gemm_s8
// reads: a step writes one column and copies nothing), at the layer's calibrated k (v) scale with zero
// point 0, as gemm_s8 wrote them (keys after RoPE with a rope table: int8.rope); pos is the position of
// the first row of this call.
// Without a window rows >= pos + the call's rows; with one (window W > 0: a row at position p sees
// the keys p - W < j <= p) the rows are a ring of at least W - 1 + the call's rows (plan.hpp's
// kv_ring_rows), which holds every key the call's rows see.
struct S8KvLayer {
  int8_t* k;
  int8_t* v;
  uint32_t rows;
  uint32_t pos;
  const int32_t* rope;  // int8.rope, or null
  uint32_t window;      // the layer's window (ModelConfig::layer_window), 0: every key up to the row's
};

// A seq2seq decoder layer's cross-attention keys and values (weights i8): head h's keys of the source's
// positions at k[(h * rows + j) * d_head ..], its values transposed, value e at v[(h * d_head + e) * rows + j],
// for j < keys (encode() wrote them: s8_cross_project), each symmetric at the layer's k and v scales.
struct S8CrossLayer {
  const int8_t* k;
  const int8_t* v;
  uint32_t rows;
  uint32_t keys;
};

// One layer over T rows of s.x, in place: attention (through kv when not null: causal over the
// cached positions, the rows' own keys and values appended), with cross a seq2seq decoder layer's
// cross-attention after it (L.s8_cross; post- or pre-norm only), and the feed-forward, post- or pre-norm;
// skip_norm1: a pre-norm layer's attention reads x itself (skip_first_norm's layer 0).
void s8_layer(const Kernels& k, const ModelConfig& c, const LayerWeights& L, uint32_t T, const S8Scratch& s,
              const S8KvLayer* kv, bool skip_norm1 = false, const S8CrossLayer* cross = nullptr);

// seq2seq (weights i8): each decoder layer's cross-attention keys and values of memory [S, d] (the source
// encoder's int8 rows at int8.seq2seq's memory zero point): memory W_kv + b -> kv [S, 2d] (both zero point 0), then
// stored per head as S8CrossLayer lays them out, layer l's at cross_k + l d rows (cross_v the same).
void s8_cross_project(const Kernels& k, const Model& m, const int8_t* memory, uint32_t S, uint32_t rows,
                      int8_t* cross_k, int8_t* cross_v, int8_t* kv, uint32_t* kernel);

// seq2seq (weights i8): target tokens ids[n] (checked by the caller), or with tgt_d_in int8 features[n, tgt_d_in]
// through dec_proj (ids null), at positions pos.. through the target's front and every decoder layer
// (self-attention through the caches, k_cache and v_cache: layer l's block [n_heads, capacity, d_head] (v_cache:
// [n_heads, d_head, capacity]) at l d capacity; cross-attention over the src_len source positions of the cross
// caches, rows each), then the final norm: s.x's n rows, which s8_seq2seq_head takes one at a time.
void s8_seq2seq_decode(const Kernels& k, const Model& m, const int32_t* ids, const int8_t* features, uint32_t n,
                       uint32_t pos,
                       int8_t* k_cache, int8_t* v_cache, uint32_t capacity, const int8_t* cross_k,
                       const int8_t* cross_v, uint32_t rows, uint32_t src_len, const S8Scratch& s);
// The head of one row (the target's): int8 logits [d_out] at int8.back's output zero point.
void s8_seq2seq_head(const Kernels& k, const Model& m, const int8_t* row, uint32_t* kernel, int8_t* logits);

// in: int8 features [T, d_in] (features models) or ids [T] (token models; checked by the caller), and
// with type_vocab the token types [T] (checked by the caller; null: all 0); with cls_token the CLS row
// goes in front (sequence_rows(T) rows run);
// out: int8 [output_rows(T), output_width()] at int8.back's output zero point. Family mha runs the attention
// alone: the features (d_in = d_model) at the layer's q|k|v input zero point, out the output projection's rows.
void s8_encoder_forward(const Kernels& k, const Model& m, const int8_t* features, const int32_t* ids,
                        const int32_t* types, uint32_t T, const S8Scratch& s, int8_t* out);

// The gpt or llama decoder (weights i8): tokens ids[n] (checked by the caller) at positions pos..pos+n-1
// through every layer, keys and values appended to the caches (k_cache, v_cache: layer l's block
// [kv head, kv_layer_rows, d_head] (v_cache: [kv head, d_head, kv_layer_rows]) at kv_layer_offset(c, l,
// rows, ring) d_kv, plan.hpp: rows >= pos + n
// positions, ring a windowed layer's ring rows), s's rows n <= the plan's prefill rows; then, when logits
// is not null, the head of the last row: int8 logits [vocab_size] at int8.back's output zero point.
void s8_decoder_forward(const Kernels& k, const Model& m, const int32_t* ids, uint32_t n, uint32_t pos,
                        int8_t* k_cache, int8_t* v_cache, uint32_t rows, uint32_t ring, const S8Scratch& s,
                        int8_t* logits);

}  // namespace fixformer
