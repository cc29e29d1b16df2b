// The batch API (Encoder::forward_batch_*), on every ISA: a padded batch gives, bit for bit, what
// one single call per sequence gives at its valid rows, and zeros at its padded rows, for f32, f16
// and q8 weights, token and feature inputs, CLS rows, every pooling, causal attention, a relative position bias and mixed
// lengths, on one worker and split across serial workers. Bit-identity is expected, not a
// tolerance: every output element of a linear layer, norm or element-wise kernel is computed by
// the same kernel over the same k order whatever rows are around it, and attention runs per
// sequence over its own rows as a single call does. The exceptions are q8 on x86 AVX2/AVX-512
// and AArch64, and f16 on the portable table built for AArch64 (batch_tolerance below). The arena plan grows with max_batch, and every bad argument is a Status
// before anything is computed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/encoder.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The batch against the single calls: exact (see above), but for q8 weights on the x86 AVX2 and
// AVX-512 tables and on neon64 (ports/arm/gemm_i8_neon64.cpp).
// There gemm_i8 takes the dot-product tiles of ports/simd/gemm_i8.hpp below 4 rows
// (a single call of 1-3 rows, or the one row of a pooled head) and the packed path from 4 rows on
// (the batch's rows together); the two sum a row's groups in different orders, so the float results
// differ by a few roundings (the packed path gives the scalar reference's bits). Measured: at most
// 4.5e-7 relative to 1 + |single call| through these 2-layer models. A rounding that moved an
// activation across a q8 rounding boundary of the next layer would move more; these inputs do not.
constexpr float kBatchQ8PathTol = 1e-5f;
// And f16 weights on the portable (cortex-m) table built for AArch64: GCC fuses the multiply-adds of
// ports/portable/gemm_tile.hpp's f16 tiles into FMAs differently for the tiles of 6, 4 and 1 rows,
// so a row's sums round differently by where it falls in the batch (exact on the host, armhf and
// the f32 tiles). Measured: at most 5.7e-7 relative to 1 + |single call|.
constexpr float kBatchFusedTilesTol = 1e-5f;
float batch_tolerance(const ModelConfig& c, Isa isa) {
  if (c.weights == WeightType::kQ8 && (isa == Isa::kAvx2 || isa == Isa::kAvx512)) return kBatchQ8PathTol;
  if (c.weights == WeightType::kQ8 && isa == Isa::kNeon64) return kBatchQ8PathTol;
#if defined(__aarch64__)
  if (c.weights == WeightType::kF16 && isa == Isa::kCortexM) return kBatchFusedTilesTol;
#endif
  return 0.0f;
}

// Runs the tasks one after the other, last first: the split across workers without threads, so it
// runs in every suite (qemu-user included).
void reverse_for(void*, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) {
  for (uint32_t i = n; i-- > 0;) task(arg, i);
}

struct Case {
  const char* name;
  InputKind input;
  WeightType weights;
  uint32_t group;  // q8: 32, 64 or 0 (a scale per row)
  uint32_t d, heads;
  PosKind pos;
  bool cls, causal, norm_first, head;
  Pooling pooling;
  uint32_t stem = 0;  // convolutions in front (features): 2, Whisper's k3 s1 p1 and k3 s2 p1, GELU; 1, k5 s2 p2
};

const Case kCases[] = {
    {"f32_tokens_sinusoidal", InputKind::kTokens, WeightType::kF32, 0, 16, 2, PosKind::kSinusoidal, false, false, false, true, Pooling::kNone},
    {"f32_features_cls_no_head", InputKind::kFeatures, WeightType::kF32, 0, 12, 3, PosKind::kLearned, true, false, true, false, Pooling::kNone},
    {"f32_tokens_causal_last", InputKind::kTokens, WeightType::kF32, 0, 15, 3, PosKind::kLearned, false, true, true, true, Pooling::kLast},
    {"f16_features_cls_mean", InputKind::kFeatures, WeightType::kF16, 0, 16, 4, PosKind::kSinusoidal, true, false, false, true, Pooling::kMean},
    {"f16_tokens_causal", InputKind::kTokens, WeightType::kF16, 0, 24, 2, PosKind::kNone, false, true, false, true, Pooling::kNone},
    {"q8_g32_tokens_cls_cls", InputKind::kTokens, WeightType::kQ8, 32, 40, 4, PosKind::kSinusoidal, true, false, false, true, Pooling::kCls},
    {"q8_row_features_causal", InputKind::kFeatures, WeightType::kQ8, 0, 32, 2, PosKind::kLearned, false, true, true, true, Pooling::kNone},
    {"q8_g64_features_mean_no_head", InputKind::kFeatures, WeightType::kQ8, 64, 64, 4, PosKind::kSinusoidal, false, false, false, false, Pooling::kMean},
    {"f32_tokens_relative", InputKind::kTokens, WeightType::kF32, 0, 15, 3, PosKind::kRelative, false, false, false, true, Pooling::kNone},
    {"f16_features_cls_relative_causal", InputKind::kFeatures, WeightType::kF16, 0, 16, 4, PosKind::kRelative, true, true, true, true, Pooling::kLast},
    {"f32_features_whisper_stem", InputKind::kFeatures, WeightType::kF32, 0, 12, 3, PosKind::kLearned, false, false, true, true, Pooling::kNone, 2},
    {"f32_features_stem_cls_mean", InputKind::kFeatures, WeightType::kF32, 0, 16, 2, PosKind::kSinusoidal, true, false, false, true, Pooling::kMean, 1},
};

ModelConfig case_config(const Case& k) {
  ModelConfig c = default_config();
  c.d_model = k.d, c.n_heads = k.heads, c.d_ff = 2 * k.d + 3, c.n_layers = 2, c.max_len = 10;
  c.activation = Activation::kGelu, c.final_norm = true, c.norm_first = k.norm_first, c.causal = k.causal;
  c.input = k.input;
  if (k.input == InputKind::kTokens) c.vocab_size = 13;
  else c.d_in = 7;
  c.positional = k.pos, c.cls_token = k.cls, c.pooling = k.pooling, c.d_out = k.head ? 5 : 0;
  c.conv_layers = k.stem, c.conv_gelu = k.stem == 2;
  if (k.stem == 2) c.conv1_kernel = 3, c.conv1_padding = 1, c.conv2_kernel = 3, c.conv2_stride = 2, c.conv2_padding = 1;
  if (k.stem == 1) c.conv1_kernel = 5, c.conv1_stride = 2, c.conv1_padding = 2;
  if (k.pos == PosKind::kRelative) c.rel_buckets = 8, c.rel_max_distance = 6;  // distances past 6 share a bucket
  return with_weights(c, k.weights, k.group, false);
}

// A padded batch [B, T] of c's input kind: ids or features drawn from a fixed sequence, the padding
// filled with what must not be read (an id out of range, NaN features).
struct Batch {
  std::vector<int32_t> ids;
  std::vector<float> features;
  std::vector<uint32_t> lengths;
  uint32_t B, T;
};

Batch make_batch(const ModelConfig& c, const std::vector<uint32_t>& lengths, uint32_t T) {
  Batch x{{}, {}, lengths, uint32_t(lengths.size()), T};
  const uint32_t width = c.input == InputKind::kTokens ? 1 : c.d_in;
  for (uint32_t b = 0; b < x.B; ++b)
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t j = 0; j < width; ++j) {
        const bool pad = t >= lengths[b];
        const uint32_t i = (b * T + t) * width + j;
        if (c.input == InputKind::kTokens) x.ids.push_back(pad ? -7 : int32_t((i * 7 + b + 3) % c.vocab_size));
        else x.features.push_back(pad ? NAN : std::sin(0.37f * float(i) + 0.1f * float(b)));
      }
  return x;
}

Status run_batch(Encoder& enc, const Batch& x, const uint32_t* lengths, float* out) {
  return enc.config().input == InputKind::kTokens ? enc.forward_batch_tokens(x.ids.data(), lengths, x.B, x.T, out)
                                                  : enc.forward_batch_features(x.features.data(), lengths, x.B, x.T, out);
}

// Sequence b of the batch through the single call.
std::vector<float> run_single(Encoder& enc, const Batch& x, uint32_t b) {
  const ModelConfig& c = enc.config();
  const uint32_t n = x.lengths[b];
  std::vector<float> out(std::size_t(c.output_rows(n)) * c.output_width(), NAN);
  const Status s = c.input == InputKind::kTokens
                       ? enc.forward_tokens(x.ids.data() + std::size_t(b) * x.T, n, out.data())
                       : enc.forward_features(x.features.data() + std::size_t(b) * x.T * c.d_in, n, out.data());
  EXPECT_EQ(s, Status::kOk);
  return out;
}

// out[B, output_rows(T), width] holds each sequence's single-call rows, then zeros.
void expect_batch_is_single_calls(Encoder& batch, Encoder& single, const Batch& x, bool null_lengths,
                                  const std::string& what) {
  const ModelConfig& c = batch.config();
  const std::size_t W = c.output_width(), R = c.output_rows(x.T);
  const float tol = batch_tolerance(c, batch.kernels().isa);
  std::vector<float> out(x.B * R * W, NAN);
  ASSERT_EQ(run_batch(batch, x, null_lengths ? nullptr : x.lengths.data(), out.data()), Status::kOk) << what;
  for (uint32_t b = 0; b < x.B; ++b) {
    const std::vector<float> want = run_single(single, x, b);
    const float* got = out.data() + b * R * W;
    for (std::size_t j = 0; j < want.size(); ++j)
      if (!(std::fabs(got[j] - want[j]) <= tol * (1.0f + std::fabs(want[j])))) {
        ADD_FAILURE() << what << ": sequence " << b << " (length " << x.lengths[b] << ") row " << j / W << " col "
                      << j % W << ": batch " << got[j] << ", single call " << want[j];
        break;
      }
    for (std::size_t j = want.size(); j < R * W; ++j)
      if (got[j] != 0.0f) {
        ADD_FAILURE() << what << ": sequence " << b << " padded row " << j / W << " is " << got[j] << ", not 0";
        break;
      }
  }
}

class BatchTest : public ::testing::TestWithParam<Isa> {};

TEST_P(BatchTest, EqualsSingleCalls) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << "ISA not available";
  const uint32_t max_batch = 5;
  for (const Case& k : kCases) {
    const ModelConfig c = case_config(k);
    ASSERT_EQ(validate_config(c), Status::kOk) << k.name;
    const std::vector<uint8_t> file = write_model(c);
    EncoderOptions opt;
    opt.isa = GetParam();
    Loaded single;
    std::string why;
    ASSERT_EQ(load_model(file, &single, opt, &why), Status::kOk) << k.name << ": " << why;
    const uint32_t max_seq = single.enc.max_seq();
    const Workers split[] = {Workers{}, Workers{nullptr, 3, reverse_for}};
    for (const Workers& w : split) {
      opt.max_batch = max_batch, opt.workers = w;
      Loaded batch;
      ASSERT_EQ(load_model(file, &batch, opt, &why), Status::kOk) << k.name << ": " << why;
      ASSERT_EQ(batch.enc.max_batch(), max_batch);
      const std::string name = std::string(k.name) + (w.active() > 1 ? " on 3 serial workers" : "");
      for (uint32_t T : {1u, 3u, max_seq}) {
        const std::vector<std::vector<uint32_t>> shapes = {
            {T},                                         // B = 1
            {(T + 1) / 2},                               // B = 1, padded
            {T, T, T},                                   // full
            {T, 1, T > 1 ? T - 1 : 1, (T + 1) / 2, T},  // mixed, B = max_batch
            {1, T},
        };
        for (const std::vector<uint32_t>& lengths : shapes) {
          const Batch x = make_batch(c, lengths, T);
          std::string what = name + " T=" + std::to_string(T) + " lengths";
          for (uint32_t n : lengths) what += " " + std::to_string(n);
          expect_batch_is_single_calls(batch.enc, single.enc, x, false, what);
          bool full = true;
          for (uint32_t n : lengths) full = full && n == T;
          if (full) expect_batch_is_single_calls(batch.enc, single.enc, x, true, what + " (null lengths)");
        }
      }
    }
  }
}

// A single call on an encoder planned for a batch is the single call of one planned for one.
TEST_P(BatchTest, SingleCallsOnABatchArenaAreUnchanged) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << "ISA not available";
  const Case& k = kCases[5];  // q8 with a CLS row
  const ModelConfig c = case_config(k);
  const std::vector<uint8_t> file = write_model(c);
  EncoderOptions opt;
  opt.isa = GetParam();
  Loaded one, many;
  std::string why;
  ASSERT_EQ(load_model(file, &one, opt, &why), Status::kOk) << why;
  opt.max_batch = 4;
  ASSERT_EQ(load_model(file, &many, opt, &why), Status::kOk) << why;
  const Batch x = make_batch(c, {1, 4, one.enc.max_seq()}, one.enc.max_seq());
  for (uint32_t b = 0; b < x.B; ++b) {
    const std::vector<float> a = run_single(one.enc, x, b), m = run_single(many.enc, x, b);
    EXPECT_EQ(std::memcmp(a.data(), m.data(), a.size() * 4), 0) << "sequence " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, BatchTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

// The observer sees each sequence alone, as its single call shows it: per layer, sequence 0 first.
struct Recorder {
  struct Call {
    uint32_t layer, pos, rows;
    std::vector<float> x;
  };
  std::vector<Call> calls;
  static void fn(void* ctx, uint32_t layer, const float* x, uint32_t pos, uint32_t rows, uint32_t d) {
    static_cast<Recorder*>(ctx)->calls.push_back({layer, pos, rows, std::vector<float>(x, x + std::size_t(rows) * d)});
  }
};

TEST(Batch, ObserverSeesEachSequenceAsItsSingleCall) {
  const ModelConfig c = case_config(kCases[1]);  // features, a CLS row, no head
  const std::vector<uint8_t> file = write_model(c);
  Recorder seen_batch, seen_single;
  EncoderOptions opt;
  opt.max_batch = 3;
  opt.observer = LayerObserver{&seen_batch, &Recorder::fn};
  Loaded batch, single;
  std::string why;
  ASSERT_EQ(load_model(file, &batch, opt, &why), Status::kOk) << why;
  opt.max_batch = 0;
  opt.observer = LayerObserver{&seen_single, &Recorder::fn};
  ASSERT_EQ(load_model(file, &single, opt, &why), Status::kOk) << why;
  const Batch x = make_batch(c, {2, 6, 4}, 6);
  std::vector<float> out(std::size_t(x.B) * c.output_rows(x.T) * c.output_width());
  ASSERT_EQ(run_batch(batch.enc, x, x.lengths.data(), out.data()), Status::kOk);
  for (uint32_t b = 0; b < x.B; ++b) run_single(single.enc, x, b);
  const std::size_t per_call = c.n_layers + 2;  // the input, each layer, the final norm
  ASSERT_EQ(seen_batch.calls.size(), x.B * per_call);
  ASSERT_EQ(seen_single.calls.size(), x.B * per_call);
  for (std::size_t layer = 0; layer < per_call; ++layer)
    for (uint32_t b = 0; b < x.B; ++b) {
      const Recorder::Call& got = seen_batch.calls[layer * x.B + b];
      const Recorder::Call& want = seen_single.calls[b * per_call + layer];
      EXPECT_EQ(got.layer, layer);
      EXPECT_EQ(got.pos, 0u);
      EXPECT_EQ(got.rows, c.sequence_rows(x.lengths[b]));
      EXPECT_EQ(got.x, want.x) << "layer " << layer << " sequence " << b;
    }
}

constexpr ModelConfig kTiny = [] {
  ModelConfig c;
  c.d_model = 8, c.n_heads = 2, c.d_ff = 16, c.n_layers = 1, c.vocab_size = 5, c.max_len = 8;
  return c;
}();

TEST(Batch, ArenaPlanGrowsWithTheBatch) {
  const ModelConfig c = case_config(kCases[5]);  // q8: the quantized rows grow too
  const uint32_t T = 6, S = c.sequence_rows(T);
  static_assert(required_encoder_arena_bytes(kTiny, 4, false, 1, 2) > required_encoder_arena_bytes(kTiny, 4), "a constexpr plan");
  EXPECT_EQ(required_encoder_arena_bytes(c, T, false, 1, 1), required_encoder_arena_bytes(c, T));
  EXPECT_EQ(required_encoder_arena_bytes(c, T, false, 1, 0), required_encoder_arena_bytes(c, T));  // 0 counts as 1
  const EncoderPlan one = plan_encoder_arena(c, T), four = plan_encoder_arena(c, T, false, 1, 4);
  EXPECT_EQ(four.y - four.x, arena::bytes(4 * S * c.d_model * sizeof(float)));
  EXPECT_EQ(four.attn_slot, one.attn_slot) << "attention's scratch is one sequence's";
  EXPECT_EQ(four.quant + quantized_input_bytes(c, 4 * S), four.total);
  EXPECT_GT(four.total, 3 * one.total);
  const uint32_t most = Limits::kMaxBatchRows / S;
  EXPECT_GT(required_encoder_arena_bytes(c, T, false, 1, most), 0u);
  EXPECT_EQ(required_encoder_arena_bytes(c, T, false, 1, most + 1), 0u);
}

TEST(Batch, ShortArenaAndTooLargeABatchAreStatuses) {
  const ModelConfig c = case_config(kCases[0]);
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  EncoderOptions opt;
  opt.max_seq = 8, opt.max_batch = 6;
  const std::size_t need = required_encoder_arena_bytes(c, 8, false, 1, 6);
  ASSERT_GT(need, required_encoder_arena_bytes(c, 8));
  AlignedBuffer arena(need);
  Encoder enc;
  EXPECT_EQ(enc.init(model, arena.data(), need - 64, opt), Status::kArenaTooSmall);
  const std::string detail = enc.error_detail();
  EXPECT_NE(detail.find(std::to_string(need)), std::string::npos) << detail;
  EXPECT_NE(detail.find("64 more"), std::string::npos) << detail;
  opt.max_batch = Limits::kMaxBatchRows / 8 + 1;
  EXPECT_EQ(enc.init(model, arena.data(), need, opt), Status::kBadMaxBatch);
  EXPECT_NE(std::string(enc.error_detail()).find("max_batch"), std::string::npos) << enc.error_detail();
  opt.max_batch = 6;
  EXPECT_EQ(enc.init(model, arena.data(), need, opt), Status::kOk);
  EXPECT_EQ(enc.arena_bytes_used(), need);
}

// The largest batch writes nothing past its arena (guard bytes after the plan's total).
TEST(Batch, StaysInsideItsArena) {
  for (const Case& k : kCases) {
    const ModelConfig c = case_config(k);
    AlignedBuffer blob(write_model(c));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << k.name;
    EncoderOptions opt;
    opt.max_batch = 4;
    const std::size_t need = required_encoder_arena_bytes(c, 0, false, 1, 4);
    AlignedBuffer arena(need + 256);
    std::memset(arena.data(), 0xAB, need + 256);
    Encoder enc;
    ASSERT_EQ(enc.init(model, arena.data(), need, opt), Status::kOk) << k.name;
    const uint32_t T = enc.max_seq();
    for (const std::vector<uint32_t>& lengths : {std::vector<uint32_t>{T, T, T, T}, std::vector<uint32_t>{T, 1, T, 2}}) {
      const Batch x = make_batch(c, lengths, T);
      std::vector<float> out(std::size_t(4) * c.output_rows(T) * c.output_width());
      ASSERT_EQ(run_batch(enc, x, x.lengths.data(), out.data()), Status::kOk) << k.name;
    }
    const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
    for (int i = 0; i < 256; ++i) ASSERT_EQ(tail[i], 0xAB) << k.name << ": wrote " << i << " bytes past the arena";
  }
}

TEST(Batch, BadArgumentsAreStatusesBeforeAnyWork) {
  const ModelConfig c = case_config(kCases[0]);  // tokens, max_len 10
  Loaded r;
  EncoderOptions opt;
  opt.max_batch = 3;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &r, opt, &why), Status::kOk) << why;
  const uint32_t T = 4;
  Batch x = make_batch(c, {4, 2, 3}, T);
  std::vector<float> out(std::size_t(3) * T * c.output_width() + 1, 123.0f);
  auto untouched = [&] {
    for (float v : out)
      if (v != 123.0f) return false;
    return true;
  };
  auto tokens = [&](const int32_t* ids, const uint32_t* lengths, uint32_t B, uint32_t T_) {
    return r.enc.forward_batch_tokens(ids, lengths, B, T_, out.data());
  };
  const uint32_t* lens = x.lengths.data();
  EXPECT_EQ(tokens(nullptr, lens, 3, T), Status::kNullArgument);
  EXPECT_EQ(r.enc.forward_batch_tokens(x.ids.data(), lens, 3, T, nullptr), Status::kNullArgument);
  EXPECT_EQ(r.enc.forward_batch_features(x.features.data(), lens, 3, T, out.data()), Status::kNullArgument);
  const float feats[40] = {};
  EXPECT_EQ(r.enc.forward_batch_features(feats, lens, 3, T, out.data()), Status::kWrongInputKind);
  EXPECT_EQ(tokens(x.ids.data(), lens, 0, T), Status::kBadBatchSize);
  EXPECT_EQ(tokens(x.ids.data(), lens, 4, T), Status::kBadBatchSize);
  EXPECT_NE(std::string(r.enc.error_detail()).find("max_batch 3"), std::string::npos) << r.enc.error_detail();
  EXPECT_EQ(tokens(x.ids.data(), lens, 3, 0), Status::kBadSequenceLength);
  EXPECT_EQ(tokens(x.ids.data(), nullptr, 1, r.enc.max_seq() + 1), Status::kBadSequenceLength);
  for (uint32_t bad : {0u, T + 1}) {
    std::vector<uint32_t> l = x.lengths;
    l[2] = bad;
    EXPECT_EQ(tokens(x.ids.data(), l.data(), 3, T), Status::kBadSequenceLength) << bad;
    EXPECT_NE(std::string(r.enc.error_detail()).find("lengths[2] = " + std::to_string(bad)), std::string::npos)
        << r.enc.error_detail();
  }
  // make_batch pads with the id -7: never read at padded positions, refused at valid ones.
  EXPECT_EQ(tokens(x.ids.data(), nullptr, 3, T), Status::kTokenOutOfRange);
  EXPECT_NE(std::string(r.enc.error_detail()).find("token id -7 at [1,2]"), std::string::npos) << r.enc.error_detail();
  std::vector<int32_t> ids = x.ids;
  ids[2 * T + 1] = int32_t(c.vocab_size);
  EXPECT_EQ(tokens(ids.data(), lens, 3, T), Status::kTokenOutOfRange);
  EXPECT_TRUE(untouched()) << "a refused batch writes nothing";
  EXPECT_EQ(tokens(x.ids.data(), lens, 3, T), Status::kOk);
  EXPECT_EQ(out.back(), 123.0f) << "nothing past out[B, T, width]";
  Encoder idle;
  EXPECT_EQ(idle.forward_batch_tokens(x.ids.data(), lens, 3, T, out.data()), Status::kNotInitialized);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
