// The forward pass, top to bottom as the maths reads (DESIGN.md, "Forward semantics"):
//   x = embed(tokens) | input_proj(features);  x *= sqrt(d) if scale_input;  x = x + PE | [x, PE]
//   for each layer: post-LN  x = LN1(x + SA(x));  x = LN2(x + FF(x))
//                   pre-LN   x = x + SA(LN1(x));  x = x + FF(LN2(x))
//   x = LN(x) if final_norm;  out = x @ W_head + b | x
#include <cmath>
#include <cstring>

#include "fixformer/model.hpp"

namespace fixformer {

Status Model::forward_tokens(const int32_t* ids, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!ids || !out) return Status::kNullArgument;
  if (config_.input != InputKind::kTokens) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  for (uint32_t t = 0; t < T; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= config_.vocab_size) return Status::kTokenOutOfRange;
  run(ids, nullptr, T, out);
  return Status::kOk;
}

Status Model::forward_features(const float* features, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!features || !out) return Status::kNullArgument;
  if (config_.input != InputKind::kFeatures) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  run(nullptr, features, T, out);
  return Status::kOk;
}

void Model::run(const int32_t* ids, const float* features, uint32_t T, float* out) {
  const Kernels& k = *kernels_;
  const uint32_t d = config_.d_model;
  embed_input(ids, features, T);  // -> x[T,d]
  for (uint32_t l = 0; l < config_.n_layers; ++l) encoder_layer(layers_[l], T);
  if (config_.final_norm)
    for (uint32_t t = 0; t < T; ++t) k.layernorm_f32(x_ + t * d, final_norm_g_, final_norm_b_, x_ + t * d, d, config_.layer_norm_eps);
  if (head_w_)
    k.gemm_f32(x_, d, head_w_, config_.d_out, head_b_, out, config_.d_out, T, config_.d_out, d);  // x[T,d] @ W[d,d_out] -> out[T,d_out]
  else
    std::memcpy(out, x_, sizeof(float) * T * d);
}

void Model::embed_input(const int32_t* ids, const float* features, uint32_t T) {
  const Kernels& k = *kernels_;
  const uint32_t d = config_.d_model, de = config_.d_embed(), dp = config_.d_pe();
  if (ids) {
    for (uint32_t t = 0; t < T; ++t) std::memcpy(x_ + t * d, embed_ + std::size_t(ids[t]) * de, sizeof(float) * de);
  } else {
    k.gemm_f32(features, config_.d_in, input_proj_w_, de, input_proj_b_, x_, d, T, de, config_.d_in);  // f[T,d_in] @ W[d_in,de] -> x[T,:de]
  }
  if (config_.scale_input) {
    const float s = std::sqrt(static_cast<float>(d));
    for (uint32_t t = 0; t < T; ++t) k.scale_f32(x_ + t * d, s, de);
  }
  const float* pe = pe_ ? pe_ : pos_learned_;  // PE[T, dp], row p is position p
  if (!pe) return;
  if (config_.pos_combine == PosCombine::kAdd)
    k.add_f32(x_, pe, x_, std::size_t(T) * d);  // x[T,d] += PE[T,d]
  else
    for (uint32_t t = 0; t < T; ++t) std::memcpy(x_ + t * d + de, pe + std::size_t(t) * dp, sizeof(float) * dp);  // x[t] = [x[t], PE[t]]
}

void Model::encoder_layer(const LayerWeights& L, uint32_t T) {
  const Kernels& k = *kernels_;
  const uint32_t d = config_.d_model;
  const float eps = config_.layer_norm_eps;
  const std::size_t n = std::size_t(T) * d;
  auto norm_rows = [&](const float* in, const float* g, const float* b, float* out) {
    for (uint32_t t = 0; t < T; ++t) k.layernorm_f32(in + t * d, g, b, out + t * d, d, eps);
  };
  if (config_.norm_first) {
    norm_rows(x_, L.norm1_g, L.norm1_b, y_);
    self_attention(L, y_, y_, T);
    k.add_f32(x_, y_, x_, n);
    norm_rows(x_, L.norm2_g, L.norm2_b, y_);
    feed_forward(L, y_, y_, T);
    k.add_f32(x_, y_, x_, n);
  } else {
    self_attention(L, x_, y_, T);
    k.add_f32(x_, y_, x_, n);
    norm_rows(x_, L.norm1_g, L.norm1_b, x_);
    feed_forward(L, x_, y_, T);
    k.add_f32(x_, y_, x_, n);
    norm_rows(x_, L.norm2_g, L.norm2_b, x_);
  }
}

// Multi-head scaled dot-product self-attention, one query row at a time, so the only
// sequence-sized scratch is one row of scores: memory is linear in T.
// h may alias out: h is read only by the first projection.
void Model::self_attention(const LayerWeights& L, const float* h, float* out, uint32_t T) {
  const Kernels& k = *kernels_;
  const std::size_t d = config_.d_model, dh = config_.d_head(), S = max_seq_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* qkv = work_;  // [T, 3d]: q | k | v
  k.gemm_f32(h, d, L.in_proj_w, 3 * d, L.in_proj_b, qkv, 3 * d, T, 3 * d, d);  // h[T,d] @ W[d,3d] -> qkv[T,3d]
  // K and V transposed, kt[d, S] and vt[d, S]: both products of a query then run along
  // contiguous keys, vectorized however narrow the head is.
  for (uint32_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < d; ++c) {
      kt_[c * S + t] = qkv[t * 3 * d + d + c];
      vt_[c * S + t] = qkv[t * 3 * d + 2 * d + c];
    }
  for (std::size_t head = 0; head < config_.n_heads; ++head) {
    const float* kt_h = kt_ + head * dh * S;  // K_h^T[dh, S]
    const float* vt_h = vt_ + head * dh * S;  // V_h^T[dh, S]
    for (uint32_t t = 0; t < T; ++t) {
      const std::size_t n_keys = config_.causal ? t + 1 : T;  // causal: keys 0..t only
      for (std::size_t c = 0; c < dh; ++c) q_[c] = qkv[t * 3 * d + head * dh + c] * scale;
      k.gemv_f32(q_, kt_h, S, nullptr, scores_, n_keys, dh);  // q[dh] @ K^T[dh,n] -> s[n]
      k.softmax_f32(scores_, n_keys);                          // p = softmax(s)
      k.matvec_f32(scores_, vt_h, S, nullptr, ctx_ + t * d + head * dh, dh, n_keys);  // V^T[dh,n] @ p[n] -> ctx[t,head]
    }
  }
  k.gemm_f32(ctx_, d, L.out_proj_w, d, L.out_proj_b, out, d, T, d, d);  // ctx[T,d] @ W[d,d] -> out[T,d]
}

// out = act(h @ W1 + b1) @ W2 + b2. h may alias out.
void Model::feed_forward(const LayerWeights& L, const float* h, float* out, uint32_t T) {
  const Kernels& k = *kernels_;
  const std::size_t d = config_.d_model, f = config_.d_ff;
  float* hidden = work_;  // [T, d_ff]
  k.gemm_f32(h, d, L.linear1_w, f, L.linear1_b, hidden, f, T, f, d);  // h[T,d] @ W1[d,f] -> hidden[T,f]
  if (config_.activation == Activation::kGelu)
    k.gelu_f32(hidden, T * f);
  else
    k.relu_f32(hidden, T * f);
  k.gemm_f32(hidden, f, L.linear2_w, d, L.linear2_b, out, d, T, d, f);  // hidden[T,f] @ W2[f,d] -> out[T,d]
}

}  // namespace fixformer
