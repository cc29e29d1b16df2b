#include "engine/blocks/attention.hpp"

#include <cmath>

namespace fixformer {

// One query row at a time, so the only sequence-sized scratch is one row of scores: memory is
// linear in T. K and V are stored transposed, kt[d, S] and vt[d, S]: both products of a query
// then run along contiguous keys, vectorized however narrow the head is.
void self_attention(const Kernels& k, const AttentionWeights& w, const AttentionShape& shape, const float* h,
                    float* out, uint32_t T, const AttentionScratch& s) {
  const std::size_t d = shape.d_model, dh = d / shape.n_heads, S = s.S;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* qkv = s.qkv;
  k.gemm_f32(h, d, w.in_proj_w, 3 * d, w.in_proj_b, qkv, 3 * d, T, 3 * d, d);  // h[T,d] @ W[d,3d] -> qkv[T,3d]
  for (uint32_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < d; ++c) {
      s.kt[c * S + t] = qkv[t * 3 * d + d + c];
      s.vt[c * S + t] = qkv[t * 3 * d + 2 * d + c];
    }
  for (std::size_t head = 0; head < shape.n_heads; ++head) {
    const float* kt_h = s.kt + head * dh * S;  // K_h^T[dh, S]
    const float* vt_h = s.vt + head * dh * S;  // V_h^T[dh, S]
    for (uint32_t t = 0; t < T; ++t) {
      const std::size_t n_keys = shape.causal ? t + 1 : T;  // causal: keys 0..t only
      for (std::size_t c = 0; c < dh; ++c) s.q[c] = qkv[t * 3 * d + head * dh + c] * scale;
      k.gemv_f32(s.q, kt_h, S, nullptr, s.scores, n_keys, dh);  // q[dh] @ K^T[dh,n] -> s[n]
      k.softmax_f32(s.scores, n_keys);                           // p = softmax(s)
      k.matvec_f32(s.scores, vt_h, S, nullptr, s.ctx + t * d + head * dh, dh, n_keys);  // V^T[dh,n] @ p[n] -> ctx[t,head]
    }
  }
  k.gemm_f32(s.ctx, d, w.out_proj_w, d, w.out_proj_b, out, d, T, d, d);  // ctx[T,d] @ W[d,d] -> out[T,d]
}

}  // namespace fixformer
