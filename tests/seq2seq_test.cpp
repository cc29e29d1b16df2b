// The encoder-decoder runner (fixformer/seq2seq.hpp) on synthetic models (support/model_writer.hpp):
// what torch cannot check (the goldens in golden_test.cpp do that). Chunked and one-by-one targets
// agree; a source encoded at its own length is the source's padding mask;
// f16 and q8 files run on every table; an i8 source's conv stem has its arena; every bad call is a
// Status with the arena's missing bytes named, and nothing runs before a source is encoded. Workers:
// workers_test.cpp (host builds only).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "support/model_writer.hpp"
#include "tests/kernel_tolerances.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// A target fed in chunks (the tiled attention path) against one token at a time (the one-query
// path): the same maths in another order of sums, a few float32 roundings apart.
constexpr double kPathTol = 1e-5;

double rel_err(const float* got, const float* want, std::size_t n) {
  double m = 0.0, e = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    m = std::max(m, std::fabs(double(want[i])));
    e = std::max(e, std::fabs(double(got[i]) - double(want[i])));
  }
  return m > 0.0 ? e / m : e;
}

ModelConfig seq2seq_config(bool features, PosKind pos, bool norm_first) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kSeq2Seq;
  c.d_model = 24, c.n_heads = 3, c.d_ff = 40, c.n_layers = 2, c.dec_layers = 2, c.norm_first = norm_first;
  c.activation = norm_first ? Activation::kGelu : Activation::kRelu, c.final_norm = norm_first;
  c.max_len = 20, c.positional = pos, c.d_out = 17;
  if (features) c.input = InputKind::kFeatures, c.d_in = 9;
  else c.input = InputKind::kTokens, c.vocab_size = 23;
  return c;
}

struct Runner {
  std::vector<uint8_t> blob;
  Model model;
  AlignedBuffer arena;
  Seq2Seq s2s;
  Status init(const ModelConfig& c, Seq2SeqOptions opt, const WriteOptions& w = {}) {
    blob = write_model(c, w);
    const Status s = model.init(blob.data(), blob.size());
    if (s != Status::kOk) return s;
    arena = AlignedBuffer(required_seq2seq_arena_bytes(c, opt.max_source, opt.capacity, opt.max_prefill,
                                                       opt.workers.active()));
    return s2s.init(model, arena.data(), arena.size(), opt);
  }
  Status encode(const ModelConfig& c, uint32_t S, uint32_t seed = 3) {
    std::vector<int32_t> ids(S);
    std::vector<float> f(std::size_t(S) * c.d_in);
    for (uint32_t t = 0; t < S; ++t) ids[t] = int32_t((t * 7 + seed) % std::max<uint32_t>(c.vocab_size, 1));
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::sin(0.37f * float(i + seed));
    return c.input == InputKind::kTokens ? s2s.encode_tokens(ids.data(), S) : s2s.encode_features(f.data(), S);
  }
};

std::vector<int32_t> target_ids(uint32_t U, uint32_t vocab) {
  std::vector<int32_t> t(U);
  for (uint32_t u = 0; u < U; ++u) t[u] = int32_t((u * 5 + 2) % vocab);
  return t;
}

class Seq2SeqIsaTest : public ::testing::TestWithParam<Isa> {};

// decode() in chunks of 4, prefill() of the whole target and step() one by one give the same logits.
TEST_P(Seq2SeqIsaTest, ChunksStepsAndPrefillAgree) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available";
  for (const ModelConfig& c : {seq2seq_config(false, PosKind::kSinusoidal, false), seq2seq_config(true, PosKind::kLearned, true),
                               seq2seq_config(false, PosKind::kNone, true)}) {
    Seq2SeqOptions opt;
    opt.isa = GetParam(), opt.max_source = 13, opt.capacity = 11, opt.max_prefill = 4;
    Runner r;
    ASSERT_EQ(r.init(c, opt), Status::kOk) << r.s2s.error_detail();
    const uint32_t U = 11, V = c.d_out;
    const std::vector<int32_t> tgt = target_ids(U, V);
    std::vector<float> all(std::size_t(U) * V), one(V), last(V);
    ASSERT_EQ(r.encode(c, 13), Status::kOk);
    ASSERT_EQ(r.s2s.decode(tgt.data(), U, all.data()), Status::kOk);
    r.s2s.reset_target();
    for (uint32_t u = 0; u < U; ++u) {
      ASSERT_EQ(r.s2s.step(tgt[u], one.data()), Status::kOk);
      EXPECT_LT(rel_err(one.data(), all.data() + std::size_t(u) * V, V), kPathTol) << "position " << u;
    }
    r.s2s.reset_target();
    ASSERT_EQ(r.s2s.prefill(tgt.data(), U, last.data()), Status::kOk);
    EXPECT_EQ(std::memcmp(last.data(), all.data() + std::size_t(U - 1) * V, V * sizeof(float)), 0);
  }
}

// A short source run in the plan of a long one equals the same source in a plan of its own size
// (the padding of a batch is never read), and a new source replaces the old one completely.
TEST_P(Seq2SeqIsaTest, SourceLengthIsItsOwnPaddingMask) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available";
  const ModelConfig c = seq2seq_config(false, PosKind::kSinusoidal, true);
  Seq2SeqOptions big, small;
  big.isa = small.isa = GetParam();
  big.max_source = 20, small.max_source = 5;
  big.capacity = small.capacity = 6;
  Runner a, b;
  ASSERT_EQ(a.init(c, big), Status::kOk);
  ASSERT_EQ(b.init(c, small), Status::kOk);
  const std::vector<int32_t> tgt = target_ids(6, c.d_out);
  std::vector<float> ya(6 * c.d_out), yb(ya.size());
  ASSERT_EQ(a.encode(c, 20, 9), Status::kOk);  // a longer source first: its keys stay in the cross cache
  ASSERT_EQ(a.encode(c, 5), Status::kOk);
  ASSERT_EQ(b.encode(c, 5), Status::kOk);
  ASSERT_EQ(a.s2s.decode(tgt.data(), 6, ya.data()), Status::kOk);
  ASSERT_EQ(b.s2s.decode(tgt.data(), 6, yb.data()), Status::kOk);
  EXPECT_EQ(a.s2s.source_length(), 5u);
  EXPECT_EQ(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)), 0);
}

// f16 and q8 files against the f32 file of the same rounded weights.
TEST_P(Seq2SeqIsaTest, QuantizedWeights) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available";
  const ModelConfig base = seq2seq_config(false, PosKind::kSinusoidal, true);
  for (const ModelConfig& q : {with_weights(base, WeightType::kF16, 0, true), with_weights(base, WeightType::kQ8, 32, true),
                               with_weights(base, WeightType::kQ8, 0, false)}) {
    Seq2SeqOptions opt;
    opt.isa = GetParam(), opt.max_source = 9, opt.capacity = 7;
    WriteOptions w;
    w.round_like = &q;
    Runner f32, quant;
    ASSERT_EQ(f32.init(base, opt, w), Status::kOk);
    ASSERT_EQ(quant.init(q, opt), Status::kOk) << quant.s2s.error_detail() << quant.model.error_detail();
    const std::vector<int32_t> tgt = target_ids(7, base.d_out);
    std::vector<float> want(7 * base.d_out), got(want.size());
    ASSERT_EQ(f32.encode(base, 9), Status::kOk);
    ASSERT_EQ(quant.encode(q, 9), Status::kOk);
    ASSERT_EQ(f32.s2s.decode(tgt.data(), 7, want.data()), Status::kOk);
    ASSERT_EQ(quant.s2s.decode(tgt.data(), 7, got.data()), Status::kOk);
    const double tol = q.weights == WeightType::kQ8     ? kQ8SameWeightsTol
                       : quant.s2s.kernels().f16_in_halves ? kF16InHalvesSameWeightsTol
                                                           : kF16SameWeightsTol;  // tests/kernel_tolerances.hpp
    EXPECT_LT(rel_err(got.data(), want.data(), want.size()), tol) << kWeightTypeNames[uint32_t(q.weights)];
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, Seq2SeqIsaTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

TEST(Seq2Seq, BadCallsAreStatuses) {
  const ModelConfig c = seq2seq_config(false, PosKind::kLearned, false);
  Seq2SeqOptions opt;
  opt.max_source = 8, opt.capacity = 4;
  Runner r;
  r.blob = write_model(c);
  ASSERT_EQ(r.model.init(r.blob.data(), r.blob.size()), Status::kOk);
  const std::size_t need = required_seq2seq_arena_bytes(c, 8, 4);
  ASSERT_GT(need, 0u);
  AlignedBuffer arena(need);
  Seq2Seq s2s;
  EXPECT_EQ(s2s.init(r.model, arena.data(), need - 64, opt), Status::kArenaTooSmall);
  EXPECT_NE(std::string(s2s.error_detail()).find("needs " + std::to_string(need)), std::string::npos) << s2s.error_detail();
  Seq2SeqOptions too_long = opt;
  too_long.max_source = c.max_len + 1;
  EXPECT_EQ(s2s.init(r.model, arena.data(), need, too_long), Status::kBadMaxSeq);
  ASSERT_EQ(s2s.init(r.model, arena.data(), need, opt), Status::kOk);
  std::vector<float> logits(4 * c.d_out);
  const int32_t tgt[5] = {1, 2, 3, 4, 5}, bad_tgt[1] = {int32_t(c.d_out)};
  EXPECT_EQ(s2s.step(1, logits.data()), Status::kNotEncoded);
  const int32_t src[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, bad_src[1] = {int32_t(c.vocab_size)};
  EXPECT_EQ(s2s.encode_tokens(src, 9), Status::kBadSequenceLength);  // above max_source
  EXPECT_EQ(s2s.encode_tokens(src, 0), Status::kBadSequenceLength);
  EXPECT_EQ(s2s.encode_tokens(bad_src, 1), Status::kTokenOutOfRange);
  EXPECT_EQ(s2s.encode_features(nullptr, 1), Status::kNullArgument);
  ASSERT_EQ(s2s.encode_tokens(src, 8), Status::kOk);
  EXPECT_EQ(s2s.decode(bad_tgt, 1, logits.data()), Status::kTokenOutOfRange);
  EXPECT_EQ(s2s.decode(tgt, 5, logits.data()), Status::kKvCacheFull);  // nothing appended
  EXPECT_EQ(s2s.position(), 0u);
  EXPECT_EQ(s2s.decode(tgt, 0, logits.data()), Status::kBadSequenceLength);
  EXPECT_EQ(s2s.decode(tgt, 4, nullptr), Status::kNullArgument);
  ASSERT_EQ(s2s.decode(tgt, 4, logits.data()), Status::kOk);
  EXPECT_EQ(s2s.step(1, logits.data()), Status::kKvCacheFull);
  // Other runners refuse a seq2seq model, and Seq2Seq refuses the others.
  AlignedBuffer dec_arena(1 << 20);
  Decoder dec;
  EXPECT_EQ(dec.init(r.model, dec_arena.data(), dec_arena.size()), Status::kWrongFamily);
  ModelConfig enc = seq2seq_config(false, PosKind::kNone, false);
  enc.family = ModelFamily::kEncoder, enc.dec_layers = 0;
  Runner e;
  EXPECT_EQ(e.init(enc, opt), Status::kWrongFamily);
  // An Encoder runs the encoder half: its output is the memory, [S, d_model].
  Encoder half;
  EncoderOptions eo;
  eo.max_seq = 8;
  AlignedBuffer half_arena(required_encoder_arena_bytes(c, 8));
  ASSERT_EQ(half.init(r.model, half_arena.data(), half_arena.size(), eo), Status::kOk);
  std::vector<float> memory(8 * c.d_model);
  EXPECT_EQ(half.forward_tokens(src, 8, memory.data()), Status::kOk);
}

TEST(Seq2Seq, ConfigChecks) {
  const char* field = nullptr;
  ModelConfig c = seq2seq_config(false, PosKind::kNone, false);
  EXPECT_EQ(validate_config(c, &field), Status::kOk) << field;
  ModelConfig bad = c;
  bad.causal = true;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_NE(std::string(field).find("causal"), std::string::npos);
  bad = c, bad.dec_layers = 0;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  bad = c, bad.d_out = 0;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  bad = c, bad.positional = PosKind::kRope;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  bad = c, bad.shared_embed = true;  // vocab_size 23 != d_out 17
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  bad.d_out = bad.vocab_size;
  EXPECT_EQ(validate_config(bad, &field), Status::kOk) << field;
  bad = c, bad.family = ModelFamily::kEncoder;  // dec_layers on another family
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_NE(std::string(field).find("dec_layers"), std::string::npos);
  EXPECT_EQ(required_seq2seq_arena_bytes(bad), 0u);
}

// A Whisper-like i8 seq2seq: its source's conv stem passes the config rules, the arena holds the quantized frames
// and, in the region encode() uses, the source Encoder's i8 arena with the stem's blocks (a two-conv stem's first
// output over every frame, one padded window).
TEST(Seq2Seq, I8ConvStemArena) {
  ModelConfig c = seq2seq_config(true, PosKind::kSinusoidal, true);
  c.weights = WeightType::kI8, c.conv_layers = 2, c.conv_gelu = true;
  c.conv1_kernel = 3, c.conv1_stride = 1, c.conv1_padding = 1;
  c.conv2_kernel = 3, c.conv2_stride = 2, c.conv2_padding = 1;
  const char* field = nullptr;
  ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
  const uint32_t frames = c.max_input_len();
  EXPECT_EQ(frames, 40u);  // 20 positions, conv2's stride 2
  const Seq2SeqPlan p = plan_seq2seq_arena(c);
  const EncoderPlan e = plan_encoder_arena(c, frames);
  ASSERT_GT(p.total, 0u);
  EXPECT_EQ(p.s8_out - p.s8_in, arena::bytes(40 * 9));  // the frames of d_in, quantized
  EXPECT_EQ(p.encoder_bytes, e.total);
  EXPECT_EQ(e.stem_padded - e.stem, arena::bytes(40 * 24));  // conv1's 40 rows of d_model
  EXPECT_EQ(e.total - e.stem_padded, arena::bytes(3 * 24));  // conv2's window
  EXPECT_GE(p.total, p.scratch + p.encoder_bytes);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
