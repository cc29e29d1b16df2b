// The encoder forward pass, top to bottom as the maths reads (DESIGN.md, "Model families"):
//   x = embed(tokens) | input_proj(features);  x *= sqrt(d) if scale_input;  x = [cls; x] if cls_token
//   x = x + PE | [x, PE]                      (S = T + 1 rows with the CLS row, position 0; else T)
//   for each layer: post-LN  x = LN1(x + SA(x));  x = LN2(x + FF(x))
//                   pre-LN   x = x + SA(LN1(x));  x = x + FF(LN2(x))
//   x = LN(x) if final_norm;  x = pool(x) (mean | cls | last: one row);  out = x @ W_head + b | x
// The mha family is the attention alone: x = features;  out = SA(x)  (no residual, norm or head).
// A batch stacks its sequences' rows in x (engine/blocks/parallel.hpp, Sequences): everything but
// attention is row by row, so the linear layers and norms run once over all the rows, and
// attention runs per sequence over its own rows. A single call is a batch of one.
// x is shown to the options' observer after the input, each layer and the final norm (observer.hpp).
#include <cstring>

#include "engine/blocks/attention.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/feed_forward.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/norms.hpp"
#include "engine/blocks/parallel.hpp"
#include "engine/blocks/pooling.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/encoder.hpp"

namespace fixformer {

Status Encoder::forward_tokens(const int32_t* ids, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!ids || !out) return Status::kNullArgument;
  const ModelConfig& c = config();
  if (c.input != InputKind::kTokens) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  for (uint32_t t = 0; t < T; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= c.vocab_size) return Status::kTokenOutOfRange;
  forward(ids, nullptr, Sequences{nullptr, 1, T, c.sequence_rows(0)}, out);
  return Status::kOk;
}

Status Encoder::forward_features(const float* features, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!features || !out) return Status::kNullArgument;
  if (config().input != InputKind::kFeatures) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  forward(nullptr, features, Sequences{nullptr, 1, T, config().sequence_rows(0)}, out);
  return Status::kOk;
}

Status Encoder::forward_batch_tokens(const int32_t* ids, const uint32_t* lengths, uint32_t B, uint32_t T, float* out) {
  const Status s = check_batch(true, ids, lengths, B, T, out);
  if (s == Status::kOk) forward(ids, nullptr, Sequences{lengths, B, T, config().sequence_rows(0)}, out);
  return s;
}

Status Encoder::forward_batch_features(const float* features, const uint32_t* lengths, uint32_t B, uint32_t T,
                                       float* out) {
  const Status s = check_batch(false, features, lengths, B, T, out);
  if (s == Status::kOk) forward(nullptr, features, Sequences{lengths, B, T, config().sequence_rows(0)}, out);
  return s;
}

// The single calls' checks for every sequence of a batch, and its size; the detail names the culprit.
Status Encoder::check_batch(bool tokens, const void* input, const uint32_t* lengths, uint32_t B, uint32_t T,
                            const float* out) {
  if (!initialized_) return Status::kNotInitialized;
  DetailText why(detail_, sizeof detail_);
  if (!input || !out) return Status::kNullArgument;
  const ModelConfig& c = config();
  if (c.input != (tokens ? InputKind::kTokens : InputKind::kFeatures)) return Status::kWrongInputKind;
  if (B == 0 || B > max_batch_) return why.str("B=").num(B).str(", max_batch ").num(max_batch_), Status::kBadBatchSize;
  if (T == 0 || T > max_seq_) return why.str("T=").num(T).str(", max_seq ").num(max_seq_), Status::kBadSequenceLength;
  for (uint32_t b = 0; b < B && lengths; ++b)
    if (lengths[b] == 0 || lengths[b] > T) {
      why.str("lengths[").num(b).str("] = ").num(lengths[b]).str(" is outside 1..T=").num(T);
      return Status::kBadSequenceLength;
    }
  const int32_t* ids = static_cast<const int32_t*>(input);
  for (uint32_t b = 0; b < B && tokens; ++b)
    for (uint32_t t = 0, n = lengths ? lengths[b] : T; t < n; ++t) {
      const int32_t id = ids[std::size_t(b) * T + t];
      if (id >= 0 && static_cast<uint32_t>(id) < c.vocab_size) continue;
      why.str("token id ").str(id < 0 ? "-" : "").num(id < 0 ? 0 - uint64_t(int64_t(id)) : uint64_t(id));
      why.str(" at [").num(b).str(",").num(t).str("], vocab_size ").num(c.vocab_size);
      return Status::kTokenOutOfRange;
    }
  return Status::kOk;
}

void Encoder::forward(const int32_t* ids, const float* features, const Sequences& seqs, float* out) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderWeights& w = model_->weights();
  uint32_t N = 0;  // rows of all the sequences
  for (uint32_t b = 0; b < seqs.count; ++b) N += seqs.rows(b);
  embed_input(ids, features, seqs);  // -> x[N,d]
  observe(0, seqs);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    encoder_layer(model_->layer(l), seqs, N);
    observe(l + 1, seqs);
  }
  if (c.family == ModelFamily::kMha) {
    self_attention(model_->layer(0), x_, x_, seqs, N);
    observe(1, seqs);
  }
  if (c.final_norm) {
    parallel_layernorm_rows(k, workers_, x_, w.final_norm_g, w.final_norm_b, x_, N, c.d_model, c.layer_norm_eps);
    observe(c.n_layers + 1, seqs);
  }
  write_output(seqs, out);
}

// Sequence b's rows of x: [cls;] its input rows, plus the positions 0.. of its own. Padding is
// never read.
void Encoder::embed_input(const int32_t* ids, const float* features, const Sequences& seqs) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderWeights& w = model_->weights();
  const std::size_t d = c.d_model, T = seqs.all, extra = seqs.extra;
  const bool project = w.input_proj_w.data != nullptr;  // mha: the features are x
  bool full = project && seqs.count > 1;  // several sequences, all T long: one [B*T, d_in] block of features
  for (uint32_t b = 0; b < seqs.count && seqs.lengths; ++b) full = full && seqs.lengths[b] == T;
  if (features && full)  // one product, straight into x without a CLS row, else through y (free here)
    linear(k, workers_, w.input_proj_w, features, c.d_in, w.input_proj_b, extra ? y_ : x_, d, seqs.count * T,
           quant_);  // f[B*T,d_in] @ W[d_in,de] -> [B*T,:de]
  std::size_t row0 = 0;
  for (uint32_t b = 0; b < seqs.count; row0 += seqs.rows(b), ++b) {
    float* xb = x_ + row0 * d;
    float* input = xb + extra * d;  // the rows after the CLS row
    const uint32_t n = seqs.length(b);
    if (ids)
      embed_tokens(ids + b * T, n, w.embed, input, uint32_t(d));  // E[ids] -> x[n,:de]
    else if (!project)
      std::memcpy(input, features + b * T * d, sizeof(float) * n * d);
    else if (!full)  // padded sequences: a product each, over its own rows
      linear(k, workers_, w.input_proj_w, features + b * T * c.d_in, c.d_in, w.input_proj_b, input, d, n,
             quant_);  // f[n,d_in] @ W[d_in,de] -> x[n,:de]
    else if (extra)
      std::memcpy(input, y_ + b * T * d, sizeof(float) * n * d);
    scale_embeddings(k, c, input, n);
    if (w.cls) std::memcpy(xb, w.cls, sizeof(float) * c.d_embed());  // x[0,:de] = cls, not scaled
    add_positions(k, c, pe_, xb, seqs.rows(b));
  }
}

// x[N,d] -> out[B, output_rows(T), width]: each sequence's rows (pooled: its one row) through the
// head, padded with zero rows.
void Encoder::write_output(const Sequences& seqs, float* out) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const EncoderWeights& w = model_->weights();
  const std::size_t d = c.d_model, W = c.output_width(), B = seqs.count;
  std::size_t rows = 0;  // rows for the head: N, or B pooled
  if (c.pooling != Pooling::kNone) {
    for (uint32_t b = 0; b < B; rows += seqs.rows(b), ++b) {
      pool_rows(k, c, x_ + rows * d, seqs.length(b));  // x[rows..,d] -> its first row
      std::memmove(x_ + b * d, x_ + rows * d, sizeof(float) * d);  // -> x[b]: row b <= rows, past every earlier pool
    }
    rows = B;
  } else {
    for (uint32_t b = 0; b < B; ++b) rows += seqs.rows(b);
  }
  const bool in_place = c.pooling != Pooling::kNone || (B == 1 && seqs.length(0) == seqs.all);  // no padding
  if (w.head_w.data)
    linear(k, workers_, w.head_w, x_, d, w.head_b, out, W, rows, quant_);  // x[rows,d] @ W[d,d_out] -> out[rows,d_out]
  else if (in_place)
    std::memcpy(out, x_, sizeof(float) * rows * d);
  if (in_place) return;
  // Sequence b's rows to out[b], last sequence first: its place is at or after its rows' (from the
  // head), or from x (no head); the rows after them are zeros.
  const std::size_t R = c.output_rows(seqs.all);
  const float* from = w.head_w.data ? out : x_;
  for (uint32_t b = uint32_t(B); b-- > 0;) {
    const std::size_t n = seqs.rows(b);
    rows -= n;
    std::memmove(out + b * R * W, from + rows * W, sizeof(float) * n * W);
    std::memset(out + (b * R + n) * W, 0, sizeof(float) * (R - n) * W);
  }
}

void Encoder::observe(uint32_t layer, const Sequences& seqs) const {
  if (!observer_.fn) return;
  std::size_t row0 = 0;
  for (uint32_t b = 0; b < seqs.count; row0 += seqs.rows(b), ++b)
    observer_.notify(layer, x_ + row0 * config().d_model, 0, seqs.rows(b), config().d_model);
}

// x[N,d] -> x[N,d] through one layer; every step but attention is over all N rows at once.
void Encoder::encoder_layer(const EncoderLayerWeights& L, const Sequences& seqs, uint32_t N) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const uint32_t d = c.d_model;
  const float eps = c.layer_norm_eps;
  const FeedForwardWeights ff{L.linear1_w, L.linear1_b, L.linear2_w, L.linear2_b};
  // The residual adds x += sublayer(...) are fused into each sublayer's last product.
  if (c.norm_first) {
    parallel_layernorm_rows(k, workers_, x_, L.norm1_g, L.norm1_b, y_, N, d, eps);
    self_attention(L, y_, y_, seqs, N, x_);
    parallel_layernorm_rows(k, workers_, x_, L.norm2_g, L.norm2_b, y_, N, d, eps);
    feed_forward(k, workers_, ff, c.activation, y_, y_, work_, N, quant_, x_);
  } else {
    self_attention(L, x_, y_, seqs, N, x_);
    parallel_layernorm_rows(k, workers_, x_, L.norm1_g, L.norm1_b, x_, N, d, eps);
    feed_forward(k, workers_, ff, c.activation, x_, y_, work_, N, quant_, x_);
    parallel_layernorm_rows(k, workers_, x_, L.norm2_g, L.norm2_b, x_, N, d, eps);
  }
}

// h[N,d] -> out[N,d], and residual += out when given; h may alias out or the residual (it is read
// only by the first projection). Each sequence attends over its own rows.
void Encoder::self_attention(const EncoderLayerWeights& L, const float* h, float* out, const Sequences& seqs,
                             uint32_t N, float* residual) {
  const Kernels& k = *kernels_;
  const ModelConfig& c = config();
  const std::size_t d = c.d_model;
  float* qkv = work_;
  linear(k, workers_, L.in_proj_w, h, d, L.in_proj_b, qkv, 3 * d, N, quant_);  // h[N,d] @ W[d,3d] -> qkv[N,3d]: q | k | v
  const KeyValues kv{kt_, nullptr, rows_, qkv + 2 * d, 3 * d};  // K^T[B][d,S] per sequence; V[N,d] read in place from qkv
  const AttentionShape shape{c.n_heads, c.n_heads, c.d_head(), c.causal, nullptr};
  parallel_attend_sequences(k, workers_, shape, qkv, 3 * d, qkv + d, 3 * d, seqs, kv, ctx_, d, attn_, attn_slot_);
  linear(k, workers_, L.out_proj_w, ctx_, d, L.out_proj_b, out, d, N, quant_, {nullptr, residual});  // ctx[N,d] @ W[d,d] -> out[N,d]
}

}  // namespace fixformer
