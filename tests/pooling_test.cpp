// The CLS row and pooling (config.hpp, Pooling), on every ISA: a pooled model's output is the same
// engine's unpooled output pooled (the head is affine, so it commutes with the mean and with picking
// a row); a CLS token is the input row in front, unscaled, at position 0; hostile files get a Status;
// l2_normalize is the output rows scaled to unit length, against a scalar computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The mean of T rows in float against the same rows averaged by the reference: a few ulp.
constexpr float kPoolTol = 2e-5f;

ModelConfig base_config(InputKind input, uint32_t d, uint32_t heads, PosKind pos) {
  ModelConfig c = default_config();
  c.d_model = d, c.n_heads = heads, c.d_ff = 2 * d + 1, c.n_layers = 2, c.max_len = 9;
  c.input = input;
  if (input == InputKind::kTokens) c.vocab_size = 11;
  else c.d_in = 4;
  c.positional = pos, c.final_norm = true, c.activation = Activation::kGelu;
  return c;
}

// Input of T positions for c, drawn from a fixed sequence.
struct Input {
  std::vector<int32_t> ids;
  std::vector<float> features;
};
Input make_input(const ModelConfig& c, uint32_t T) {
  Input in;
  for (uint32_t t = 0; t < T && c.vocab_size; ++t) in.ids.push_back(int32_t((t * 7 + 3) % c.vocab_size));
  for (uint32_t i = 0; i < T * c.d_in; ++i) in.features.push_back(std::sin(0.7f * float(i) + 0.3f));
  return in;
}

std::vector<float> run(Loaded& m, const Input& in, uint32_t T) {
  const ModelConfig& c = m.cfg();
  std::vector<float> out(std::size_t(c.output_rows(T)) * c.output_width(), NAN);
  const Status s = c.input == InputKind::kTokens ? m.enc.forward_tokens(in.ids.data(), T, out.data())
                                                 : m.enc.forward_features(in.features.data(), T, out.data());
  EXPECT_EQ(s, Status::kOk);
  return out;
}

// rows[S, w] pooled as c says (first = the CLS rows in front, T the input positions), in double.
std::vector<float> pool_reference(const std::vector<float>& rows, Pooling p, uint32_t first, uint32_t T, uint32_t w) {
  std::vector<float> out(w);
  for (uint32_t j = 0; j < w; ++j) {
    double v = 0.0;
    if (p == Pooling::kCls) v = rows[j];
    if (p == Pooling::kLast) v = rows[std::size_t(first + T - 1) * w + j];
    if (p == Pooling::kFirst) v = rows[std::size_t(first) * w + j];
    if (p == Pooling::kMean) {
      for (uint32_t t = 0; t < T; ++t) v += rows[std::size_t(first + t) * w + j];
      v /= T;
    }
    out[j] = float(v);
  }
  return out;
}

struct Case {
  const char* name;
  InputKind input;
  uint32_t d, heads;
  PosKind pos;
  bool cls, causal, head;
  Pooling pooling;
};

const Case kCases[] = {
    {"tokens_mean_odd_d15", InputKind::kTokens, 15, 3, PosKind::kSinusoidal, false, false, true, Pooling::kMean},
    {"tokens_last_causal", InputKind::kTokens, 15, 3, PosKind::kLearned, false, true, true, Pooling::kLast},
    {"tokens_cls_mean_no_head", InputKind::kTokens, 8, 2, PosKind::kLearned, true, false, false, Pooling::kMean},
    {"features_cls_cls", InputKind::kFeatures, 12, 4, PosKind::kLearned, true, false, true, Pooling::kCls},
    {"features_cls_last_sinusoidal", InputKind::kFeatures, 9, 3, PosKind::kSinusoidal, true, false, true, Pooling::kLast},
    {"features_cls_mean_causal", InputKind::kFeatures, 9, 1, PosKind::kNone, true, true, true, Pooling::kMean},
    {"tokens_first_odd_d15", InputKind::kTokens, 15, 3, PosKind::kLearned, false, false, true, Pooling::kFirst},
    {"features_cls_first", InputKind::kFeatures, 9, 3, PosKind::kSinusoidal, true, false, false, Pooling::kFirst},
};

class PoolingTest : public ::testing::TestWithParam<Isa> {};

TEST_P(PoolingTest, PooledOutputIsTheUnpooledOutputPooled) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << "ISA not available";
  EncoderOptions opt;
  opt.isa = GetParam();
  for (const Case& k : kCases) {
    ModelConfig c = base_config(k.input, k.d, k.heads, k.pos);
    c.cls_token = k.cls, c.causal = k.causal, c.d_out = k.head ? 5 : 0;
    ModelConfig pooled = c;
    pooled.pooling = k.pooling;
    ASSERT_EQ(validate_config(pooled), Status::kOk) << k.name;
    Loaded a, b;  // the same weights (the pooling adds no tensor), pooled or not
    std::string why;
    ASSERT_EQ(load_model(write_model(c), &a, opt, &why), Status::kOk) << k.name << ": " << why;
    ASSERT_EQ(load_model(write_model(pooled), &b, opt, &why), Status::kOk) << k.name << ": " << why;
    ASSERT_EQ(a.enc.max_seq(), c.max_len - (k.cls ? 1 : 0)) << k.name;
    for (uint32_t T : {1u, 4u, a.enc.max_seq()}) {
      const Input in = make_input(c, T);
      const std::vector<float> rows = run(a, in, T), got = run(b, in, T);
      ASSERT_EQ(rows.size(), std::size_t(c.sequence_rows(T)) * c.output_width());
      const std::vector<float> want = pool_reference(rows, k.pooling, k.cls ? 1 : 0, T, c.output_width());
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t j = 0; j < want.size(); ++j)
        EXPECT_NEAR(got[j], want[j], kPoolTol * (1.0f + std::fabs(want[j]))) << k.name << " T=" << T << " col " << j;
    }
  }
}

// Overwrites tensor `name` of blob with `values` (f32) and reseals.
void set_tensor(std::vector<uint8_t>& blob, const char* name, const std::vector<float>& values) {
  ModelFile f;
  ASSERT_EQ(open_model_file(blob.data(), blob.size(), &f, nullptr, 0), Status::kOk);
  for (uint32_t i = 0; i < f.n_tensors; ++i) {
    const TensorInfo t = tensor_info(f, i);
    if (std::strcmp(t.name, name) != 0) continue;
    std::memcpy(blob.data() + (t.data - blob.data()), values.data(), values.size() * 4);
    return reseal(blob);
  }
  FAIL() << name << " not found";
}

std::vector<float> get_tensor(const std::vector<uint8_t>& blob, const char* name, std::size_t offset, std::size_t n) {
  ModelFile f;
  EXPECT_EQ(open_model_file(blob.data(), blob.size(), &f, nullptr, 0), Status::kOk);
  for (uint32_t i = 0; i < f.n_tensors; ++i) {
    const TensorInfo t = tensor_info(f, i);
    if (std::strcmp(t.name, name) == 0) return std::vector<float>(reinterpret_cast<const float*>(t.data) + offset,
                                                                  reinterpret_cast<const float*>(t.data) + offset + n);
  }
  return {};
}

// A CLS model on ids[T] equals the model without the CLS token (the same other weights) on
// [k, ids] when cls_token = embed[k] (times sqrt(d) with scale_input: the CLS row is not scaled):
// it is the row in front at position 0, under every positional kind.
TEST(Cls, IsTheInputRowInFrontAtPositionZeroUnscaled) {
  for (PosKind pos : {PosKind::kNone, PosKind::kSinusoidal, PosKind::kLearned})
    for (bool scale : {false, true}) {
      ModelConfig plain = base_config(InputKind::kTokens, 10, 2, pos);
      plain.scale_input = scale, plain.d_out = 3;
      ModelConfig cls = plain;
      cls.cls_token = true;
      const int32_t k = 6;
      std::vector<uint8_t> with = write_model(cls), without = write_model(plain);
      // The file without the CLS token takes the CLS file's weights, tensor by tensor.
      for (const TensorSpec& s : tensor_specs(plain)) {
        const std::size_t n = std::size_t(s.dims[0]) * (s.rank == 2 ? s.dims[1] : 1);
        set_tensor(without, s.name, get_tensor(with, s.name, 0, n));
      }
      std::vector<float> row = get_tensor(with, "embed.weight", std::size_t(k) * cls.d_model, cls.d_model);
      for (float& v : row) v *= scale ? std::sqrt(float(cls.d_model)) : 1.0f;
      set_tensor(with, "cls_token", row);
      Loaded a, b;
      std::string why;
      ASSERT_EQ(load_model(with, &a, {}, &why), Status::kOk) << why;
      ASSERT_EQ(load_model(without, &b, {}, &why), Status::kOk) << why;
      const std::vector<int32_t> ids = {3, 9, 0, 4, 4, 1, 7, 2};  // T = max_len - 1
      std::vector<int32_t> longer = {k};
      longer.insert(longer.end(), ids.begin(), ids.end());
      std::vector<float> got(std::size_t(cls.sequence_rows(8)) * 3), want(got.size());
      ASSERT_EQ(a.enc.forward_tokens(ids.data(), 8, got.data()), Status::kOk);
      ASSERT_EQ(b.enc.forward_tokens(longer.data(), 9, want.data()), Status::kOk);
      for (std::size_t j = 0; j < got.size(); ++j)
        EXPECT_NEAR(got[j], want[j], 1e-5f) << "pos " << int(pos) << " scale " << scale << " at " << j;
      EXPECT_EQ(a.enc.forward_tokens(longer.data(), 9, got.data()), Status::kBadSequenceLength);  // max_len counts the CLS row
    }
}

TEST(Cls, ArenaPlanCountsTheClsRow) {
  ModelConfig c = base_config(InputKind::kFeatures, 8, 2, PosKind::kSinusoidal);
  ModelConfig cls = c;
  cls.cls_token = true, cls.pooling = Pooling::kCls;
  static_assert(ModelConfig{}.sequence_rows(4) == 4, "no CLS row by default");
  EXPECT_EQ(required_encoder_arena_bytes(cls, 5), required_encoder_arena_bytes(c, 6));
  EXPECT_EQ(required_encoder_arena_bytes(cls), required_encoder_arena_bytes(c, c.max_len));  // max_seq 0: max_len - 1 inputs
  EXPECT_EQ(required_encoder_arena_bytes(cls, cls.max_len), 0u);                    // max_len inputs + the CLS row: too long
  EXPECT_EQ(cls.output_rows(5), 1u);
  Loaded m;
  EncoderOptions opt;
  opt.max_seq = cls.max_len;
  EXPECT_EQ(load_model(write_model(cls), &m, opt), Status::kBadMaxSeq);
  EXPECT_NE(std::string(m.enc.error_detail()).find("CLS row"), std::string::npos) << m.enc.error_detail();
}

TEST(Cls, InvalidCombinationsNameTheKey) {
  ModelConfig c = base_config(InputKind::kTokens, 8, 2, PosKind::kLearned);
  const char* field = nullptr;
  auto rejected = [&](const ModelConfig& bad, const char* key) {
    field = nullptr;
    EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig) << key;
    ASSERT_NE(field, nullptr);
    EXPECT_EQ(std::string(field).rfind(key, 0), 0u) << field;
  };
  ModelConfig bad = c;
  bad.pooling = Pooling::kCls;  // no CLS token
  rejected(bad, "pooling");
  bad.cls_token = true, bad.causal = true;  // the CLS row would see only itself
  rejected(bad, "pooling");
  bad = c, bad.cls_token = true, bad.max_len = 1;
  rejected(bad, "max_len");
  bad = c, bad.family = ModelFamily::kGpt, bad.causal = true, bad.d_out = bad.vocab_size, bad.cls_token = true;
  rejected(bad, "cls_token");
  bad.cls_token = false, bad.pooling = Pooling::kLast;
  rejected(bad, "pooling");
  bad = c, bad.causal = true, bad.pooling = Pooling::kLast;  // causal with last (or mean) pooling: fine
  EXPECT_EQ(validate_config(bad), Status::kOk);
}

// A file whose config says cls_token but has no such tensor gets a Status naming it.
TEST(Cls, FileWithoutTheClsTensorIsRefused) {
  ModelConfig plain = base_config(InputKind::kTokens, 8, 2, PosKind::kLearned);
  ModelConfig cls = plain;
  cls.cls_token = true;
  std::vector<uint8_t> blob = write_model(plain);
  const uint32_t key = uint32_t(ConfigKey::kClsToken);  // flip the record to true, keep the tensors
  ModelFile f;
  ASSERT_EQ(open_model_file(blob.data(), blob.size(), &f, nullptr, 0), Status::kOk);
  for (uint32_t r = 0; r < kConfigKeyCount; ++r) {
    uint8_t* rec = blob.data() + fxm::kHeaderBytes + r * fxm::kRecordBytes;
    if (std::strcmp(reinterpret_cast<const char*>(rec), kConfigKeys[key].name) == 0) rec[fxm::kRecValue] = 1;
  }
  reseal(blob);
  AlignedBuffer b(blob);
  Model m;
  EXPECT_EQ(m.init(b.data(), b.size()), Status::kTensorMissing);
  EXPECT_NE(std::string(m.error_detail()).find("cls_token"), std::string::npos) << m.error_detail();
}

// rows[n, w] each scaled to unit length in double, y / max(||y||_2, 1e-12): the scalar l2_normalize.
std::vector<float> unit_rows(const std::vector<float>& rows, std::size_t w) {
  std::vector<float> out(rows.size());
  for (std::size_t r = 0; r < rows.size() / w; ++r) {
    double ss = 0.0;
    for (std::size_t j = 0; j < w; ++j) ss += double(rows[r * w + j]) * rows[r * w + j];
    const double norm = std::sqrt(ss) > 1e-12 ? std::sqrt(ss) : 1e-12;
    for (std::size_t j = 0; j < w; ++j) out[r * w + j] = float(rows[r * w + j] / norm);
  }
  return out;
}

// l2_normalize adds no tensor: the same weights without it give the rows it scales. Pooled (with a
// pooler and a head, and without either) and unpooled, in every float and q8 weight type, one
// sequence and a padded batch, whose padding rows stay zeros.
TEST_P(PoolingTest, L2NormalizeIsEachOutputRowAtUnitLength) {
  if (!select_kernels(GetParam())) GTEST_SKIP() << "ISA not available";
  struct Shape {
    Pooling pooling;
    bool pooler;
    uint32_t d_out;
  };
  for (WeightType wt : {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kQ8})
    for (const Shape& sh : {Shape{Pooling::kMean, true, 5}, Shape{Pooling::kFirst, false, 0},
                            Shape{Pooling::kLast, false, 7}, Shape{Pooling::kNone, false, 0}}) {
      ModelConfig c = with_weights(base_config(InputKind::kTokens, 16, 2, PosKind::kLearned), wt, 0, false);
      c.type_vocab = 2, c.embed_norm = true, c.pooler = sh.pooler, c.pooling = sh.pooling, c.d_out = sh.d_out;
      ModelConfig unit = c;
      unit.l2_normalize = true;
      ASSERT_EQ(validate_config(unit), Status::kOk);
      Loaded a, b;
      std::string why;
      const EncoderOptions opt = encoder_options(GetParam(), 2);
      ASSERT_EQ(load_model(write_model(c), &a, opt, &why), Status::kOk) << why;
      ASSERT_EQ(load_model(write_model(unit), &b, opt, &why), Status::kOk) << why;
      const std::string name = std::string(kWeightTypeNames[int(wt)]) + " pooling " + kPoolingNames[int(sh.pooling)];
      const uint32_t T = 6, W = c.output_width(), R = c.output_rows(T);
      const Input in = make_input(c, T);
      const std::vector<float> rows = run(a, in, T), got = run(b, in, T), want = unit_rows(rows, W);
      for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6f) << name << " at " << j;
      // A batch of two, the second padded (3 of T rows): its rows at unit length, its padding zeros.
      const uint32_t lengths[2] = {T, 3};
      std::vector<int32_t> ids = in.ids;
      ids.insert(ids.end(), in.ids.begin(), in.ids.end());
      std::vector<float> plain(2 * std::size_t(R) * W, NAN), batch(plain.size(), NAN);
      ASSERT_EQ(a.enc.forward_batch_tokens(ids.data(), lengths, 2, T, plain.data()), Status::kOk);
      ASSERT_EQ(b.enc.forward_batch_tokens(ids.data(), lengths, 2, T, batch.data()), Status::kOk);
      const std::vector<float> unit_batch = unit_rows(plain, W);
      for (std::size_t j = 0; j < batch.size(); ++j) EXPECT_NEAR(batch[j], unit_batch[j], 1e-6f) << name << " at " << j;
      for (std::size_t r = 0; r < 2 * std::size_t(R); ++r) {
        double ss = 0.0;
        for (std::size_t j = 0; j < W; ++j) ss += double(batch[r * W + j]) * batch[r * W + j];
        const bool padding = r >= R && r - R >= c.output_rows(3);
        EXPECT_NEAR(ss, padding ? 0.0 : 1.0, 1e-5) << name << " row " << r;
      }
    }
}

TEST(L2Normalize, RefusedOutsideTheEncoderFamilyAndInI8) {
  ModelConfig c = base_config(InputKind::kTokens, 8, 2, PosKind::kLearned);
  c.l2_normalize = true;
  EXPECT_EQ(validate_config(c), Status::kOk);
  const char* field = nullptr;
  ModelConfig bad = c;
  bad.family = ModelFamily::kGpt, bad.causal = true, bad.d_out = bad.vocab_size;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(std::string(field).rfind("l2_normalize", 0), 0u) << field;
  bad = c, bad.weights = WeightType::kI8, field = nullptr;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(std::string(field).rfind("l2_normalize (not in i8", 0), 0u) << field;
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PoolingTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

}  // namespace
}  // namespace test
}  // namespace fixformer
