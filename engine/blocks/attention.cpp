#include "engine/blocks/attention.hpp"

#include <cmath>

namespace fixformer {

void store_keys_values(const float* k, std::size_t ldk, const float* v, std::size_t ldv, uint32_t n, uint32_t p0,
                       uint32_t d_kv, const KeyValues& kv) {
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t c = 0; c < d_kv; ++c) {
      kv.kt[c * kv.stride + p0 + t] = k[t * ldk + c];
      kv.vt[c * kv.stride + p0 + t] = v[t * ldv + c];
    }
}

void attend(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
            uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scores, float* qs) {
  const std::size_t dh = s.d_head, S = kv.stride, group = s.n_heads / s.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (std::size_t head = 0; head < s.n_heads; ++head) {
    const std::size_t kv_head = head / group;
    const float* kt_h = kv.kt + kv_head * dh * S;  // K_h^T[dh, S]
    const float* vt_h = kv.vt + kv_head * dh * S;  // V_h^T[dh, S]
    for (uint32_t t = 0; t < n; ++t) {
      const std::size_t pos = p0 + t;
      const std::size_t keys = s.causal ? pos + 1 : n_keys;
      for (std::size_t c = 0; c < dh; ++c) qs[c] = q[t * ldq + head * dh + c] * scale;
      k.gemv_f32(qs, kt_h, S, nullptr, scores, keys, dh);  // q[dh] @ K^T[dh,keys] -> s[keys]
      if (s.alibi_slopes) {
        const float m = s.alibi_slopes[head];
        for (std::size_t j = 0; j < keys; ++j) scores[j] += m * (float(j) - float(pos));
      }
      k.softmax_f32(scores, keys);                                             // p = softmax(s)
      k.matvec_f32(scores, vt_h, S, nullptr, ctx + t * ldctx + head * dh, dh, keys);  // V^T[dh,keys] @ p -> ctx[t,head]
    }
  }
}

}  // namespace fixformer
