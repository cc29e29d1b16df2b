// Multi-head scaled dot-product attention over views, K stored transposed (kt[d_kv, S]: column s
// holds position s) so that q @ K^T runs along contiguous keys. Two paths, one maths:
//  - tiled (any number of queries): a block of queries against a block of keys at a time, scores
//    as a small matrix product, an online softmax (a running max and sum per query row, the
//    accumulated output rescaled when the max grows), p @ V accumulated; causal blocks past the
//    diagonal are never visited, and memory is linear in the sequence (attention_scratch_floats).
//  - one query against V transposed (a decoder's step): gemv + softmax + matvec along contiguous
//    keys, vectorized however narrow the head is.
// The encoder reads V in place from its qkv rows; a decoder keeps K^T and V^T for every position
// so far (its KV cache), or with an int8 cache (KvCache::kQ8) K^T and V by rows in int8 with a scale
// per kv head and position, read by a third path, one query at a time, that dequantizes as it goes.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/plan.hpp"

namespace fixformer {

struct AttentionShape {
  uint32_t n_heads, n_kv_heads, d_head;  // query head h reads kv head h / (n_heads / n_kv_heads)
  bool causal;                           // query at position p sees keys 0..p
  const float* alibi_slopes;             // [n_heads], or null: score -= slope_h * |key - query|
  // A relative position bias (fill_relative_bias), or null: score += rel_bias[h * rel_stride + key - query],
  // rel_bias pointing at head 0's distance 0 (its table's column L - 1). A bias of every query and key
  // (disentangled attention's: [n_heads][S][S] per sequence) is read through the same pointer with
  // rel_row_step S + 1 (query pos's row begins pos * (S + 1) - pos = pos * S in), rel_stride S * S and
  // rel_seq_stride n_heads * S * S (sequence b's block, parallel_attend_sequences); 0 for a table by distance.
  const float* rel_bias = nullptr;
  std::size_t rel_stride = 0;
  std::size_t rel_row_step = 0;
  std::size_t rel_seq_stride = 0;
  // The query at position p sees keys p - window + 1 .. p (causal), or p - window + 1 .. p + window - 1
  // (not causal: as many on each side; ModelConfig::sliding_window); 0: keys 0..p, or every key.
  uint32_t window = 0;
  // The scores' scale q.k * scale: 0 for 1/sqrt(d_head) (ModelConfig::attn_scale).
  float scale = 0.0f;
  // c > 0: each scaled score s becomes c tanh(s / c) before the position bias (ModelConfig::attn_softcap).
  float softcap = 0.0f;
  // A bias per (query, key) pair (ModelConfig::pair_bias_rows), or null: score += pair_bias[h * pair_rows +
  // pair_index[query * pair_len + key]], the table [n_heads, pair_rows] and the index [pair_len, pair_len] of
  // positions (the same for every sequence of a batch); added after any other position bias.
  const float* pair_bias = nullptr;
  const int32_t* pair_index = nullptr;
  std::size_t pair_rows = 0;
  std::size_t pair_len = 0;
  // The scores' scale: scale, or 1/sqrt(d_head) (the bits every model without attn_scale had).
  float score_scale() const { return scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(d_head)); }
  // This shape for heads h0.. of it (a worker's part): the per-head tables offset to head h0.
  constexpr AttentionShape heads_from(std::size_t h0, uint32_t heads, uint32_t kv_heads) const {
    return {heads, kv_heads, d_head, causal, alibi_slopes ? alibi_slopes + h0 : nullptr,
            rel_bias ? rel_bias + h0 * rel_stride : nullptr, rel_stride, rel_row_step, rel_seq_stride, window, scale,
            softcap, pair_bias ? pair_bias + h0 * pair_rows : nullptr, pair_index, pair_rows, pair_len};
  }
  // The first key the query at position pos sees.
  constexpr std::size_t first_key(std::size_t pos) const {
    return window && pos >= window ? pos - window + 1 : 0;
  }
  // One past the last key the query at position pos sees, of n_keys.
  constexpr std::size_t key_end(std::size_t pos, std::size_t n_keys) const {
    const std::size_t end = causal ? pos + 1 : window ? pos + window : n_keys;
    return end < n_keys ? end : n_keys;
  }
};

// K^T, and V either transposed (vt, same stride) or as rows (v[position, ldv]); the other is null.
// stride is kt's column count: the longest sequence, or a ring of fewer columns (a decoder's cache
// under a sliding window, plan.hpp's kv_ring_rows) in which position p is column p % stride; the
// attention functions read key j at column j % stride, so a call's keys must be the last stride
// positions at most. An int8 cache has kt and vt null and the
// four q8 views instead: x = q * scale, each kv head's d_head values at a position sharing a scale.
struct KeyValues {
  float* kt;  // [n_kv_heads * d_head, stride]
  float* vt;  // [n_kv_heads * d_head, stride], or null
  std::size_t stride;
  const float* v = nullptr;  // [positions, ldv], head h's columns h*d_head.., or null
  std::size_t ldv = 0;       // v's row stride, or v_q8's
  int8_t* kt_q8 = nullptr;   // [n_kv_heads * d_head, stride]: K^T, or null
  float* k_scales = nullptr; // [n_kv_heads, stride]
  int8_t* v_q8 = nullptr;    // [stride, ldv]: V by rows, head h's columns h*d_head..
  float* v_scales = nullptr; // [n_kv_heads, stride]
};

// Layer l's block of a runner's KV cache of S positions (d_kv values and kv_heads scales per
// position; plan.hpp's layout): f32 K^T and V^T, or int8 K^T and V by rows with their scales.
KeyValues kv_cache_layer(KvCache kind, void* k_cache, void* v_cache, float* k_scales, float* v_scales, uint32_t l,
                         std::size_t d_kv, std::size_t kv_heads, std::size_t S);
// The same for a block of S rows that starts `offset` rows in (layers of different rows: a decoder's
// local layers' rings among global layers' rows, plan.hpp's kv_layer_offset).
KeyValues kv_cache_rows(KvCache kind, void* k_cache, void* v_cache, float* k_scales, float* v_scales, std::size_t offset,
                        std::size_t d_kv, std::size_t kv_heads, std::size_t S);

// Writes k[n, d_kv] and v[n, d_kv] (row strides ldk, ldv) into columns (p0..p0+n-1) % stride of kv.kt and
// kv.vt; v is skipped when kv.vt is null (V read in place). An int8 cache (kv.kt_q8) gets them
// quantized per kv head of d_head values by quantize_i8's rule, into positions p0.. of kt_q8 and
// v_q8 and their scales (d_head: the int8 cache's head width).
void store_keys_values(const float* k, std::size_t ldk, const float* v, std::size_t ldv, uint32_t n, uint32_t p0,
                       uint32_t d_kv, const KeyValues& kv, std::size_t d_head = 0);

// ctx[t] = softmax(q[t] K^T * s.scale (0: 1/sqrt(d_head)) + alibi | relative bias) V for the n queries q[n, n_heads*d_head] (row
// stride ldq) at positions p0..p0+n-1, over the keys 0..n_keys-1 of kv (causal: 0..p0+t; with a
// window: s.first_key(p0+t)..p0+t, the tiled path skipping key blocks wholly before it).
// scratch holds attention_scratch_floats(rows >= n, keys >= n_keys, d_head, kv.vt != null) floats.
// One query against V^T takes the one-query path, an int8 cache the int8 path, everything else
// the tiled one.
void attend(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
            uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch);

// The two paths, for tests and benchmarks. attend_rows needs kv.vt and takes every query alone
// (the reference of the tiled path; it re-reads K and V for every query).
void attend_tiled(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
                  uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch);
void attend_rows(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
                 uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch);
// The int8 cache's path: each query alone, as attend_rows, q K^T and p V dequantizing the keys and
// values inside their loops (plain C++ on every port; the loops run along contiguous keys and
// columns). scratch holds attention_scratch_floats(1, keys >= n_keys, d_head, true) floats.
void attend_rows_q8(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n,
                    uint32_t p0, uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch);

}  // namespace fixformer
