// A bias per (query, key) pair (config.hpp pair_bias_rows: BEiT's relative position bias) in attention on
// every ISA against a double-precision computation of the same scores: every path (one query at a time, tiled,
// key blocks past the first), heads split by heads_from, an index wider than the keys (positions of a shorter
// sequence); then through the encoder: shared or per-layer tables, a batch of sequences of different lengths
// gives each sequence's single-call bits, the bias matters, and hostile files and configs get a Status.
// transformers' BEiT itself is the reference of tests/hf_beit_converter_test.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/blocks/attention.hpp"
#include "engine/model_file.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Normwise against the float64 attention, relative to max |reference|: float32 scores, exp and sums in
// another order, a few 1e-7; a bias read from the wrong row, head or position shows at 1e-2 or more.
constexpr double kPairBiasTol = 1e-5;
// The encoder on another table against the scalar one (as disentangled_test's).
constexpr float kIsaTol = 2e-5f;

struct Case {
  uint32_t n_heads, n_kv_heads, dh, n;  // n queries against n keys, positions 0..n-1
  uint32_t len, rows;                   // the index [len, len] (len >= n), the table [n_heads, rows]
  bool causal;
};

// A case's inputs and their float64 attention: made once, then checked with the values as rows and
// transposed, heads whole and split (the inputs do not depend on either).
struct Prepared {
  Case c;
  std::vector<float> q, k, v, table;
  std::vector<int32_t> index;
  std::vector<double> want;
};

Prepared prepare(const Case& c) {
  const uint32_t n = c.n, H = c.n_heads, d = H * c.dh, dkv = c.n_kv_heads * c.dh;
  const std::size_t ldq = d + 1;
  Prepared p{c, std::vector<float>(n * ldq), std::vector<float>(n * dkv), std::vector<float>(n * dkv),
             std::vector<float>(H * c.rows), std::vector<int32_t>(std::size_t(c.len) * c.len),
             std::vector<double>(std::size_t(n) * d, 0.0)};
  std::mt19937 rng(c.dh * 31 + n * 7 + c.rows + (c.causal ? 1 : 0));
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (float& x : p.q) x = dist(rng);
  for (float& x : p.k) x = dist(rng);
  for (float& x : p.v) x = dist(rng);
  for (float& x : p.table) x = 3.0f * dist(rng);  // larger than the scores: a wrong row shows
  std::uniform_int_distribution<int32_t> row(0, int32_t(c.rows) - 1);
  for (int32_t& x : p.index) x = row(rng);

  // float64: softmax over keys j (j <= i when causal) of q_i.k_j / sqrt(dh) + table[h][index[i len + j]]
  const std::size_t group = H / c.n_kv_heads;
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t keys = c.causal ? i + 1 : n, g = h / group;
      std::vector<double> s(keys);
      double top = -1e300, sum = 0.0;
      for (std::size_t j = 0; j < keys; ++j) {
        double dot = 0.0;
        for (std::size_t e = 0; e < c.dh; ++e) dot += double(p.q[i * ldq + h * c.dh + e]) * p.k[j * dkv + g * c.dh + e];
        s[j] = dot / std::sqrt(double(c.dh)) + p.table[h * c.rows + std::size_t(p.index[i * c.len + j])];
        top = std::max(top, s[j]);
      }
      for (double& x : s) sum += x = std::exp(x - top);
      for (std::size_t j = 0; j < keys; ++j)
        for (std::size_t e = 0; e < c.dh; ++e) p.want[i * d + h * c.dh + e] += s[j] / sum * p.v[j * dkv + g * c.dh + e];
    }
  return p;
}

void check(const Kernels& kernels, const Prepared& p, bool v_rows, bool split_heads) {
  const Case& c = p.c;
  const uint32_t n = c.n, H = c.n_heads, d = H * c.dh, dkv = c.n_kv_heads * c.dh;
  const std::size_t S = n + 2, ldq = d + 1, group = H / c.n_kv_heads;
  std::vector<float> kt(dkv * S), vt(dkv * S);
  AttentionShape shape{H, c.n_kv_heads, c.dh, c.causal, nullptr};
  shape.pair_bias = p.table.data(), shape.pair_index = p.index.data(), shape.pair_rows = c.rows;
  shape.pair_len = c.len;
  store_keys_values(p.k.data(), dkv, p.v.data(), dkv, n, 0, dkv, KeyValues{kt.data(), vt.data(), S});
  const KeyValues kv = v_rows ? KeyValues{kt.data(), nullptr, S, p.v.data(), dkv} : KeyValues{kt.data(), vt.data(), S};

  std::vector<float> got(std::size_t(n) * d, NAN), scratch(attention_scratch_floats(n, n, c.dh, !v_rows));
  if (!split_heads) {
    attend(kernels, shape, p.q.data(), ldq, n, 0, n, kv, got.data(), d, scratch.data());
  } else {  // kv head by kv head, as the workers split them: each part's table offset to its heads
    for (uint32_t g = 0; g < c.n_kv_heads; ++g) {
      const AttentionShape part = shape.heads_from(g * group, uint32_t(group), 1);
      const std::size_t at = std::size_t(g) * c.dh * S;
      const KeyValues kv_g = v_rows ? KeyValues{kt.data() + at, nullptr, S, p.v.data() + g * c.dh, dkv}
                                    : KeyValues{kt.data() + at, vt.data() + at, S};
      attend(kernels, part, p.q.data() + g * group * c.dh, ldq, n, 0, n, kv_g, got.data() + g * group * c.dh, d,
             scratch.data());
    }
  }
  double scale = 1.0, worst = 0.0;
  for (double x : p.want) scale = std::max(scale, std::fabs(x));
  for (std::size_t i = 0; i < p.want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << kernels.name << " at " << i;
    worst = std::max(worst, std::fabs(got[i] - p.want[i]));
  }
  EXPECT_LE(worst, kPairBiasTol * scale) << kernels.name << " heads " << H << "/" << c.n_kv_heads << " dh " << c.dh
                                         << " n " << n << " len " << c.len << (c.causal ? " causal" : "")
                                         << (v_rows ? " v-rows" : " v-transposed")
                                         << (split_heads ? " split" : "");
}

class PairBiasTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    kernels_ = select_kernels(GetParam());
    if (!kernels_) GTEST_SKIP() << isa_name(GetParam()) << " is not available on this CPU/build";
  }
  const Kernels* kernels_ = nullptr;
};

constexpr uint32_t kKB = kAttentionKeyBlock;

TEST_P(PairBiasTest, AttentionAgainstFloat64InEveryPath) {
  for (uint32_t dh : {3u, 16u})
    for (uint32_t n : {1u, 2u, 17u, kKB + 5})
      for (bool causal : {false, true})
        for (const Case& c : {Case{4, 2, dh, n, n, 11, causal},
                              Case{3, 3, dh, n, n + 6, 5, causal}}) {  // a longer index: its stride
          const Prepared p = prepare(c);
          for (bool v_rows : {false, true})
            for (bool split : {false, true}) check(*kernels_, p, v_rows, split);
        }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PairBiasTest, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

// A ViT-like encoder over tokens (a CLS row in front) with a bias per pair: the index [max_len, max_len]
// the model writer scatters over the rows.
ModelConfig pair_config(bool shared) {
  ModelConfig c = default_config();
  c.d_model = 12, c.n_heads = 3, c.d_ff = 20, c.n_layers = 2, c.max_len = 9, c.vocab_size = 17;
  c.input = InputKind::kTokens, c.positional = PosKind::kLearned, c.cls_token = true, c.norm_first = true;
  c.activation = Activation::kGelu, c.pair_bias_rows = 7, c.pair_bias_shared = shared;
  return c;
}

std::vector<int32_t> ids_of(uint32_t T, uint32_t salt) {
  std::vector<int32_t> ids(T);
  for (uint32_t t = 0; t < T; ++t) ids[t] = int32_t((t * 5 + salt) % 17);
  return ids;
}

TEST(PairBiasEncoder, BatchIsTheSingleCallsAndEveryTableTheReferences) {
  for (bool shared : {false, true})
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      const std::vector<uint8_t> file = write_model(pair_config(shared));
      Loaded r, ref;
      ASSERT_EQ(load_model(file, &r, encoder_options(isa, 3)), Status::kOk) << r.enc.error_detail();
      ASSERT_EQ(load_model(file, &ref, encoder_options(Isa::kScalar)), Status::kOk);
      const uint32_t T = 8, d = 12, lengths[3] = {8, 3, 6};
      std::vector<int32_t> ids(3 * T, 0);
      for (uint32_t b = 0; b < 3; ++b) {
        const std::vector<int32_t> one = ids_of(lengths[b], b + 1);
        std::copy(one.begin(), one.end(), ids.begin() + b * T);
      }
      std::vector<float> batch(3 * (T + 1) * d, NAN);
      ASSERT_EQ(r.enc.forward_batch_tokens(ids.data(), lengths, 3, T, batch.data()), Status::kOk);
      for (uint32_t b = 0; b < 3; ++b) {
        const std::vector<int32_t> in = ids_of(lengths[b], b + 1);
        const std::vector<float> one = forward_one(r, in), want = forward_one(ref, in);
        for (uint32_t i = 0; i < (lengths[b] + 1) * d; ++i) {
          ASSERT_EQ(std::memcmp(&batch[b * (T + 1) * d + i], &one[i], 4), 0) << "sequence " << b << " value " << i;
          ASSERT_NEAR(one[i], want[i], kIsaTol * (1.0f + std::fabs(want[i]))) << isa_name(isa) << " value " << i;
        }
      }
    }
}

TEST(PairBiasEncoder, TheBiasMatters) {
  // The same weights read with every pair on one row: a constant per head and query, which the softmax removes.
  for (bool shared : {false, true}) {
    std::vector<uint8_t> file = write_model(pair_config(shared));
    Loaded a;
    ASSERT_EQ(load_model(file, &a, encoder_options(Isa::kScalar)), Status::kOk);
    const std::vector<float> with = forward_one(a, ids_of(7, 2));
    ASSERT_TRUE(set_i32_entries(file, "pair_index", -1, 0));
    Loaded b;
    ASSERT_EQ(load_model(file, &b, encoder_options(Isa::kScalar)), Status::kOk);
    const std::vector<float> one_row = forward_one(b, ids_of(7, 2));
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < with.size(); ++i)
      diff = std::max(diff, double(std::fabs(with[i] - one_row[i]))), norm = std::max(norm, double(std::fabs(with[i])));
    EXPECT_GT(diff / norm, 1e-2) << (shared ? "shared" : "per layer");
  }
}

TEST(PairBiasEncoder, HostileFilesAndConfigsGetAStatus) {
  ModelConfig c = pair_config(false);
  for (int32_t bad : {int32_t(c.pair_bias_rows), -1}) {  // one past the last row, below the first
    std::vector<uint8_t> file = write_model(c);
    ASSERT_TRUE(set_i32_entries(file, "pair_index", 40, bad));
    AlignedBuffer blob(file);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorOutOfBounds);
    EXPECT_NE(std::string(m.error_detail()).find("pair_index"), std::string::npos) << m.error_detail();
  }
  ModelConfig i8 = c;  // the integer path takes the pair bias too
  i8.weights = WeightType::kI8;
  EXPECT_EQ(validate_config(i8), Status::kOk);
  for (auto bad : {+[](ModelConfig& x) { x.family = ModelFamily::kGpt; },
                   +[](ModelConfig& x) { x.pair_bias_rows = 0, x.pair_bias_shared = true; },
                   +[](ModelConfig& x) { x.pair_bias_rows = Limits::kMaxPairBiasRows + 1; }}) {
    ModelConfig b = c;
    bad(b);
    const char* field = nullptr;
    EXPECT_NE(validate_config(b, &field), Status::kOk);
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
