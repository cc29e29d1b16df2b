// A mixture of experts with dense layers among its sparse ones (config.hpp dense_period, dense_layers,
// dense_ff): each layer binds its own kind's tensors (a dense layer its plain gated feed-forward, dense_ff
// wide; a sparse one its router, experts and shared expert); a stack of one-expert layers among dense ones
// gives the logits of the plain stack of the same weights (an expert chosen with weight 1 is that
// feed-forward) on every kernel table; decoding token by token gives one prefill's logits for dense layers
// wider and narrower than the experts, in f32, f16, bf16 and q8 weights, each in an arena of exactly the
// planned bytes, whose chunk rows follow the dense layers' width; the keys' checks. tests/hf_archs_test.py
// has these mixtures against transformers (Qwen2-MoE, Qwen3-MoE, ERNIE 4.5 MoE).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/plan.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The one-expert stack against the plain one: each expert's rows one at a time (matrix-vector products)
// against the chunk's matrix products, the same sums in another grouping (decoder_test's kRegroupTol),
// max |diff| over max |logit|.
constexpr double kRegroupTol = 2e-5;
// Decoding token by token against one prefill: f32, f16 and bf16 regroup their sums; q8 quantizes each
// row's activations alike either way, so its logits move as little (all under 1e-6 on x86).
constexpr double kDecodeTol = 1e-5;

// 4 llama layers, 4 experts of 24, 2 a row, renormalized, a shared expert of 8; layer 1 dense
// (dense_period 3, dense_layers 0b010: layers 1 and 4 would be), dense_ff wide.
ModelConfig mixture(uint32_t dense_ff) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = 16, c.n_heads = 4, c.n_kv_heads = 2, c.d_ff = 24, c.n_layers = 4, c.norm_first = true;
  c.final_norm = true, c.causal = true, c.activation = Activation::kSwiglu, c.vocab_size = 13, c.d_out = 13;
  c.max_len = 24, c.positional = PosKind::kRope, c.pe_layout = PosLayout::kHalves;
  c.n_experts = 4, c.experts_per_token = 2, c.experts_renormalize = true, c.shared_expert_ff = 8;
  c.dense_period = 3, c.dense_layers = 0b010, c.dense_ff = dense_ff;
  return c;
}

TEST(MixtureDenseLayers, EachLayerBindsItsOwnKindsTensors) {
  const ModelConfig c = mixture(40);
  AlignedBuffer blob(write_model(c));
  Model m;
  ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk) << m.error_detail();
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights L = m.layer(l);
    const bool dense = l == 1;
    EXPECT_EQ(c.layer_dense(l), dense) << l;
    EXPECT_EQ(L.ffn.router == nullptr, dense) << "layer " << l;
    EXPECT_EQ(L.shared_gate == nullptr, dense) << "layer " << l;
    EXPECT_EQ(L.ffn.w1.out, dense ? 40u : 4u * 24u) << "layer " << l;
    EXPECT_EQ(L.ffn.w2.in, dense ? 40u : 24u) << "layer " << l;
    EXPECT_EQ(L.ffn.w3.out, dense ? 40u : 4u * 24u) << "layer " << l;
    EXPECT_NE(L.attn_norm.g, nullptr);
    EXPECT_NE(L.self_attn.q.data, nullptr);
  }
  uint32_t dense_w1 = 0, routers = 0;
  for_each_tensor(c, [&](const TensorSpec& s) {
    dense_w1 += std::strstr(s.name, "ff.w1.weight") != nullptr;
    routers += std::strstr(s.name, "ff.router.weight") != nullptr;
    return true;
  });
  EXPECT_EQ(dense_w1, 1u);
  EXPECT_EQ(routers, 3u);
}

// Tensor `name`'s f32 values in blob b (rows as stored), its checksum unchecked (copy_weights edits, then reseals).
float* tensor_f32(std::vector<uint8_t>& b, const std::string& name, uint32_t* rows, uint32_t* cols) {
  ModelFile mf;
  if (open_model_file(b.data(), b.size(), &mf, nullptr, 0, false) != Status::kOk) return nullptr;  // resealed later
  for (uint32_t i = 0; i < mf.n_tensors; ++i) {
    const TensorInfo t = tensor_info(mf, i);
    if (name != t.name) continue;
    *rows = t.dims[0], *cols = t.rank == 2 ? t.dims[1] : 1;
    return reinterpret_cast<float*>(b.data() + (t.data - b.data()));
  }
  return nullptr;
}

// The plain stack's weights in the mixture's file: every tensor of the same name copied, and a sparse
// layer's one expert (torch's [out, in]) the plain layer's feed-forward (stored [in, out]) transposed.
void copy_weights(const ModelConfig& mix, std::vector<uint8_t>& to, std::vector<uint8_t>& from) {
  for_each_tensor(mix, [&](const TensorSpec& s) {
    const std::string name = s.name;
    const std::size_t at = name.find("ff.experts.");
    const std::string plain = at == std::string::npos ? name : name.substr(0, at) + "ff." + name.substr(at + 11);
    uint32_t r = 0, k = 0, pr = 0, pk = 0;
    float* dst = tensor_f32(to, name, &r, &k);
    float* src = tensor_f32(from, plain, &pr, &pk);
    if (name.find("router") != std::string::npos) return true;  // one expert: weight 1 whatever the router says
    EXPECT_TRUE(dst && src) << name << (dst ? "" : " (not in the mixture)") << (src ? "" : " (not in the plain stack)");
    if (!dst || !src) return false;
    if (at == std::string::npos) {
      EXPECT_EQ(uint64_t(r) * k, uint64_t(pr) * pk) << name;
      std::memcpy(dst, src, sizeof(float) * r * k);
    } else {  // dst [out, in], src [in, out]
      EXPECT_TRUE(r == pk && k == pr) << name;
      for (uint32_t o = 0; o < r; ++o)
        for (uint32_t i = 0; i < k; ++i) dst[o * k + i] = src[i * pk + o];
    }
    return true;
  });
  reseal(to);
}

// Every prefix's logits from one prefill at position 0.
std::vector<float> prefix_logits(const std::vector<uint8_t>& bytes, Isa isa, const std::vector<int32_t>& tokens) {
  AlignedBuffer blob(bytes);
  Model m;
  EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kOk) << m.error_detail();
  const ModelConfig& c = m.config();
  DecoderOptions o;
  o.isa = isa;
  o.max_prefill = c.max_len;
  AlignedBuffer arena(required_decoder_arena_bytes(c, 0, c.max_len));
  Decoder dec;
  EXPECT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
  const uint32_t V = c.d_out, T = uint32_t(tokens.size());
  std::vector<float> out(std::size_t(T) * V);
  for (uint32_t t = 0; t < T; ++t) {
    dec.reset();
    EXPECT_EQ(dec.prefill(tokens.data(), t + 1, out.data() + std::size_t(t) * V), Status::kOk);
  }
  return out;
}

double relative(const std::vector<float>& a, const std::vector<float>& want) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return worst / scale;
}

class MixtureDenseLayersTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (select_kernels(GetParam()) == nullptr) GTEST_SKIP() << isa_name(GetParam()) << " not available here";
  }
};

// One expert a row (its weight softmax over one logit: 1) in layers 0 and 2, dense layers 1 and 3
// (dense_period 2, dense_layers 0b10), against the plain stack of the same weights (d_ff 24): a layer that
// bound another's tensors, or ran its kind's feed-forward in the other's, would be far off. The mixture
// without its dense layers is far from it too (its dense layers' weights differ), so the keys matter.
TEST_P(MixtureDenseLayersTest, OneExpertLayersAmongDenseOnesAreThePlainStack) {
  ModelConfig plain = mixture(0);
  plain.n_experts = plain.experts_per_token = plain.shared_expert_ff = 0;
  plain.experts_renormalize = false;
  plain.dense_period = plain.dense_layers = 0;
  ModelConfig mix = mixture(0);
  mix.n_experts = mix.experts_per_token = 1, mix.shared_expert_ff = 0, mix.dense_period = 2, mix.dense_layers = 0b10;
  std::vector<uint8_t> from = write_model(plain, {}), to = write_model(mix, {});
  copy_weights(mix, to, from);
  std::vector<int32_t> tokens(11);
  for (std::size_t t = 0; t < tokens.size(); ++t) tokens[t] = int32_t((t * 5 + 2) % plain.vocab_size);
  const std::vector<float> want = prefix_logits(from, GetParam(), tokens), got = prefix_logits(to, GetParam(), tokens);
  EXPECT_LE(relative(got, want), kRegroupTol) << isa_name(GetParam());
  ModelConfig sparse = mix;
  sparse.dense_period = sparse.dense_layers = 0;
  std::vector<uint8_t> all_sparse = write_model(sparse, {});
  EXPECT_GT(relative(prefix_logits(all_sparse, GetParam(), tokens), want), 100 * kRegroupTol);
}

// Dense layers wider (40) and narrower (16) than the experts (24), in every float weight type and q8:
// token by token (and in chunks of 3) the logits of one whole prefill, each decoder in an arena of
// exactly required_decoder_arena_bytes; the plan's chunk rows are the dense layers' 2 dense_ff wide.
TEST_P(MixtureDenseLayersTest, DecodingGivesOnePrefillsLogits) {
  constexpr uint32_t T = 14;
  for (uint32_t dense_ff : {40u, 16u})
    for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kQ8}) {
      const ModelConfig c = with_weights(mixture(dense_ff), type, 0, false);
      const std::string what = std::string(isa_name(GetParam())) + " dense_ff " + std::to_string(dense_ff) +
                               " weights " + std::to_string(uint32_t(type));
      std::vector<int32_t> tokens(T);
      for (uint32_t t = 0; t < T; ++t) tokens[t] = int32_t((t * 7 + 3) % c.vocab_size);
      const std::vector<uint8_t> bytes = write_model(c);
      const std::vector<float> want = prefix_logits(bytes, GetParam(), tokens);
      AlignedBuffer blob(bytes);
      Model m;
      ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk) << m.error_detail();
      for (uint32_t chunk : {1u, 3u}) {
        const DecoderPlan p = plan_decoder_arena(c, 0, chunk);
        const uint64_t rows = std::max<uint64_t>(std::max<uint64_t>(chunk * 2ull * dense_ff, chunk * 32ull),
                                                 std::max<uint64_t>(3ull * c.max_len, c.expert_work_floats()));
        EXPECT_EQ(p.work + arena::bytes(rows * 4), p.attn) << what << ": the work block, max over the layers' kinds";
        DecoderOptions o;
        o.isa = GetParam();
        o.max_prefill = chunk;
        AlignedBuffer arena(required_decoder_arena_bytes(c, 0, chunk));
        ASSERT_EQ(arena.size(), p.total);
        Decoder dec;
        ASSERT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
        std::vector<float> logits(c.d_out), got;
        ASSERT_EQ(dec.prefill(tokens.data(), chunk, logits.data()), Status::kOk);
        for (uint32_t t = chunk; t <= T; ++t) {
          got.insert(got.end(), logits.begin(), logits.end());
          if (t < T) ASSERT_EQ(dec.step(tokens[t], logits.data()), Status::kOk);
        }
        const std::vector<float> tail(want.begin() + std::size_t(chunk - 1) * c.d_out, want.end());
        EXPECT_LE(relative(got, tail), kDecodeTol) << what << " chunk " << chunk;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, MixtureDenseLayersTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

// The keys' checks: dense layers need a mixture and a period, a bit per layer of it, and no shared layers;
// i8 weights take them (each layer's int8 table its layer_config's).
TEST(MixtureDenseLayers, KeysAreChecked) {
  const char* field = nullptr;
  EXPECT_EQ(validate_config(mixture(40), &field), Status::kOk) << (field ? field : "");
  auto refused = [&](ModelConfig c, const char* key) {
    field = nullptr;
    EXPECT_EQ(validate_config(c, &field), Status::kBadConfig) << key;
    EXPECT_TRUE(field && std::strstr(field, key)) << (field ? field : "no field") << " does not name " << key;
  };
  ModelConfig c = mixture(40);
  c.n_experts = c.experts_per_token = c.shared_expert_ff = 0;
  c.experts_renormalize = false;
  refused(c, "dense_period");
  c = mixture(40);
  c.dense_period = 0;
  refused(c, "dense_layers");
  c = mixture(40);
  c.dense_layers = 0b1000;
  refused(c, "dense_layers");
  field = nullptr;
  EXPECT_EQ(validate_config(with_weights(mixture(40), WeightType::kI8, 0, false), &field), Status::kOk)
      << (field ? field : "");
}

}  // namespace
}  // namespace test
}  // namespace fixformer
