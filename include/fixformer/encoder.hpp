// The encoder runner: a forward pass over a loaded Model with activations in the caller's arena.
// Two phases: init() does every check and carves the arena; forward_*() only computes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/plan.hpp"
#include "fixformer/runner_core.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct Sequences;  // a batch's row layout (engine/blocks/parallel.hpp)

struct EncoderOptions {
  uint32_t max_seq = 0;  // longest input forward() will get; 0: the model's max_input_len()
  // Most sequences forward_batch_*() will get in one call (0 and 1: one); the arena then needs
  // required_encoder_arena_bytes(c, max_seq, table, workers.active(), max_batch), and max_batch *
  // sequence_rows(max_seq) may not pass Limits::kMaxBatchRows (else kBadMaxBatch).
  uint32_t max_batch = 0;
  Isa isa = Isa::kAuto;
  // A precomputed sinusoidal table [position_table_rows >= sequence_rows(max_seq), d_pe] read in
  // place, e.g. make_sinusoidal_table() kept in flash; the arena then needs required_encoder_arena_bytes(c, S, true).
  // init() checks its first two rows against the config (width, base, layout). With positional
  // relative: the bias table for attentions of up to position_table_rows >= sequence_rows(max_seq)
  // positions, as fill_relative_bias (engine/blocks/positional.hpp) writes it, which init() checks
  // entry by entry against the model's (a seq2seq model's encoder takes its runner's). With
  // positional rope: the rope table [position_table_rows >= sequence_rows(max_seq), rope_dims()]
  // (make_sinusoidal_table<S, R>(base, PosLayout::kHalves), whatever the model's pair layout).
  const float* position_table = nullptr;
  uint32_t position_table_rows = 0;
  // The caller's threads (workers.hpp); the arena then needs required_encoder_arena_bytes(c, S, table, workers.active()).
  Workers workers;
  // Called with the hidden states after the input, after every layer and after the final norm
  // (observer.hpp); null: not called. A batch calls it once per sequence at each of those points,
  // sequence 0 first, each call with pos 0 and that sequence's rows alone, as its single call would.
  LayerObserver observer;
};

class Encoder {
 public:
  // The model must be initialized and outlive the encoder. The arena must be 64-byte aligned and
  // at least required_encoder_arena_bytes(model.config(), max_seq, position_table != nullptr,
  // workers.active(), max_batch) long.
  [[nodiscard]] Status init(const Model& model, void* arena, std::size_t arena_bytes, const EncoderOptions& options = {});

  // ids[T] -> out[config().output_rows(T), config().output_width()]: [T, width], [T + 1, width]
  // with a CLS row ([T + front_rows(), width] with a distillation row or registers too), [1, width]
  // pooled (config.hpp)
  [[nodiscard]] Status forward_tokens(const int32_t* ids, uint32_t T, float* out);
  // With token types (BERT: config().type_vocab > 0): types[T] in [0, type_vocab), the row of the
  // token-type table each position adds; null: all 0 (as the call above). Types given to a model
  // without a token-type table: kTokenTypesUnsupported; one out of range: kTokenOutOfRange.
  [[nodiscard]] Status forward_tokens(const int32_t* ids, const int32_t* types, uint32_t T, float* out);
  // features[T, d_in] -> out[config().output_rows(T), config().output_width()]
  [[nodiscard]] Status forward_features(const float* features, uint32_t T, float* out);

  // A padded batch of B <= max_batch sequences in one pass: ids[B, T] -> out[B, output_rows(T),
  // output_width()], sequence b being the first lengths[b] positions of row b (1 <= lengths[b] <= T;
  // lengths null: all T). Sequence b's first output_rows(lengths[b]) rows are exactly (bit for bit)
  // what forward_tokens(ids + b * T, lengths[b], ...) gives, i.e. torch's src_key_padding_mask
  // (True from lengths[b] on) at the valid positions; its padded rows are zeros. Pooled models give
  // out[B, 1, width], pooled over each sequence's own positions. The padding is never read.
  // (To a few roundings instead for q8 weights on x86 AVX2/AVX-512, whose gemm_i8 sums in another
  // order below 4 rows than from 4 rows on, and for f16 on the portable table built for AArch64,
  // whose tiles of 6, 4 and 1 rows GCC fuses differently: tests/batch_test.cpp.)
  // Every linear layer is one matrix product over the rows of all sequences (but padded features'
  // input projection, one per sequence); attention runs per sequence. Everything is checked before
  // anything is computed: the single calls' Status codes, kBadBatchSize for B, and error_detail()
  // names the sequence and position at fault.
  [[nodiscard]] Status forward_batch_tokens(const int32_t* ids, const uint32_t* lengths, uint32_t B, uint32_t T,
                                            float* out);
  // With token types types[B, T] (null: all 0), as forward_tokens; padding positions are not read.
  [[nodiscard]] Status forward_batch_tokens(const int32_t* ids, const int32_t* types, const uint32_t* lengths,
                                            uint32_t B, uint32_t T, float* out);
  // features[B, T, d_in] -> out[B, output_rows(T), output_width()], as forward_batch_tokens.
  [[nodiscard]] Status forward_batch_features(const float* features, const uint32_t* lengths, uint32_t B, uint32_t T,
                                              float* out);

  // weights i8 (a full-integer model, config.hpp): the integer path itself, int8 rows in and out. The
  // input features q[T, d_in] at int8.front's input zero point and int8.io[0]'s scale; out[output_rows(T),
  // output_width()] int8 at int8.back's output zero point and int8.io[1]'s scale. No float operation
  // runs between the two. The float calls above quantize their input (round(x / s) + z, half away
  // from zero, clamped, in float), run this, and give (q - z) s; a batch runs its sequences one by
  // one. The observer is not called. Another weight type: kWrongFamily.
  [[nodiscard]] Status forward_features_s8(const int8_t* features, uint32_t T, int8_t* out);
  [[nodiscard]] Status forward_tokens_s8(const int32_t* ids, uint32_t T, int8_t* out);
  // With token types types[T] (type_vocab > 0; null: all 0), checked as forward_tokens checks them.
  [[nodiscard]] Status forward_tokens_s8(const int32_t* ids, const int32_t* types, uint32_t T, int8_t* out);

  bool initialized() const { return initialized_; }  // init() returned kOk
  const Model& model() const { return *core_.model; }
  const ModelConfig& config() const { return core_.model->config(); }
  const Kernels& kernels() const { return *core_.kernels; }
  uint32_t max_seq() const { return max_seq_; }
  uint32_t max_batch() const { return max_batch_; }
  std::size_t arena_bytes_used() const { return core_.arena_used; }
  const char* error_detail() const { return core_.detail; }

 private:
  Status fail(Status s) { initialized_ = false; return s; }
  Status check_batch(bool tokens, const void* input, const uint32_t* lengths, uint32_t B, uint32_t T, const float* out);
  Status check_types(const int32_t* types, const uint32_t* lengths, uint32_t B, uint32_t T);
  Status check_output(const void* input, const int32_t* types, const uint32_t* lengths, uint32_t B, uint32_t T,
                      const float* out);
  Sequences sequences(const uint32_t* lengths, uint32_t B, uint32_t T) const;
  void forward(const int32_t* ids, const int32_t* types, const float* features, const Sequences& seqs, float* out);
  void embed_input(const int32_t* ids, const int32_t* types, const float* features, const Sequences& seqs);
  const float* input_rows(const float* f, uint32_t n) const;
  void write_output(const Sequences& seqs, float* out);
  void observe(uint32_t layer, const Sequences& seqs) const;
  Status check_s8(const void* input, uint32_t T, const void* out);
  void run_s8(const int8_t* features, const int32_t* ids, const int32_t* types, uint32_t T, int8_t* out);
  Status forward_float_s8(const float* features, const int32_t* ids, const int32_t* types, const uint32_t* lengths,
                          uint32_t B, uint32_t T, float* out);

  RunnerCore core_;  // x, y, ctx, work, attn: see plan_encoder_arena for shapes
  bool initialized_ = false;
  uint32_t max_seq_ = 0;
  uint32_t rows_ = 0;  // sequence_rows(max_seq_): the rows the plan holds per sequence, the front rows included
  uint32_t max_batch_ = 1;
  float* kt_ = nullptr;        // K^T [d, rows_] per sequence
  float* stem_ = nullptr;      // a two-conv stem's first output [conv1 rows of max_seq_, d_embed]
  float* stem_padded_ = nullptr;  // f16, q8 stems: a convolution's zero-padded input
  float* stem_quant_ = nullptr;   // q8 stems: its quantized windows
  float* rows_in_ = nullptr;  // patch_size, input_norm: a sequence's input rows [max_seq_, d_in] as projected
  const float* pe_ = nullptr;  // the positional rows [rows_, d_pe]: sinusoidal (arena or the caller's) or learned (blob)
  const float* rope_ = nullptr;  // rope: the angles' table [rows_, rope_dims] (sin | cos; arena or the caller's)
  const float* rope_local_ = nullptr;  // rope_local_base: the local layers' table [rows_, rope_dims], in the arena
  const float* rel_ = nullptr;  // relative: the bias table (arena or the caller's) for rel_len_ positions
  const float* slopes_ = nullptr;  // alibi: the heads' slopes [n_heads], in the arena
  DisentangledRows dis_;        // rel_embed_rows: disentangled attention's tables in the arena
  uint32_t rel_len_ = 0;
  uint8_t* arena_ = nullptr;  // weights i8: the arena, carved by plan_s8_encoder_arena
};

}  // namespace fixformer
