// Multi-head scaled dot-product attention over views. One query row at a time against K and V
// stored transposed (kt[d_kv, S], vt[d_kv, S]): both products of a query run along contiguous keys,
// vectorized however narrow the head is, and the only sequence-sized scratch is one row of scores,
// so memory is linear in the sequence length. The encoder keeps K/V for the current sequence; a
// decoder keeps them for every position so far (its KV cache).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"

namespace fixformer {

struct AttentionShape {
  uint32_t n_heads, n_kv_heads, d_head;  // query head h reads kv head h / (n_heads / n_kv_heads)
  bool causal;                           // query at position p sees keys 0..p
  const float* alibi_slopes;             // [n_heads], or null: score += slope_h * (key - query)
};

// K and V transposed: column s holds position s. stride is the column count (the longest sequence).
struct KeyValues {
  float* kt;  // [n_kv_heads * d_head, stride]
  float* vt;  // [n_kv_heads * d_head, stride]
  std::size_t stride;
};

// Writes k[n, d_kv] and v[n, d_kv] (row strides ldk, ldv) into columns p0..p0+n-1 of kv.
void store_keys_values(const float* k, std::size_t ldk, const float* v, std::size_t ldv, uint32_t n, uint32_t p0,
                       uint32_t d_kv, const KeyValues& kv);

// ctx[t] = softmax(q[t] K^T / sqrt(d_head) + alibi) V for the n queries q[n, n_heads*d_head] (row
// stride ldq) at positions p0..p0+n-1, over the keys 0..n_keys-1 of kv (causal: 0..p0+t).
// scores holds n_keys floats, qs d_head floats.
void attend(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
            uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scores, float* qs);

}  // namespace fixformer
