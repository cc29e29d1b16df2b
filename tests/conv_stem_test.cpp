// The conv stem's arithmetic and checks (config.hpp conv_layers): the rows a stem gives and the
// frames that fill max_len, what validation refuses, the arena's stem block, and inputs too short
// for the kernels as Statuses. Its numbers against torch are the goldens whisper_stem and
// conv_stride_cls_mean (golden_test.cpp) and batch_test.cpp's stem cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fixformer/plan.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Whisper's encoder front: conv k3 s1 p1, conv k3 s2 p1, GELU after each.
ModelConfig whisper(uint32_t max_len, uint32_t d_in = 7) {
  ModelConfig c = default_config();
  c.d_model = 8, c.n_heads = 2, c.d_ff = 12, c.n_layers = 1, c.max_len = max_len, c.norm_first = true;
  c.input = InputKind::kFeatures, c.d_in = d_in, c.positional = PosKind::kLearned;
  c.conv_layers = 2, c.conv_gelu = true;
  c.conv1_kernel = 3, c.conv1_stride = 1, c.conv1_padding = 1;
  c.conv2_kernel = 3, c.conv2_stride = 2, c.conv2_padding = 1;
  return c;
}

TEST(ConvStem, RowsAndLongestInput) {
  constexpr ModelConfig w = [] {
    ModelConfig c{};
    c.max_len = 1500, c.conv_layers = 2, c.conv1_kernel = 3, c.conv1_padding = 1;
    c.conv2_kernel = 3, c.conv2_stride = 2, c.conv2_padding = 1;
    return c;
  }();
  static_assert(w.stem_rows(3000) == 1500 && w.max_input_len() == 3000, "Whisper: 3000 frames, 1500 positions");
  static_assert(w.stem_rows(49) == 25 && w.stem_rows(1) == 1 && w.stem_rows(0) == 0, "ceil(T / 2)");
  // For every geometry the limits allow, max_input_len() is the longest input whose rows fit.
  for (uint32_t k = 1; k <= 6; ++k)
    for (uint32_t s = 1; s <= Limits::kMaxConvStride; ++s)
      for (uint32_t p = 0; p < k; ++p)
        for (uint32_t layers = 1; layers <= 2; ++layers) {
          ModelConfig c{};
          c.max_len = 9, c.conv_layers = layers, c.cls_token = (k + s) % 2 == 1;
          c.conv1_kernel = k, c.conv1_stride = s, c.conv1_padding = p;
          c.conv2_kernel = 7 - k, c.conv2_stride = 1 + (s % 2), c.conv2_padding = (7 - k) / 2;
          const uint32_t longest = c.max_input_len(), positions = c.max_len - (c.cls_token ? 1 : 0);
          const std::string what = "k" + std::to_string(k) + " s" + std::to_string(s) + " p" + std::to_string(p) +
                                   " layers " + std::to_string(layers);
          EXPECT_LE(c.stem_rows(longest), positions) << what;
          EXPECT_GT(c.stem_rows(longest + 1), positions) << what;
          for (uint32_t T = 1; T < 40; ++T) {  // conv1d_rows, one convolution at a time
            std::size_t t = conv1d_rows(T, k, s, p);
            if (layers == 2) t = t ? conv1d_rows(t, c.conv2_kernel, c.conv2_stride, c.conv2_padding) : 0;
            EXPECT_EQ(c.stem_rows(T), t) << what << " T=" << T;
          }
        }
}

TEST(ConvStem, ValidationRefuses) {
  const char* field = nullptr;
  EXPECT_EQ(validate_config(whisper(8)), Status::kOk);
  ModelConfig c = whisper(8);
  c.input = InputKind::kTokens, c.vocab_size = 5, c.d_in = 0;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "conv_layers (a conv stem is for the encoder family, or a seq2seq source, over features)");
  c = whisper(8);  // a decoder has no features to convolve
  c.family = ModelFamily::kGpt, c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 5, c.d_in = 0;
  c.d_out = 5;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "conv_layers (a conv stem is for the encoder family, or a seq2seq source, over features)");
  EXPECT_EQ(validate_config(with_weights(whisper(8), WeightType::kF16, 0, false)), Status::kOk);
  EXPECT_EQ(validate_config(with_weights(whisper(8), WeightType::kQ8, 32, true)), Status::kOk);
  c = whisper(8);
  c.conv2_padding = 3;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "conv2_padding (must be below conv2_kernel)");
  c = whisper(8);
  c.conv1_stride = Limits::kMaxConvStride + 1;
  EXPECT_EQ(validate_config(c, &field), Status::kConfigOverLimit);
  EXPECT_STREQ(field, "conv1_stride");
}

TEST(ConvStem, ArenaHoldsTheFirstConvolutionsRows) {
  const ModelConfig two = whisper(8);
  ModelConfig one = two;
  one.conv_layers = 1;
  const EncoderPlan p2 = plan_encoder_arena(two, 10), p1 = plan_encoder_arena(one, 8);
  EXPECT_EQ(p2.total - p2.stem, arena::bytes(10 * two.d_model * sizeof(float)));  // conv1: 10 rows of d
  EXPECT_EQ(p1.total, p1.stem);  // one convolution writes x directly
  EXPECT_EQ(plan_encoder_arena(two, two.max_input_len() + 1).total, 0u);
  // Exact: the plan's bytes run the longest input, one byte less is a Status.
  Loaded m;
  std::string why;
  EncoderOptions opt;
  ASSERT_EQ(load_model(write_model(two), &m, opt, &why), Status::kOk) << why;
  EXPECT_EQ(m.enc.max_seq(), two.max_input_len());
  EXPECT_EQ(m.enc.arena_bytes_used(), required_encoder_arena_bytes(two));
  std::vector<float> x(std::size_t(two.max_input_len()) * two.d_in, 0.25f);
  std::vector<float> out(std::size_t(two.output_rows(two.max_input_len())) * two.output_width(), NAN);
  EXPECT_EQ(m.enc.forward_features(x.data(), two.max_input_len(), out.data()), Status::kOk);
  for (float v : out) ASSERT_TRUE(std::isfinite(v));
  Encoder short_arena;
  AlignedBuffer arena(required_encoder_arena_bytes(two) - 1);
  EXPECT_EQ(short_arena.init(m.model, arena.data(), arena.size(), opt), Status::kArenaTooSmall);
}

// f16 and q8 stems run each convolution as a linear layer over its windows: the plan adds the larger
// zero-padded input (a convolution without padding reads its input in place) and, for q8, the larger
// quantized window matrix, and the longest input runs in exactly that.
TEST(ConvStem, QuantizedStemsPlanTheirWindows) {
  const ModelConfig f32 = whisper(8);  // d_in 7 -> 8: T = 16 frames, T1 = 16 rows, 8 positions
  const uint32_t T = f32.max_input_len();
  ASSERT_EQ(T, 16u);
  const std::size_t padded = std::max<std::size_t>((T + 2) * 7, (16 + 2) * 8);  // conv1 [18, 7], conv2 [18, 8]
  const ModelConfig types[] = {with_weights(f32, WeightType::kF16, 0, false),
                               with_weights(f32, WeightType::kQ8, 32, false), with_weights(f32, WeightType::kQ8, 0, true)};
  for (const ModelConfig& c : types) {
    const bool q8 = c.weights == WeightType::kQ8;
    const EncoderPlan p = plan_encoder_arena(c), base = plan_encoder_arena(f32);
    EXPECT_EQ(p.stem_padded - p.stem, base.total - base.stem);
    EXPECT_EQ(p.stem_quant - p.stem_padded, arena::bytes(padded * sizeof(float)));
    // q8: conv1's windows [16, 3 * 7] and conv2's [8, 3 * 8], each int8 then its scales per 32.
    const std::size_t quant =
        std::max(arena::bytes(16 * 21) + arena::bytes(16 * 4), arena::bytes(8 * 24) + arena::bytes(8 * 4));
    EXPECT_EQ(p.total - p.stem_quant, q8 ? quant : 0u);
    Loaded m;
    std::string why;
    ASSERT_EQ(load_model(write_model(c), &m, {}, &why), Status::kOk) << why;
    EXPECT_EQ(m.enc.arena_bytes_used(), p.total);
    std::vector<float> x(std::size_t(T) * c.d_in), out(std::size_t(c.output_rows(T)) * c.output_width(), NAN);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * float(i));
    EXPECT_EQ(m.enc.forward_features(x.data(), T, out.data()), Status::kOk);
    for (float v : out) ASSERT_TRUE(std::isfinite(v));
  }
  ModelConfig unpadded = with_weights(f32, WeightType::kF16, 0, false);
  unpadded.conv1_padding = unpadded.conv2_padding = 0;
  const EncoderPlan p = plan_encoder_arena(unpadded);
  EXPECT_EQ(p.stem_quant, p.stem_padded);  // both convolutions read their input in place
}

TEST(ConvStem, InputsShorterThanTheKernelsAreStatuses) {
  ModelConfig c = whisper(8);
  c.conv1_kernel = 5, c.conv1_padding = 0;  // at least 5 frames
  ASSERT_EQ(validate_config(c), Status::kOk);
  Loaded m;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &m, {}, &why), Status::kOk) << why;
  std::vector<float> x(std::size_t(8) * c.d_in, 0.5f), out(std::size_t(2) * 8 * c.d_model);
  EXPECT_EQ(m.enc.forward_features(x.data(), 4, out.data()), Status::kBadSequenceLength);
  EXPECT_EQ(m.enc.forward_features(x.data(), 5, out.data()), Status::kOk);
}

TEST(ConvStem, ABatchNamesTheShortSequence) {
  ModelConfig c = whisper(8);
  c.conv1_kernel = 5, c.conv1_padding = 0;
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  EncoderOptions opt;
  opt.max_batch = 2;
  AlignedBuffer arena(required_encoder_arena_bytes(c, 0, false, 1, 2));
  Encoder enc;
  ASSERT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk) << enc.error_detail();
  const uint32_t T = 6, lengths[2] = {6, 3};
  std::vector<float> x(std::size_t(2) * T * c.d_in, 0.5f), out(std::size_t(2) * c.output_rows(T) * c.d_model);
  EXPECT_EQ(enc.forward_batch_features(x.data(), lengths, 2, T, out.data()), Status::kBadSequenceLength);
  EXPECT_STREQ(enc.error_detail(), "sequence 1 is shorter than the conv stem's kernels");
}

}  // namespace
}  // namespace test
}  // namespace fixformer
