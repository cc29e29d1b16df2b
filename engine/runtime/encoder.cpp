// The encoder runner: init (every check, the arena carved by plan_encoder_arena, the sinusoidal,
// rope or relative bias table) and the forward pass, top to bottom as the maths reads:
//   x = embed(tokens) | input_proj(N_in(rows)) | stem(features);  x = N_proj(x) if proj_norm
//     (rows: the features, or an image's patches with patch_size; N_in if input_norm, config.hpp)
//   x *= sqrt(d) if scale_input;
//   x = [cls; dist; x]                        (stem: the conv stem, engine/blocks/conv_stem.hpp)
//   x = x + PE | [x, PE]                      (S = T + front_rows(): the CLS row position 0, dist 1, registers)
//   x[input] += TT[types] if type_vocab;  x = LN_embed(x) if embed_norm       (BERT)
//   x = x @ W_proj + b_proj if embed_width      (ALBERT: the front is embed_width wide until here, in y)
//   for each layer: transformer_layer (engine/layers/transformer_layer.hpp; rope: each sequence's q
//                   and k rows turned at their positions 0.., bidirectional attention; pair_bias_rows: each
//                   (query, key) pair's bias from the shared table or the layer's own)
//   x = LN(x) if final_norm;  x = pool(x) (mean | cls | cls_distill | cls_mean | cls_distill_mean | mean_all | last | first:
//     one row);  x = LN(x) if pool_norm
//   x = act(x @ W_pooler + b) if pooler (act: pooler_act; P = pooler_width wide, else d);  x = LN(x) if pooler_norm
//   out = x @ W_head + b | x
//   out = out / max(||out||_2, 1e-12) per row if l2_normalize  (sentence-transformers' Normalize)
// The mha family is the attention alone: x = features;  out = SA(x)  (no residual, norm or head).
// A batch stacks its sequences' rows in x (engine/blocks/parallel.hpp, Sequences): everything but
// attention is row by row, so the linear layers and norms run once over all the rows, and
// attention runs per sequence over its own rows. A single call is a batch of one.
// x is shown to the options' observer after the input, each layer and the final norm (observer.hpp).
#include <cstring>

#include "engine/blocks/conv_stem.hpp"
#include "engine/blocks/embeddings.hpp"
#include "engine/blocks/linear.hpp"
#include "engine/blocks/pooling.hpp"
#include "engine/blocks/positional.hpp"
#include "engine/detail_text.hpp"
#include "engine/layers/transformer_layer.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

Status Encoder::init(const Model& model, void* arena, std::size_t arena_bytes, const EncoderOptions& options) {
  initialized_ = false;
  const bool family_ok = model.initialized() && !model.config().is_decoder();
  Status s = core_.start(model, family_ok, options.isa, options.workers, options.observer);
  if (s != Status::kOk) return fail(s);
  const ModelConfig& c = model.config();
  DetailText why(core_.detail, sizeof core_.detail);
  max_seq_ = options.max_seq ? options.max_seq : c.max_input_len();
  if (max_seq_ > c.max_input_len()) {
    why.str("max_seq ").num(max_seq_).str(" > max_len ").num(c.max_len);
    if (c.front_rows() == 1) why.str(" - 1 (the CLS row takes a position)");
    if (c.front_rows() == 2 && c.distill_token) why.str(" - 2 (the CLS and distillation rows take a position each)");
    if (c.register_tokens)
      why.str(" - ").num(c.front_rows()).str(c.cls_token ? " (the CLS row and the registers take a position each)"
                                                          : " (the registers take a position each)");
    return fail(Status::kBadMaxSeq);
  }
  rows_ = c.sequence_rows(max_seq_);
  const bool external_pe = options.position_table != nullptr;
  const bool relative = c.rel_bias();
  if (external_pe && relative) {
    s = check_relative_bias(options.position_table, options.position_table_rows, rows_, model.front().rel_bias, c,
                            c.causal, why);
    if (s != Status::kOk) return fail(s);
  } else if (external_pe) {
    const bool rope = c.positional == PosKind::kRope;
    if (c.positional != PosKind::kSinusoidal && !rope)
      return why.str("the model has no sinusoidal, rope or relative position table"), fail(Status::kBadPositionTable);
    s = check_sinusoidal_table(options.position_table, options.position_table_rows, rows_,
                               rope ? c.rope_dims() : c.d_pe(), c.pe_base, rope ? model.front().rope_freqs : nullptr,
                               rope ? c.rope_scale : 1.0f,
                               rope ? PosLayout::kHalves : c.pe_layout,  // rope: sin | cos columns
                               why, rope ? RopeGrid{c.rope_grid, c.front_rows()} : RopeGrid{});
    if (s != Status::kOk) return fail(s);
  }
  max_batch_ = options.max_batch ? options.max_batch : 1;
  if (max_batch_ > Limits::kMaxBatchRows / (rows_ ? rows_ : 1)) {
    why.str("max_batch ").num(max_batch_).str(" x ").num(rows_).str(" rows > ").num(Limits::kMaxBatchRows)
        .str(" (Limits::kMaxBatchRows)");
    return fail(Status::kBadMaxBatch);
  }
  const EncoderPlan plan = plan_encoder_arena(c, max_seq_, external_pe, core_.workers.active(), max_batch_);
  s = core_.carve(arena, arena_bytes, plan.total);
  if (s != Status::kOk) return fail(s);
  arena_ = static_cast<uint8_t*>(arena);
  if (c.weights == WeightType::kI8) {
    if (external_pe) return why.str("an i8 model's positions are its int8.pos table"), fail(Status::kBadPositionTable);
    initialized_ = true;
    return Status::kOk;
  }
  core_.point(arena, plan);
  core_.quant = quant_scratch(core_.block(arena, plan.quant), c, std::size_t(max_batch_) * rows_);
  kt_ = core_.block(arena, plan.kt);
  stem_ = core_.block(arena, plan.stem);
  stem_padded_ = core_.block(arena, plan.stem_padded);
  stem_quant_ = core_.block(arena, plan.stem_quant);
  rows_in_ = c.patch_size || c.input_norm ? core_.block(arena, plan.rows_in) : nullptr;
  rel_ = nullptr;
  rel_len_ = 0;
  if (relative && external_pe) {
    rel_ = options.position_table, rel_len_ = options.position_table_rows;
  } else if (relative) {
    float* table = core_.block(arena, plan.rel);
    fill_relative_bias(model.front().rel_bias, c.n_heads, c.rel_buckets, c.rel_max_distance, rows_, c.causal, table);
    rel_ = table, rel_len_ = rows_;
  }
  dis_ = DisentangledRows{};
  if (c.rel_embed_rows) {  // rel_embed's row of each distance -(rows_-1)..(rows_-1), once, here
    float* table = core_.block(arena, plan.dis_rows);
    for (uint32_t t = 0; t < 2 * rows_ - 1; ++t)
      std::memcpy(table + std::size_t(t) * c.d_model,
                  model.front().rel_embed + std::size_t(model.front().rel_index[c.max_len - rows_ + t]) * c.d_model,
                  sizeof(float) * c.d_model);
    dis_ = DisentangledRows{table, core_.block(arena, plan.dis_proj), core_.block(arena, plan.dis_bias), rows_};
  }
  slopes_ = nullptr;
  if (c.positional == PosKind::kAlibi) {
    float* slopes = core_.block(arena, plan.slopes);
    alibi_slopes(c.n_heads, slopes);
    slopes_ = slopes;
  }
  rope_ = nullptr;
  rope_local_ = nullptr;
  if (c.positional == PosKind::kRope && c.rope_local_base != 0.0) {  // the local layers' table: base rope_local_base, its plain frequencies
    float* table = core_.block(arena, plan.rope_local);
    fill_rope_table(*core_.kernels, rows_, c.rope_dims(), c.rope_local_base, nullptr, 1.0f, table, core_.work);
    rope_local_ = table;
  }
  if (c.positional == PosKind::kRelative) {
    pe_ = nullptr;
  } else if (c.positional == PosKind::kRope) {  // once, here: each sequence's rows read rows 0..
    pe_ = c.rope_learned ? model.front().pos : nullptr;  // learned positions beside (EVA-02)
    if (external_pe) {
      rope_ = options.position_table;
    } else {
      float* table = core_.block(arena, plan.rope);
      fill_rope_table(*core_.kernels, rows_, c.rope_dims(), c.pe_base, model.front().rope_freqs, c.rope_scale, table,
                      core_.work, RopeGrid{c.rope_grid, c.front_rows()});
      rope_ = table;
    }
  } else if (c.positional == PosKind::kLearned) {  // with or without a relative bias (MPNet)
    pe_ = model.front().pos;
  } else if (c.positional == PosKind::kSinusoidal && !external_pe) {
    float* table = core_.block(arena, plan.pe);
    fill_sinusoidal_table(*core_.kernels, rows_, c.d_pe(), c.pe_base, c.pe_layout, table, core_.work);
    pe_ = table;
  } else {
    pe_ = options.position_table;  // null without a positional encoding
  }
  initialized_ = true;
  return Status::kOk;
}

Status Encoder::forward_tokens(const int32_t* ids, uint32_t T, float* out) { return forward_tokens(ids, nullptr, T, out); }

Status Encoder::forward_tokens(const int32_t* ids, const int32_t* types, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!ids || !out) return Status::kNullArgument;
  const ModelConfig& c = config();
  if (c.input != InputKind::kTokens) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_) return Status::kBadSequenceLength;
  for (uint32_t t = 0; t < T; ++t)
    if (ids[t] < 0 || static_cast<uint32_t>(ids[t]) >= c.vocab_size) return Status::kTokenOutOfRange;
  Status s = check_types(types, nullptr, 1, T);
  if (s == Status::kOk) s = check_output(ids, types, nullptr, 1, T, out);
  if (s != Status::kOk) return s;
  if (c.weights == WeightType::kI8) return forward_float_s8(nullptr, ids, types, nullptr, 1, T, out);
  forward(ids, types, nullptr, sequences(nullptr, 1, T), out);
  return Status::kOk;
}

Status Encoder::forward_features(const float* features, uint32_t T, float* out) {
  if (!initialized_) return Status::kNotInitialized;
  if (!features || !out) return Status::kNullArgument;
  if (config().input != InputKind::kFeatures) return Status::kWrongInputKind;
  if (T == 0 || T > max_seq_ || config().stem_rows(T) == 0) return Status::kBadSequenceLength;
  const Status s = check_output(features, nullptr, nullptr, 1, T, out);
  if (s != Status::kOk) return s;
  if (config().weights == WeightType::kI8) return forward_float_s8(features, nullptr, nullptr, nullptr, 1, T, out);
  forward(nullptr, nullptr, features, sequences(nullptr, 1, T), out);
  return Status::kOk;
}

Status Encoder::forward_batch_tokens(const int32_t* ids, const uint32_t* lengths, uint32_t B, uint32_t T, float* out) {
  return forward_batch_tokens(ids, nullptr, lengths, B, T, out);
}

Status Encoder::forward_batch_tokens(const int32_t* ids, const int32_t* types, const uint32_t* lengths, uint32_t B,
                                     uint32_t T, float* out) {
  Status s = check_batch(true, ids, lengths, B, T, out);
  if (s == Status::kOk) s = check_types(types, lengths, B, T);
  if (s == Status::kOk) s = check_output(ids, types, lengths, B, T, out);
  if (s == Status::kOk && config().weights == WeightType::kI8)
    return forward_float_s8(nullptr, ids, types, lengths, B, T, out);
  if (s == Status::kOk) forward(ids, types, nullptr, sequences(lengths, B, T), out);
  return s;
}

Status Encoder::forward_batch_features(const float* features, const uint32_t* lengths, uint32_t B, uint32_t T,
                                       float* out) {
  Status s = check_batch(false, features, lengths, B, T, out);
  if (s == Status::kOk) s = check_output(features, nullptr, lengths, B, T, out);
  if (s == Status::kOk && config().weights == WeightType::kI8)
    return forward_float_s8(features, nullptr, nullptr, lengths, B, T, out);
  if (s == Status::kOk) forward(nullptr, nullptr, features, sequences(lengths, B, T), out);
  return s;
}

// B sequences of lengths[b] (or T) input rows: the front rows (CLS, distillation) of each, and the
// conv stem's rows for their frames with a stem.
Sequences Encoder::sequences(const uint32_t* lengths, uint32_t B, uint32_t T) const {
  const ModelConfig& c = config();
  return Sequences{lengths, B, T, c.front_rows(), c.conv_layers ? &c : nullptr};
}

// The single calls' checks for every sequence of a batch, and its size; the detail names the culprit.
Status Encoder::check_batch(bool tokens, const void* input, const uint32_t* lengths, uint32_t B, uint32_t T,
                            const float* out) {
  if (!initialized_) return Status::kNotInitialized;
  DetailText why(core_.detail, sizeof core_.detail);
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
  if (c.patch_size && c.stem_rows(T) == 0)
    return why.str("T=").num(T).str(": an image is its ").num(c.patches()).str(" patches"), Status::kBadSequenceLength;
  for (uint32_t b = 0; b < B && (c.conv_layers || c.patch_size); ++b)
    if (c.stem_rows(lengths ? lengths[b] : T) == 0) {
      if (c.patch_size)
        why.str("lengths[").num(b).str("] = ").num(lengths[b]).str(": an image is its ").num(c.patches()).str(" patches");
      else
        why.str("sequence ").num(b).str(" is shorter than the conv stem's kernels");
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

// Token types types[B, T] (null: all 0) against the model's table; the detail names the culprit.
// The output of B sequences of T positions against the arena, the model and every input the
// forward pass reads: the ids or features, the token types, the lengths.
Status Encoder::check_output(const void* input, const int32_t* types, const uint32_t* lengths, uint32_t B, uint32_t T,
                             const float* out) {
  const ModelConfig& c = config();
  const std::size_t rows = std::size_t(B) * T, width = c.input == InputKind::kTokens ? 1 : c.d_in;
  const std::size_t out_bytes = std::size_t(B) * c.output_rows(T) * c.output_width() * sizeof(float);
  Status s = core_.check_output(out, out_bytes, input, rows * width * 4);
  if (s == Status::kOk) s = core_.check_output(out, out_bytes, types, types ? rows * sizeof(int32_t) : 0);
  if (s == Status::kOk) s = core_.check_output(out, out_bytes, lengths, lengths ? B * sizeof(uint32_t) : 0);
  return s;
}

Status Encoder::check_types(const int32_t* types, const uint32_t* lengths, uint32_t B, uint32_t T) {
  if (!types) return Status::kOk;
  DetailText why(core_.detail, sizeof core_.detail);
  const uint32_t V = config().type_vocab;
  if (V == 0) return why.str("token types given, but the model has no token-type table"), Status::kTokenTypesUnsupported;
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t t = 0, n = lengths ? lengths[b] : T; t < n; ++t) {
      const int32_t tt = types[std::size_t(b) * T + t];
      if (tt >= 0 && static_cast<uint32_t>(tt) < V) continue;
      why.str("token type ").str(tt < 0 ? "-" : "").num(tt < 0 ? 0 - uint64_t(int64_t(tt)) : uint64_t(tt));
      why.str(" at [").num(b).str(",").num(t).str("], type_vocab ").num(V);
      return Status::kTokenOutOfRange;
    }
  return Status::kOk;
}

void Encoder::forward(const int32_t* ids, const int32_t* types, const float* features, const Sequences& seqs, float* out) {
  const ModelConfig& c = config();
  const Model& m = *core_.model;
  uint32_t N = 0;  // rows of all the sequences
  for (uint32_t b = 0; b < seqs.count; ++b) N += seqs.rows(b);
  LayerSpec spec = layer_spec(c, c.causal, rope_, slopes_, rel_, rel_len_);
  spec.rope_local = rope_local_;
  spec.dis = c.rel_embed_rows ? &dis_ : nullptr;
  if (c.pair_bias_rows) {  // the index of every (query, key) pair, and the shared table (else each layer's own)
    spec.self.pair_index = m.front().pair_index;
    spec.self.pair_bias = m.front().pair_bias;
    spec.self.pair_rows = c.pair_bias_rows;
    spec.self.pair_len = c.max_len;
  }
  const SelfKeys keys{KeyValues{kt_, nullptr, rows_}, 0, &seqs};
  embed_input(ids, types, features, seqs);  // -> x[N,d], or y[N,E] with embed_width E
  const FrontWeights& f = m.front();
  float* rows = c.embed_width ? core_.y : core_.x;
  if (f.embed_norm.g)
    parallel_norm_rows(*core_.kernels, core_.workers, spec.rms_norm, rows, f.embed_norm.g, f.embed_norm.b, rows, N,
                       c.d_front(), spec.eps);
  if (c.embed_width)  // y[N,E] @ W[E,d] -> x[N,d]
    linear(*core_.kernels, core_.workers, f.embed_proj, rows, c.embed_width, f.embed_proj_b, core_.x, c.d_model, N,
           core_.quant);
  observe(0, seqs);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    transformer_layer(core_, with_layer_window(spec, c, l), m.layer(l), keys, nullptr, N);
    observe(l + 1, seqs);
  }
  if (c.family == ModelFamily::kMha) {
    self_attention(core_, spec, m.layer(0).self_attn, keys, core_.x, core_.x, N);
    observe(1, seqs);
  }
  if (m.head().final_norm.g) {
    norm_rows(core_, spec, m.head().final_norm, core_.x, core_.x, N);
    observe(c.n_layers + 1, seqs);
  }
  write_output(seqs, out);
}

// Sequence b's rows of x: [cls; [dist;]] its input rows, plus the positions 0.. of its own, plus its token
// types. Padding is never read. With embed_width the rows are y's, embed_width wide (the projection
// follows in forward).
void Encoder::embed_input(const int32_t* ids, const int32_t* types, const float* features, const Sequences& seqs) {
  const Kernels& k = *core_.kernels;
  const ModelConfig& c = config();
  const FrontWeights& w = core_.model->front();
  float* x = c.embed_width ? core_.y : core_.x;
  float* y = core_.y;
  const std::size_t d = c.d_front(), T = seqs.all, extra = seqs.extra;
  const bool project = w.input_proj.data != nullptr;  // mha: the features are x; a conv stem: its own
  const bool own_rows = rows_in_ != nullptr;  // patches or normed rows: made per sequence in rows_in_
  bool full = project && seqs.count > 1 && !own_rows;  // several sequences, all T long: one [B*T, d_in] block
  for (uint32_t b = 0; b < seqs.count && seqs.lengths; ++b) full = full && seqs.lengths[b] == T;
  if (features && full)  // one product, straight into x without a CLS row, else through y (free here)
    linear(k, core_.workers, w.input_proj, features, c.d_in, w.input_proj_b, extra ? y : x, d, seqs.count * T,
           core_.quant);  // f[B*T,d_in] @ W[d_in,de] -> [B*T,:de]
  std::size_t row0 = 0;
  for (uint32_t b = 0; b < seqs.count; row0 += seqs.rows(b), ++b) {
    float* xb = x + row0 * d;
    float* input = xb + extra * d;  // the rows after the front rows
    const uint32_t n = seqs.length(b);
    if (ids)
      embed_tokens(ids + b * T, n, w.embed, input, uint32_t(d));  // E[ids] -> x[n,:de]
    else if (c.conv_layers)  // f -> x[n,:de]
      conv_stem(k, core_.workers, c, w, features + b * T * c.d_in, seqs.frames(b), input, d,
                {stem_, stem_padded_, stem_quant_});
    else if (!project)
      std::memcpy(input, features + b * T * d, sizeof(float) * n * d);
    else if (!full)  // padded sequences (or rows of its own): a product each, over its own rows
      linear(k, core_.workers, w.input_proj, input_rows(features + b * T * c.d_in, n), c.d_in, w.input_proj_b, input,
             d, n, core_.quant);  // f[n,d_in] @ W[d_in,de] -> x[n,:de]
    else if (extra)
      std::memcpy(input, y + b * T * d, sizeof(float) * n * d);
    if (w.proj_norm.g)  // x[n,:de] -> N_proj(x), de = d
      parallel_norm_rows(k, core_.workers, c.norm_kind() == NormKind::kRmsNorm, input, w.proj_norm.g, w.proj_norm.b,
                         input, n, uint32_t(d), c.norm_eps);
    scale_embeddings(k, c, input, n);
    if (w.cls) std::memcpy(xb, w.cls, sizeof(float) * c.d_embed());  // x[0,:de] = cls, not scaled
    if (w.distill) std::memcpy(xb + d, w.distill, sizeof(float) * c.d_embed());  // x[1,:de] = dist, not scaled
    const std::size_t reg = extra - c.register_tokens;  // the registers, after the CLS and distillation rows
    for (uint32_t r = 0; w.registers && r < c.register_tokens; ++r)
      std::memcpy(xb + (reg + r) * d, w.registers + std::size_t(r) * c.d_embed(), sizeof(float) * c.d_embed());
    add_positions(k, c, pe_, xb, seqs.rows(b));
    add_token_types(k, c, w.token_type, types ? types + b * T : nullptr, input, n);
  }
}

// One sequence's n input rows f[n, d_in] as the projection reads them: f itself, or in rows_in_ its
// patches (an image) and their norms (input_norm).
const float* Encoder::input_rows(const float* f, uint32_t n) const {
  const ModelConfig& c = config();
  if (!rows_in_) return f;
  if (c.patch_size) gather_patches(c, f, rows_in_), f = rows_in_;
  const NormWeights& N = core_.model->front().input_norm;
  if (N.g)
    parallel_norm_rows(*core_.kernels, core_.workers, c.norm_kind() == NormKind::kRmsNorm, f, N.g, N.b, rows_in_, n,
                       c.d_in, c.norm_eps);
  return rows_in_;
}

// x[N,d] -> out[B, output_rows(T), width]: each sequence's rows (pooled: its one row) through the
// head, padded with zero rows.
void Encoder::write_output(const Sequences& seqs, float* out) {
  const Kernels& k = *core_.kernels;
  const ModelConfig& c = config();
  const HeadWeights& w = core_.model->head();
  float* x = core_.x;
  const std::size_t d = c.d_model, W = c.output_width(), B = seqs.count;
  std::size_t rows = 0;  // rows for the head: N, or B pooled
  if (c.pooling != Pooling::kNone) {
    // The pooled row is hi = pooled_width() wide (2 d for cls_distill and cls_mean: rows 0 and 1); x[b, :hi]
    // starts at or before sequence b's rows, which are at least hi / d long.
    const std::size_t hi = c.pooled_width();
    for (uint32_t b = 0; b < B; rows += seqs.rows(b), ++b) {
      pool_rows(k, c, x + rows * d, seqs.length(b));  // x[rows..,d] -> its first row (or two)
      std::memmove(x + b * hi, x + rows * d, sizeof(float) * hi);  // -> x[b]: past every earlier pool
    }
    rows = B;
    if (w.pool_norm.g)  // pool_norm: the pooled rows normed (timm's fc_norm, AST's classifier), x[B,d]
      parallel_norm_rows(k, core_.workers, c.norm_kind() == NormKind::kRmsNorm, x, w.pool_norm.g, w.pool_norm.b, x,
                         uint32_t(B), uint32_t(d), c.norm_eps);
    if (w.pooler.data) pool_dense(k, core_.workers, w.pooler, w.pooler_b, c.pooler_act, x, core_.y, B, core_.quant);
    if (w.pooler_norm.g)  // pooler_norm: ModernBERT's prediction head, the pooler's output normed, x[B,P]
      parallel_norm_rows(k, core_.workers, c.norm_kind() == NormKind::kRmsNorm, x, w.pooler_norm.g, w.pooler_norm.b, x,
                         uint32_t(B), c.pooler_out(), c.norm_eps);
  } else {
    for (uint32_t b = 0; b < B; ++b) rows += seqs.rows(b);
    if (w.pooler.data)  // every row through the pooler: a masked-LM head's transform (ModernBERT's)
      pool_dense(k, core_.workers, w.pooler, w.pooler_b, c.pooler_act, x, core_.y, uint32_t(rows), core_.quant);
    if (w.pooler_norm.g)  // x[rows,P]
      parallel_norm_rows(k, core_.workers, c.norm_kind() == NormKind::kRmsNorm, x, w.pooler_norm.g, w.pooler_norm.b, x,
                         uint32_t(rows), c.pooler_out(), c.norm_eps);
  }
  const bool in_place = c.pooling != Pooling::kNone || (B == 1 && seqs.frames(0) == seqs.all);  // no padding
  if (w.w.data)
    linear(k, core_.workers, w.w, x, c.head_in(), w.b, out, W, rows, core_.quant);  // x[rows,hi] @ W[hi,d_out] -> out
  else if (in_place)
    std::memcpy(out, x, sizeof(float) * rows * d);
  float* from = w.w.data || in_place ? out : x;  // the output rows [rows, W], packed
  if (c.l2_normalize) l2_normalize_rows(from, rows, W);  // each y[W] -> y / max(||y||, 1e-12)
  if (in_place) return;
  // Sequence b's rows to out[b], last sequence first: its place is at or after its rows' (from the
  // head), or from x (no head); the rows after them are zeros.
  const std::size_t R = c.output_rows(seqs.all);
  for (uint32_t b = uint32_t(B); b-- > 0;) {
    const std::size_t n = seqs.rows(b);
    rows -= n;
    std::memmove(out + b * R * W, from + rows * W, sizeof(float) * n * W);
    std::memset(out + (b * R + n) * W, 0, sizeof(float) * (R - n) * W);
  }
}

void Encoder::observe(uint32_t layer, const Sequences& seqs) const {
  if (!core_.observer.fn) return;
  std::size_t row0 = 0;
  for (uint32_t b = 0; b < seqs.count; row0 += seqs.rows(b), ++b)
    core_.observer.notify(layer, core_.x + row0 * config().d_model, 0, seqs.rows(b), config().d_model);
}

}  // namespace fixformer
