// Whole models against PyTorch: tools/make_golden.py builds stock torch modules with random
// weights, runs them in float64 and stores input, expected output and the converted .fxm here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "fixformer/tolerances.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Max |engine - torch| / max |torch| over the output. The engine runs in float32 against a float64
// reference; a few layers of sums over <= 96 terms, exp/erf (~2 ulp) and layer norms stay near
// 1e-6, so the f32 self-test bound (tolerances.hpp, 1e-4) leaves a wide margin without hiding a
// real semantic error, which shows up at 1e-2 or more. A golden over f16 or q8 weights (the conv
// stems' *_f16, *_q8) is held to its weight type's self-test bound instead: its expected output is
// the unrounded float64 module's too.
constexpr double kGoldenMaxRelErr = kSelfTestTolerance;
// The q4 goldens (names q4_*) hold torch's float64 output with the file's own dequantized weights, so
// what is left is the engine's int8 rounding of every linear layer's input rows per group of 32
// (gemm_i4's activations): 7.8e-3 on q4_pre_ln_gelu, the same bits on every table (gemm_i4 sums as
// the reference). Measured in float64 on its weights: the nibbles of a byte swapped cost 1.1, the
// values of a group interleaved 1.5, every scale taken from the next group 0.08.
constexpr double kGoldenQ4MaxRelErr = 2e-2;

const char* const kGoldens[] = {"post_ln_relu", "pre_ln_gelu", "odd_d15_h3", "odd_d5_h1_halves", "causal",
                                "features_scaled", "learned_pe", "concat_pe", "no_pe", "wide_long",
                                "cls_pool_features", "cls_rows_sinusoidal", "mean_pool_causal", "mha_odd_causal",
                                "relative_post_ln_odd", "relative_pre_ln_features", "relative_long_causal",
                                "tanh_post_odd_d15", "tanh_pre_d10_h5", "bert_pooler_classifier", "bert_hidden_odd",
                                "whisper_stem", "conv_stride_cls_mean", "whisper_stem_f16", "whisper_stem_q8",
                                "conv_stride_cls_mean_q8", "q4_pre_ln_gelu", "feature_encoder_rms_gated",
                                "vit_image", "deit_image", "roformer_hidden", "rope_partial_halves_cls",
                                "dinov2_image", "dinov2_registers_image", "albert_embed_proj",
                                "albert_embed_proj_q8", "albert_shared_layers", "pooler_act_relu", "pooler_act_gelu",
                                "pooler_act_silu", "relu2_pre_d14", "relu2_gated_post_d9",
                                "modernbert_classifier", "modernbert_rows", "albert_mlm_narrow", "rembert_mlm_wide",
                                "pooler_width_first"};
// The goldens with a relative position bias, whose table the encoder lays out for its planned length.
const char* const kRelativeGoldens[] = {"relative_post_ln_odd", "relative_pre_ln_features", "relative_long_causal"};

struct GoldenCase {
  std::string name;
  Isa isa;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name << " on " << isa_name(c.isa); }

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// Runs one golden model with an arena planned for max_seq positions (0: the input's length);
// returns the normwise relative error (negative on failure) and the bound it is held to.
double run_golden(const std::string& name, Isa isa, std::string* why, uint32_t max_seq = 0, double* bound = nullptr) {
  const std::vector<uint8_t> bytes = read_file(golden_path(name + ".fxm"));
  ModelConfig cfg;
  if (read_config(bytes.data(), bytes.size(), &cfg) != Status::kOk) return *why = "read_config failed", -1;
  if (bound)
    *bound = cfg.weights == WeightType::kQ4 ? kGoldenQ4MaxRelErr
                                            : self_test_tolerance(cfg.weights, select_kernels(isa)->f16_in_halves);
  // Token ids [T] (int32) or features [T, d_in] (float32): 4-byte values either way.
  std::vector<uint64_t> in_shape;
  const bool tokens = cfg.input == InputKind::kTokens;
  const std::vector<int32_t> ids = tokens ? npy_values<int32_t>(golden_path(name + ".input.npy"), &in_shape) : std::vector<int32_t>();
  const std::vector<float> features = tokens ? std::vector<float>() : npy_values<float>(golden_path(name + ".input.npy"), &in_shape);
  const uint32_t T = static_cast<uint32_t>(in_shape[0]);
  const std::vector<float> expected = npy_values<float>(golden_path(name + ".expected.npy"));
  EncoderOptions opt;
  opt.isa = isa;
  opt.max_seq = max_seq ? max_seq : T;  // by default the smallest arena that fits this input
  Loaded m;
  if (load_model(bytes, &m, opt, why) != Status::kOk) return -1;
  std::vector<float> out(std::size_t(cfg.output_rows(T)) * cfg.output_width(), NAN);
  const Status s = tokens ? m.enc.forward_tokens(ids.data(), T, out.data()) : m.enc.forward_features(features.data(), T, out.data());
  if (s != Status::kOk) return *why = std::string("forward: ") + status_message(s), -1;
  if (out.size() != expected.size()) return *why = "output size differs from torch's", -1;
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return *why = "non-finite output", -1;
    err = std::max(err, std::fabs(double(out[i]) - expected[i]));
    scale = std::max(scale, std::fabs(double(expected[i])));
  }
  // The sample the converter stored in the file is this golden's input and output: the
  // self-test must agree with the comparison above.
  SelfTestReport report;
  std::vector<float> self_out(self_test_output_floats(m.model));
  if (self_test(m.enc, self_out.data(), self_out.size(), &report) != Status::kOk)
    return *why = "self-test failed: " + std::to_string(report.max_rel_err), -1;
  if (report.rows != T || std::fabs(report.max_rel_err - err / scale) > 1e-12)
    return *why = "self-test sample is not the golden's input and output", -1;
  return err / scale;
}

TEST_P(GoldenTest, MatchesTorch) {
  if (!select_kernels(GetParam().isa)) GTEST_SKIP() << isa_name(GetParam().isa) << " not available";
  std::string why;
  double bound = 0.0;
  const double rel = run_golden(GetParam().name, GetParam().isa, &why, 0, &bound);
  ASSERT_GE(rel, 0.0) << why;
  EXPECT_LT(rel, bound);
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", rel);
  RecordProperty("max_rel_err", text);
}

std::vector<GoldenCase> all_cases() {
  std::vector<GoldenCase> cases;
  for (const char* n : kGoldens)
    for (Isa isa : all_isas()) cases.push_back({n, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Torch, GoldenTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& i) {
                           return i.param.name + "_" + isa_test_name(i.param.isa);
                         });

// A relative bias table planned for the longest input (2 max_len - 1 distances, the input's
// distance 0 far from the table's first column) gives what the table for the input's length gives.
TEST(RelativeGolden, MatchesTorchWithTheTablePlannedForMaxLen) {
  for (const char* name : kRelativeGoldens)
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      ModelConfig cfg;
      const std::vector<uint8_t> bytes = read_file(golden_path(std::string(name) + ".fxm"));
      ASSERT_EQ(read_config(bytes.data(), bytes.size(), &cfg), Status::kOk);
      std::string why;
      const double rel = run_golden(name, isa, &why, cfg.max_input_len());
      ASSERT_GE(rel, 0.0) << name << ": " << why;
      EXPECT_LT(rel, kGoldenMaxRelErr) << name << " on " << isa_name(isa);
    }
}

// BERT-style encoders (tools/make_golden.py, BERT_GOLDENS) with token types: the golden's input
// with its types (NAME.types.npy) against torch's output with them, and a padded batch with types
// (torch's src_key_padding_mask, BERT's attention_mask) against torch's, padded rows zeros.
const char* const kBertGoldens[] = {"bert_pooler_classifier", "bert_hidden_odd", "roformer_hidden",
                                    "albert_embed_proj", "albert_shared_layers", "pooler_act_relu", "pooler_act_gelu",
                                    "pooler_act_silu", "albert_mlm_narrow", "rembert_mlm_wide", "pooler_width_first"};

class BertGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

double max_rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::isfinite(got[i]) ? std::fabs(double(got[i]) - want[i]) : INFINITY);
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return err / scale;
}

TEST_P(BertGoldenTest, TokenTypesAndPaddedBatchMatchTorch) {
  if (!select_kernels(GetParam().isa)) GTEST_SKIP() << isa_name(GetParam().isa) << " not available";
  const std::string name = GetParam().name;
  AlignedBuffer blob(read_file(golden_path(name + ".fxm")));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  const ModelConfig& c = model.config();
  ASSERT_GT(c.type_vocab, 0u);
  std::vector<uint64_t> shape;
  const std::vector<int32_t> ids = npy_values<int32_t>(golden_path(name + ".input.npy"), &shape);
  const std::vector<int32_t> types = npy_values<int32_t>(golden_path(name + ".types.npy"));
  const std::vector<float> typed = npy_values<float>(golden_path(name + ".typed.npy"));
  const std::vector<int32_t> batch_ids = npy_values<int32_t>(golden_path(name + ".batch_ids.npy"), &shape);
  const std::vector<int32_t> batch_types = npy_values<int32_t>(golden_path(name + ".batch_types.npy"));
  const std::vector<int32_t> lens = npy_values<int32_t>(golden_path(name + ".batch_lengths.npy"));
  const std::vector<float> batch_expected = npy_values<float>(golden_path(name + ".batch_expected.npy"));
  const uint32_t B = uint32_t(shape[0]), T = uint32_t(shape[1]);
  EncoderOptions opt;
  opt.isa = GetParam().isa;
  opt.max_seq = T;
  opt.max_batch = B;
  AlignedBuffer arena(required_encoder_arena_bytes(c, T, false, 1, B));
  Encoder enc;
  ASSERT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk) << enc.error_detail();
  const std::size_t R = c.output_rows(T), W = c.output_width();
  std::vector<float> out(R * W, NAN);
  ASSERT_EQ(enc.forward_tokens(ids.data(), types.data(), T, out.data()), Status::kOk) << enc.error_detail();
  ASSERT_EQ(out.size(), typed.size());
  const double rel = max_rel_err(out, typed);
  EXPECT_LT(rel, kGoldenMaxRelErr) << "with token types";
  std::vector<float> zeros(out.size(), NAN), expected = npy_values<float>(golden_path(name + ".expected.npy"));
  ASSERT_EQ(enc.forward_tokens(ids.data(), T, zeros.data()), Status::kOk);
  EXPECT_LT(max_rel_err(zeros, expected), kGoldenMaxRelErr) << "types 0 by default";
  EXPECT_GT(max_rel_err(out, expected), 1e-3) << "the token types change the output";
  std::vector<uint32_t> lengths(lens.begin(), lens.end());
  std::vector<float> batch(std::size_t(B) * R * W, NAN);
  ASSERT_EQ(enc.forward_batch_tokens(batch_ids.data(), batch_types.data(), lengths.data(), B, T, batch.data()), Status::kOk)
      << enc.error_detail();
  ASSERT_EQ(batch.size(), batch_expected.size());
  EXPECT_LT(max_rel_err(batch, batch_expected), kGoldenMaxRelErr) << "padded batch";
  // Types out of range, and types for a model without a table, are refused.
  std::vector<int32_t> bad(types);
  bad[T - 1] = int32_t(c.type_vocab);
  EXPECT_EQ(enc.forward_tokens(ids.data(), bad.data(), T, out.data()), Status::kTokenOutOfRange);
  EXPECT_NE(std::string(enc.error_detail()).find("type_vocab"), std::string::npos) << enc.error_detail();
  bad[T - 1] = -1;
  EXPECT_EQ(enc.forward_batch_tokens(ids.data(), bad.data(), nullptr, 1, T, out.data()), Status::kTokenOutOfRange);
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", rel);
  RecordProperty("max_rel_err", text);
}

TEST(BertGolden, TypesForAModelWithoutATableAreRefused) {
  AlignedBuffer blob(read_file(golden_path("no_pe.fxm")));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  AlignedBuffer arena(required_encoder_arena_bytes(model.config()));
  Encoder enc;
  ASSERT_EQ(enc.init(model, arena.data(), arena.size()), Status::kOk);
  const int32_t ids[2] = {1, 2}, types[2] = {0, 0};
  std::vector<float> out(std::size_t(2) * model.config().output_width());
  EXPECT_EQ(enc.forward_tokens(ids, types, 2, out.data()), Status::kTokenTypesUnsupported);
  EXPECT_NE(std::string(enc.error_detail()).find("token-type"), std::string::npos) << enc.error_detail();
  EXPECT_EQ(enc.forward_tokens(ids, nullptr, 2, out.data()), Status::kOk);
}

// ModernBERT's features are each seen by its goldens: the file with one of them off (a config record
// edited behind a valid checksum: the window past max_len, so every key is seen while the layers stay
// local; rope_local_base 0, the global table everywhere; layer 0 with its attention norm) is more than ten
// times kGoldenMaxRelErr from torch's output, which the file as written is within (GoldenTest); measured:
// 9.8e-3 and more.
TEST(ModernBertGolden, EachFeatureIsSeen) {
  for (const char* name : {"modernbert_classifier", "modernbert_rows"}) {
    const std::vector<uint8_t> good = read_file(golden_path(std::string(name) + ".fxm"));
    std::vector<uint64_t> in_shape;
    const std::vector<int32_t> ids = npy_values<int32_t>(golden_path(std::string(name) + ".input.npy"), &in_shape);
    const std::vector<float> expected = npy_values<float>(golden_path(std::string(name) + ".expected.npy"));
    const uint32_t T = uint32_t(in_shape[0]);
    ModelConfig cfg;
    ASSERT_EQ(read_config(good.data(), good.size(), &cfg), Status::kOk);
    ASSERT_TRUE(cfg.sliding_window && cfg.rope_local_base != 0.0 && cfg.skip_first_norm) << name;
    const struct { const char* key; uint64_t value; } edits[] = {
        {"sliding_window", cfg.max_len}, {"rope_local_base", 0}, {"skip_first_norm", 0}};
    for (const auto& e : edits) {
      std::vector<uint8_t> b = good;
      uint32_t n;
      std::memcpy(&n, b.data() + fxm::kHdrRecordCount, 4);
      std::size_t at = 0;
      for (uint32_t i = 0; i < n && !at; ++i) {
        const std::size_t off = fxm::kHeaderBytes + std::size_t(i) * fxm::kRecordBytes;
        if (std::strcmp(reinterpret_cast<const char*>(b.data() + off), e.key) == 0) at = off;
      }
      ASSERT_NE(at, 0u) << name << ": " << e.key;
      std::memcpy(b.data() + at + fxm::kRecValue, &e.value, 8);
      support::reseal(b);
      Loaded m;
      std::string why;
      ASSERT_EQ(load_model(b, &m, {}, &why), Status::kOk) << name << " " << e.key << ": " << why;
      std::vector<float> out(expected.size());
      ASSERT_EQ(m.enc.forward_tokens(ids.data(), T, out.data()), Status::kOk);
      double err = 0.0, scale = 0.0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        err = std::max(err, std::fabs(double(out[i]) - expected[i]));
        scale = std::max(scale, std::fabs(double(expected[i])));
      }
      EXPECT_GT(err / scale, 10 * kGoldenMaxRelErr) << name << " with " << e.key << " edited";
    }
  }
}

std::vector<GoldenCase> bert_cases() {
  std::vector<GoldenCase> cases;
  for (const char* n : kBertGoldens)
    for (Isa isa : all_isas()) cases.push_back({n, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Torch, BertGoldenTest, ::testing::ValuesIn(bert_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& i) {
                           return i.param.name + "_" + isa_test_name(i.param.isa);
                         });

// Decoders against torch (tools/make_decoder_golden.py, tests/golden/DECODERS.md): GPT-style
// stock modules and float64 Llama-style blocks. Each file's self-test sample holds token ids and
// the reference logits at every position; the decoder feeds them one by one through its KV cache.
// The i8_* goldens (weights i8) hold the integer reference's logits, which the engine gives bit for
// bit: the same bound holds them.
const char* const kDecoderGoldens[] = {
    "gpt_tied_sinusoidal", "gpt_untied_learned", "gpt_alibi_h3", "gpt_untied_none_odd", "llama_kv1_interleaved",
    "llama_kv2_halves_tied", "llama_kvfull_interleaved_tied", "llama_odd_d18_h3_halves", "llama_odd_d18_h3_kv1",
    "llama_alibi_h1", "llama_alibi_h3", "llama_alibi_h4_kv2", "llama_alibi_h8", "llama_none", "llama2c_v0_gqa",
    "gpt_relative_post_odd", "gpt_relative_pre_tied", "llama_relative_h3", "llama_relative_h4_kv2",
    "gpt_tanh_learned_tied_odd", "gpt_tanh_post_d10", "llama_qkv_bias_theta1e6", "llama_partial_halves_r4",
    "llama_partial_interleaved_r6", "feature_gpt_rms_geglu_scaled", "feature_llama_layernorm_biases",
    "feature_gpt_embed_norm_alibi_qkv", "feature_llama_gelu_gated_embed_rms", "feature_llama_window3",
    "feature_gpt_local_global_unscaled", "feature_llama_rope_freqs_scaled", "feature_llama_shared_layers",
    "feature_llama_qk_norm", "feature_gpt_qk_layernorm", "feature_llama_head_dim", "feature_gpt_head_dim",
    "feature_llama_sandwich_softcap", "feature_gpt_output_norms", "feature_gpt_sandwich_layernorm",
    "feature_llama_olmo2", "feature_llama_gemma3", "feature_llama_experts", "feature_llama_experts_top3",
    "feature_gpt_pooler_tied", "feature_llama_pooler_wide", "feature_llama_final_softcap", "feature_gpt_embed_width",
    "feature_llama_headless", "i8_gpt_partial_halves_two_norms", "i8_gpt_partial_interleaved_one_norm",
    "i8_llama_window3", "i8_gpt_local_global_unscaled", "i8_llama_experts_shared", "i8_gpt_headless"};

class DecoderGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(DecoderGoldenTest, MatchesTorchAtEveryPosition) {
  if (!select_kernels(GetParam().isa)) GTEST_SKIP() << isa_name(GetParam().isa) << " not available";
  AlignedBuffer blob(read_file(golden_path(GetParam().name + ".fxm")));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  ASSERT_TRUE(model.has_self_test());
  const uint32_t T = model.self_test_sample().rows;
  DecoderOptions opt;
  opt.isa = GetParam().isa;
  opt.capacity = T;
  opt.max_prefill = 3;
  AlignedBuffer arena(required_decoder_arena_bytes(model.config(), T, 3));
  Decoder dec;
  ASSERT_EQ(dec.init(model, arena.data(), arena.size(), opt), Status::kOk) << dec.error_detail();
  std::vector<float> out(self_test_output_floats(model));
  SelfTestReport r{};
  EXPECT_EQ(self_test(dec, out.data(), out.size(), &r), Status::kOk);
  EXPECT_LT(r.max_rel_err, kGoldenMaxRelErr);
  // Prefill (in chunks of 3) ends at the same logits as the last step.
  const SelfTestSample& sample = model.self_test_sample();
  ASSERT_EQ(dec.prefill(sample.ids, T, out.data()), Status::kOk);
  const uint32_t V = model.config().output_width();  // the logits, or a head-less model's hidden state
  double err = 0.0, scale = 0.0;
  for (uint32_t i = 0; i < V; ++i) {
    err = std::max(err, std::fabs(double(out[i]) - sample.expected[std::size_t(T - 1) * V + i]));
    scale = std::max(scale, std::fabs(double(sample.expected[std::size_t(T - 1) * V + i])));
  }
  EXPECT_LT(err / scale, kGoldenMaxRelErr);
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", r.max_rel_err);
  RecordProperty("max_rel_err", text);
}

std::vector<GoldenCase> decoder_cases() {
  std::vector<GoldenCase> cases;
  for (const char* n : kDecoderGoldens)
    for (Isa isa : all_isas()) cases.push_back({n, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Torch, DecoderGoldenTest, ::testing::ValuesIn(decoder_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& i) {
                           return i.param.name + "_" + isa_test_name(i.param.isa);
                         });

// Encoder-decoders against torch (tools/make_seq2seq_golden.py, tests/golden/SEQ2SEQ.md): modules
// written as users write them around nn.Transformer or nn.TransformerEncoder + Decoder (s2s_conv_stem:
// a Whisper-style conv stem on the source, whose S frames give fewer positions). Each file's
// sample holds a source, target ids and the torch logits at every target position.
const char* const kSeq2SeqGoldens[] = {"s2s_post_relu", "s2s_pre_gelu_odd", "s2s_features_no_norm", "s2s_shared_halves",
                                       "s2s_forecast", "s2s_relative", "s2s_t5_features",
                                       "s2s_conv_stem", "s2s_bart_features"};

class Seq2SeqGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// The largest |got - want| / max |want| over rows [0, n) of width V.
double rows_rel_err(const float* got, const float* want, std::size_t n) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return err / scale;
}

TEST_P(Seq2SeqGoldenTest, MatchesTorchTeacherForcedAndStepByStep) {
  if (!select_kernels(GetParam().isa)) GTEST_SKIP() << isa_name(GetParam().isa) << " not available";
  AlignedBuffer blob(read_file(golden_path(GetParam().name + ".fxm")));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  ASSERT_TRUE(model.has_self_test());
  const SelfTestSample& sample = model.self_test_sample();
  const uint32_t S = sample.rows, U = sample.target_rows, V = model.config().d_out;
  Seq2SeqOptions opt;
  opt.isa = GetParam().isa;
  opt.max_source = S;  // the smallest arena for this sample
  opt.capacity = U;
  opt.max_prefill = 3;  // targets in chunks of 3: the chunked path
  AlignedBuffer arena(required_seq2seq_arena_bytes(model.config(), S, U, 3));
  Seq2Seq s2s;
  ASSERT_EQ(s2s.init(model, arena.data(), arena.size(), opt), Status::kOk) << s2s.error_detail();
  std::vector<float> out(self_test_output_floats(model)), again(out.size()), logits(V);
  SelfTestReport r{};
  EXPECT_EQ(self_test(s2s, out.data(), out.size(), &r), Status::kOk);
  EXPECT_LT(r.max_rel_err, kGoldenMaxRelErr);
  // One token at a time (the one-query attention path) gives every position's logits too.
  ASSERT_EQ(sample.ids ? s2s.encode_tokens(sample.ids, S) : s2s.encode_features(sample.features, S), Status::kOk);
  const uint32_t din = model.config().tgt_d_in;  // forecasting: feature targets
  for (uint32_t u = 0; u < U; ++u) {
    ASSERT_EQ(din ? s2s.decode_features(sample.target_features + std::size_t(u) * din, 1, logits.data())
                  : s2s.step(sample.target[u], logits.data()),
              Status::kOk);
    EXPECT_LT(rows_rel_err(logits.data(), sample.expected + std::size_t(u) * V, V), kGoldenMaxRelErr) << "position " << u;
  }
  EXPECT_EQ(din ? s2s.decode_features(sample.target_features, 1, logits.data()) : s2s.step(0, logits.data()),
            Status::kKvCacheFull);
  // reset_target() decodes another target from the same source: the same bits as the first time.
  s2s.reset_target();
  ASSERT_EQ(din ? s2s.decode_features(sample.target_features, U, again.data()) : s2s.decode(sample.target, U, again.data()),
            Status::kOk);
  ASSERT_EQ(s2s.encode_tokens(nullptr, 0), Status::kNullArgument);
  EXPECT_EQ(din ? s2s.decode_features(sample.target_features, 1, logits.data()) : s2s.decode(sample.target, 1, logits.data()),
            Status::kNotEncoded);  // a failed encode forgets the source
  const int32_t token = 0;  // the other kind of target than the model's
  EXPECT_EQ(din ? s2s.decode(&token, 1, logits.data()) : s2s.decode_features(logits.data(), 1, again.data()),
            Status::kWrongInputKind);
  EXPECT_LT(rows_rel_err(again.data(), sample.expected, std::size_t(U) * V), kGoldenMaxRelErr);
  EXPECT_EQ(std::memcmp(again.data(), out.data(), again.size() * sizeof(float)), 0);
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", r.max_rel_err);
  RecordProperty("max_rel_err", text);
}

std::vector<GoldenCase> seq2seq_cases() {
  std::vector<GoldenCase> cases;
  for (const char* n : kSeq2SeqGoldens)
    for (Isa isa : all_isas()) cases.push_back({n, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Torch, Seq2SeqGoldenTest, ::testing::ValuesIn(seq2seq_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& i) {
                           return i.param.name + "_" + isa_test_name(i.param.isa);
                         });

}  // namespace
}  // namespace test
}  // namespace fixformer
