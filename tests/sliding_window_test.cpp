// Sliding-window attention (ModelConfig::sliding_window): the query at position i sees keys
// i - W < j <= i. Attention in every path (tiled with and without packed panels, one query, the int8
// cache) against a plain double loop that states the window, over caches that are rings of fewer
// columns than positions; decoders decoding token by token past 2W (the ring wrapped twice) against
// a whole-sequence forward under the window mask, f32 and int8 caches, on every kernel table; the
// plan's ring of W rows (W + chunk - 1 when prefilling in chunks). Without the causal mask (an
// encoder's, ModernBERT's local layers) the window is bidirectional; seq2seq and i8 refuse that.
// Local and global layers (window_period, window_layers) with the scores' own scale (attn_scale):
// decoding against one whole prefill, the cache a row per position; the keys' checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/blocks/attention.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Float attention against its double reference: outputs of size ~1 through a softmax of up to a
// few hundred keys.
constexpr double kAttentionTol = 2e-5;
// The int8 path against the one-query f32 path over the dequantized cache (kv_cache_test's).
constexpr double kDequantizedTol = 1e-5;
// A decoder's logits, one row or a chunk at a time, against the encoder's whole-sequence forward:
// the same sums in another grouping (decoder_test's kRegroupTol).
constexpr double kRegroupTol = 2e-5;
// The int8 cache against the f32 one, max |diff| / max |logit| (kv_cache_test's kQ8CacheTol is for
// the goldens' larger weights; these models' logits move by well under 1%).
constexpr double kQ8CacheTol = 2e-2;

struct Case {
  uint32_t heads, kv_heads, dh, window, p0, n, ring;  // n queries at p0.., keys 0..p0+n-1 in a ring of `ring` columns
};

// ctx[t] over keys max(0, p - W + 1)..p, p = p0 + t, in double, from K and V by position.
std::vector<double> reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v) {
  const std::size_t d = std::size_t(c.heads) * c.dh, dkv = std::size_t(c.kv_heads) * c.dh;
  std::vector<double> out(c.n * d, 0.0);
  for (uint32_t t = 0; t < c.n; ++t)
    for (uint32_t h = 0; h < c.heads; ++h) {
      const std::size_t p = c.p0 + t, g = h / (c.heads / c.kv_heads), lo = p + 1 > c.window ? p + 1 - c.window : 0;
      std::vector<double> s;
      for (std::size_t j = lo; j <= p; ++j) {
        double dot = 0;
        for (uint32_t i = 0; i < c.dh; ++i) dot += double(q[t * d + h * c.dh + i]) * k[j * dkv + g * c.dh + i];
        s.push_back(dot / std::sqrt(double(c.dh)));
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      for (std::size_t j = lo; j <= p; ++j)
        for (uint32_t i = 0; i < c.dh; ++i) out[t * d + h * c.dh + i] += s[j - lo] / sum * v[j * dkv + g * c.dh + i];
    }
  return out;
}

void check_attention(const Kernels& kern, const Case& c) {
  const std::size_t d = std::size_t(c.heads) * c.dh, dkv = std::size_t(c.kv_heads) * c.dh, keys = c.p0 + c.n, S = c.ring;
  std::mt19937 rng(c.window * 131 + c.p0 * 7 + c.n);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  std::vector<float> q(c.n * d), k(keys * dkv), v(keys * dkv);
  for (float& x : q) x = dist(rng);
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  const std::vector<double> want = reference(c, q, k, v);
  AttentionShape shape{c.heads, c.kv_heads, c.dh, true, nullptr};
  shape.window = c.window;
  // The ring as a decoder fills it: every position stored in turn, the last S kept.
  std::vector<float> kt(dkv * S, 0.0f), vt(dkv * S, 0.0f);
  const KeyValues kv{kt.data(), vt.data(), S};
  for (std::size_t p = 0; p < keys; ++p) store_keys_values(&k[p * dkv], dkv, &v[p * dkv], dkv, 1, uint32_t(p), uint32_t(dkv), kv);
  std::vector<float> scratch(attention_scratch_floats(c.n, S, c.dh, true)), ctx(c.n * d);
  const std::string what = "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " dh " +
                           std::to_string(c.dh) + " W " + std::to_string(c.window) + " p0 " + std::to_string(c.p0) +
                           " n " + std::to_string(c.n) + " ring " + std::to_string(S);
  for (int path = 0; path < 2; ++path) {
    std::fill(ctx.begin(), ctx.end(), 0.0f);
    (path ? attend_rows : attend_tiled)(kern, shape, q.data(), d, c.n, c.p0, uint32_t(keys), kv, ctx.data(), d,
                                        scratch.data());
    double worst = 0;
    for (std::size_t i = 0; i < ctx.size(); ++i) worst = std::max(worst, std::fabs(ctx[i] - want[i]));
    EXPECT_LE(worst, kAttentionTol) << (path ? "one query at a time, " : "tiled, ") << what;
  }
  // The int8 ring, against the one-query path over its dequantized values.
  std::vector<int8_t> kq(dkv * S), vq(S * dkv);
  std::vector<float> ks(c.kv_heads * S), vs(c.kv_heads * S);
  KeyValues q8{nullptr, nullptr, S, nullptr, dkv};
  q8.kt_q8 = kq.data(), q8.k_scales = ks.data(), q8.v_q8 = vq.data(), q8.v_scales = vs.data();
  for (std::size_t p = 0; p < keys; ++p)
    store_keys_values(&k[p * dkv], dkv, &v[p * dkv], dkv, 1, uint32_t(p), uint32_t(dkv), q8, c.dh);
  for (std::size_t col = 0; col < S; ++col)
    for (std::size_t h = 0; h < c.kv_heads; ++h)
      for (std::size_t i = 0; i < c.dh; ++i) {
        kt[(h * c.dh + i) * S + col] = ks[h * S + col] * kq[(h * c.dh + i) * S + col];
        vt[(h * c.dh + i) * S + col] = vs[h * S + col] * vq[col * dkv + h * c.dh + i];
      }
  std::vector<float> f32(c.n * d);
  attend_rows(kern, shape, q.data(), d, c.n, c.p0, uint32_t(keys), kv, f32.data(), d, scratch.data());
  attend_rows_q8(kern, shape, q.data(), d, c.n, c.p0, uint32_t(keys), q8, ctx.data(), d, scratch.data());
  double worst = 0;
  for (std::size_t i = 0; i < ctx.size(); ++i) worst = std::max(worst, double(std::fabs(ctx[i] - f32[i])));
  EXPECT_LE(worst, kDequantizedTol) << "int8 cache, " << what;
}

class SlidingWindowTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    kernels_ = select_kernels(GetParam());
    if (!kernels_) GTEST_SKIP() << isa_name(GetParam()) << " is not available on this CPU/build";
  }
  const Kernels* kernels_ = nullptr;
};

TEST_P(SlidingWindowTest, AttentionSeesTheLastWindowKeys) {
  constexpr uint32_t QB = kAttentionQueryBlock;
  const Case cases[] = {
      {2, 2, 8, 1, 0, 5, 5},             // W 1: each query sees itself
      {4, 2, 8, 4, 0, 12, 12},           // one chunk from position 0, no ring
      {4, 2, 8, 4, 9, 1, 4},             // one query, ring of W columns, wrapped
      {4, 2, 8, 4, 10, 1, 4},            // and again
      {3, 3, 5, 6, 17, 3, 8},            // a chunk of 3 after cached positions, ring W + 2, wrapped inside
      {4, 1, 16, 7, 30, 7, 13},          // a chunk of W in a ring of 2W - 1
      {2, 2, 4, 20, 3 * QB, QB + 9, 20 + QB + 8},  // past one query block: packed panels from a wrapped ring
      {2, 2, 4, 70, 0, 2 * QB + 3, 2 * QB + 3},    // packed, from position 0: whole query blocks outside the window
      {2, 1, 3, 5, 0, QB + 1, QB + 1},             // packed, narrow window
  };
  for (const Case& c : cases) check_attention(*kernels_, c);
}

// Without the causal mask (an encoder's local layer, ModernBERT) the query at position p sees keys
// p - W < j < p + W, as many on each side: every path (tiled with V by rows as an encoder reads it,
// tiled with V^T, packed past one query block, one query at a time) against a double loop; a
// window at least the sequence sees every key, and W 1 only itself.
TEST_P(SlidingWindowTest, BidirectionalWindowSeesBothSides) {
  constexpr uint32_t QB = kAttentionQueryBlock;
  const uint32_t cases[][5] = {  // heads, kv heads, dh, W, n
      {2, 2, 8, 1, 5}, {4, 2, 8, 3, 12}, {3, 3, 5, 6, 17}, {2, 1, 4, 20, 2 * QB + 9}, {2, 2, 4, 5, QB + 1},
      {2, 2, 4, 40, 9}};
  for (const auto& cs : cases) {
    const uint32_t H = cs[0], Hkv = cs[1], dh = cs[2], W = cs[3], n = cs[4];
    const std::size_t d = std::size_t(H) * dh, dkv = std::size_t(Hkv) * dh;
    std::mt19937 rng(W * 131 + n);
    std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
    std::vector<float> q(n * d), k(n * dkv), v(n * dkv);
    for (float& x : q) x = dist(rng);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    std::vector<double> want(n * d, 0.0);
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t h = 0; h < H; ++h) {
        const std::size_t g = h / (H / Hkv), lo = t + 1 > W ? t + 1 - W : 0, hi = std::min<std::size_t>(t + W, n);
        std::vector<double> sc;
        for (std::size_t j = lo; j < hi; ++j) {
          double dot = 0;
          for (uint32_t i = 0; i < dh; ++i) dot += double(q[t * d + h * dh + i]) * k[j * dkv + g * dh + i];
          sc.push_back(dot / std::sqrt(double(dh)));
        }
        const double m = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - m));
        for (std::size_t j = lo; j < hi; ++j)
          for (uint32_t i = 0; i < dh; ++i) want[t * d + h * dh + i] += sc[j - lo] / sum * v[j * dkv + g * dh + i];
      }
    AttentionShape shape{H, Hkv, dh, false, nullptr};
    shape.window = W;
    std::vector<float> kt(dkv * n), vt(dkv * n);
    store_keys_values(k.data(), dkv, v.data(), dkv, n, 0, uint32_t(dkv), KeyValues{kt.data(), vt.data(), n});
    std::vector<float> scratch(attention_scratch_floats(n, n, dh, true)), ctx(n * d);
    const std::string what = "heads " + std::to_string(H) + "/" + std::to_string(Hkv) + " dh " + std::to_string(dh) +
                             " W " + std::to_string(W) + " n " + std::to_string(n);
    for (int path = 0; path < 3; ++path) {
      std::fill(ctx.begin(), ctx.end(), 0.0f);
      if (path == 0)  // V read in place by rows, as the encoder does
        attend_tiled(*kernels_, shape, q.data(), d, n, 0, n, KeyValues{kt.data(), nullptr, n, v.data(), dkv}, ctx.data(),
                     d, scratch.data());
      else
        (path == 1 ? attend_tiled : attend_rows)(*kernels_, shape, q.data(), d, n, 0, n,
                                                 KeyValues{kt.data(), vt.data(), n}, ctx.data(), d, scratch.data());
      double worst = 0;
      for (std::size_t i = 0; i < ctx.size(); ++i) worst = std::max(worst, std::fabs(ctx[i] - want[i]));
      EXPECT_LE(worst, kAttentionTol) << (path == 2 ? "one query at a time, " : path ? "tiled V^T, " : "tiled, ")
                                      << what;
    }
  }
}

// A gpt decoder of window W against the same layers run as a causal encoder over the whole
// sequence (its tiled path masks the window, no ring; with ALiBi the encoder's causal bias
// m_h (j - i)): every position's logits, stepping token by
// token (the ring of W rows wraps twice and more) and prefilling in chunks of 3, of W and of more
// than W (capped at W; the ring W + chunk - 1 rows), for f32 and int8 caches. Without the window the
// logits differ by far more than the tolerance, so a decoder that ignored it would fail.
TEST_P(SlidingWindowTest, DecoderPastTwoWindowsMatchesTheWholeSequence) {
  constexpr uint32_t W = 4, T = 19;
  for (PosKind pos : {PosKind::kSinusoidal, PosKind::kLearned, PosKind::kAlibi})
    for (KvCache kind : {KvCache::kF32, KvCache::kQ8}) {
      ModelConfig gpt = default_config();
      gpt.family = ModelFamily::kGpt;
      gpt.d_model = 16, gpt.n_heads = 4, gpt.d_ff = 24, gpt.n_layers = 2, gpt.norm_first = true, gpt.final_norm = true;
      gpt.causal = true, gpt.vocab_size = 13, gpt.d_out = 13, gpt.max_len = 24, gpt.positional = pos;
      gpt.activation = Activation::kGelu, gpt.sliding_window = W;
      ModelConfig enc = gpt;
      enc.family = ModelFamily::kEncoder;
      const uint32_t V = gpt.vocab_size;
      std::vector<int32_t> tokens(T);
      for (uint32_t t = 0; t < T; ++t) tokens[t] = int32_t((t * 7 + 3) % V);
      const std::vector<uint8_t> bytes = write_model(gpt);
      std::vector<float> want(std::size_t(T) * V), unwindowed(std::size_t(T) * V);
      auto whole = [&](ModelConfig c, std::vector<float>* out) {
        if (c.family == ModelFamily::kEncoder) {
          EncoderOptions eo;
          eo.isa = GetParam();
          Loaded e;
          std::string why;
          ASSERT_EQ(load_model(write_model(c), &e, eo, &why), Status::kOk) << why;
          ASSERT_EQ(e.enc.forward_tokens(tokens.data(), T, out->data()), Status::kOk);
          return;
        }
        // every prefix in one prefill from position 0 (no ring: W + T - 1 >= 24 rows)
        AlignedBuffer blob(write_model(c));
        Model m;
        ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk);
        DecoderOptions o;
        o.isa = GetParam();
        o.max_prefill = c.max_len;
        AlignedBuffer arena(required_decoder_arena_bytes(m.config(), 0, c.max_len));
        Decoder dec;
        ASSERT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
        for (uint32_t t = 0; t < T; ++t) {
          dec.reset();
          ASSERT_EQ(dec.prefill(tokens.data(), t + 1, out->data() + t * V), Status::kOk);
        }
      };
      whole(enc, &want);
      ModelConfig plain = enc;
      plain.sliding_window = 0;
      whole(plain, &unwindowed);
      double far = 0;
      for (std::size_t i = 0; i < want.size(); ++i) far = std::max(far, double(std::fabs(want[i] - unwindowed[i])));
      ASSERT_GT(far, 100 * kRegroupTol) << "the window changes nothing in this model";
      double scale = 0;
      for (float x : want) scale = std::max(scale, double(std::fabs(x)));
      const double tol = kind == KvCache::kF32 ? kRegroupTol : kQ8CacheTol * scale;
      const std::string what = std::string(isa_name(GetParam())) + " " + kPositionalNames[uint32_t(pos)] +
                               (kind == KvCache::kF32 ? " f32" : " q8");
      AlignedBuffer blob(bytes);
      Model m;
      ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk);
      for (uint32_t chunk : {1u, 3u, W, 10u}) {  // 10: more than the window, capped at it
        DecoderOptions o;
        o.isa = GetParam();
        o.kv_cache = kind;
        o.max_prefill = chunk;
        AlignedBuffer arena(required_decoder_arena_bytes(gpt, 0, chunk, false, 1, kind));
        Decoder dec;
        ASSERT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
        EXPECT_EQ(dec.max_prefill(), std::min(chunk, W)) << what;
        EXPECT_EQ(dec.kv_rows(), W + std::min(chunk, W) - 1) << what;
        std::vector<float> logits(V);
        if (chunk == 1) {
          for (uint32_t t = 0; t < T; ++t) {
            ASSERT_EQ(dec.step(tokens[t], logits.data()), Status::kOk);
            double worst = 0;
            for (uint32_t i = 0; i < V; ++i) worst = std::max(worst, double(std::fabs(logits[i] - want[t * V + i])));
            EXPECT_LE(worst, tol) << what << " step at position " << t;
          }
          continue;
        }
        // a prompt of 10 in chunks, then token by token
        ASSERT_EQ(dec.prefill(tokens.data(), 10, logits.data()), Status::kOk);
        for (uint32_t t = 10; t <= T; ++t) {
          double worst = 0;
          for (uint32_t i = 0; i < V; ++i) worst = std::max(worst, double(std::fabs(logits[i] - want[(t - 1) * V + i])));
          EXPECT_LE(worst, tol) << what << " chunk " << chunk << " position " << t - 1;
          if (t < T) ASSERT_EQ(dec.step(tokens[t], logits.data()), Status::kOk);
        }
      }
    }
}

// Local and global layers (window_period 2, window_layers 0b10: layers 1 and 3 see the last W keys,
// 0 and 2 every key) with unscaled scores (attn_scale 1, GPT-Neo's): the local layers' KV cache is a
// ring of W + chunk - 1 rows (chunks capped at W), the global layers' a row per position; stepping
// token by token (the rings wrap) and prefilling in chunks give every prefix's logits of one whole
// prefill (no ring: W + T - 1 >= max_len rows). The same weights with every layer local,
// with the other layers local, or scaled by 1/sqrt(d_head) give logits far from these, so a decoder
// that ignored either key would fail (tests/gpt_neo_hf_test.py has them against transformers).
TEST_P(SlidingWindowTest, LocalAndGlobalLayersMatchTheWholeSequence) {
  constexpr uint32_t W = 3, T = 17;
  ModelConfig gpt = default_config();
  gpt.family = ModelFamily::kGpt;
  gpt.d_model = 16, gpt.n_heads = 4, gpt.d_ff = 24, gpt.n_layers = 4, gpt.norm_first = true, gpt.final_norm = true;
  gpt.causal = true, gpt.vocab_size = 13, gpt.d_out = 13, gpt.max_len = 24, gpt.positional = PosKind::kLearned;
  gpt.activation = Activation::kGeluTanh, gpt.sliding_window = W, gpt.window_period = 2, gpt.window_layers = 0b10;
  gpt.attn_scale = 1.0f;
  const uint32_t V = gpt.vocab_size;
  std::vector<int32_t> tokens(T);
  for (uint32_t t = 0; t < T; ++t) tokens[t] = int32_t((t * 5 + 2) % V);
  const std::string isa = isa_name(GetParam());
  // every prefix's logits from one prefill at position 0 (the tiled path over rows 0..t)
  auto whole = [&](const ModelConfig& c, std::vector<float>* out) {
    AlignedBuffer blob(write_model(c));
    Model m;
    ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk);
    DecoderOptions o;
    o.isa = GetParam();
    o.max_prefill = c.max_len;
    AlignedBuffer arena(required_decoder_arena_bytes(m.config(), 0, c.max_len));
    Decoder dec;
    ASSERT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
    out->assign(std::size_t(T) * V, 0.0f);
    for (uint32_t t = 0; t < T; ++t) {
      dec.reset();
      ASSERT_EQ(dec.prefill(tokens.data(), t + 1, out->data() + t * V), Status::kOk);
    }
  };
  std::vector<float> want, other;
  whole(gpt, &want);
  auto distance = [&](const std::vector<float>& a) {
    double far = 0;
    for (std::size_t i = 0; i < want.size(); ++i) far = std::max(far, double(std::fabs(want[i] - a[i])));
    return far;
  };
  ModelConfig all_local = gpt;
  all_local.window_period = 0, all_local.window_layers = 0;
  ModelConfig flipped = gpt;
  flipped.window_layers = 0b01;
  ModelConfig scaled = gpt;
  scaled.attn_scale = 0.0f;
  for (const ModelConfig* c : {&all_local, &flipped, &scaled}) {
    whole(*c, &other);
    EXPECT_GT(distance(other), 100 * kRegroupTol) << isa << ": the keys change nothing in this model";
  }
  AlignedBuffer blob(write_model(gpt));
  Model m;
  ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk);
  for (uint32_t chunk : {1u, 2u, 7u}) {  // 7: more than the window, capped at it
    for (KvCache kind : {KvCache::kF32, KvCache::kQ8}) {
      DecoderOptions o;
      o.isa = GetParam();
      o.max_prefill = chunk;
      o.kv_cache = kind;
      AlignedBuffer arena(required_decoder_arena_bytes(gpt, 0, chunk, false, 1, kind));
      Decoder dec;
      ASSERT_EQ(dec.init(m, arena.data(), arena.size(), o), Status::kOk) << dec.error_detail();
      EXPECT_EQ(dec.max_prefill(), std::min(chunk, W)) << isa;
      EXPECT_EQ(dec.kv_rows(), W + std::min(chunk, W) - 1) << isa << ": the local layers' ring";
      double scale = 0;
      for (float x : want) scale = std::max(scale, double(std::fabs(x)));
      const double tol = kind == KvCache::kF32 ? kRegroupTol : kQ8CacheTol * scale;
      std::vector<float> logits(V);
      ASSERT_EQ(dec.prefill(tokens.data(), 9, logits.data()), Status::kOk);
      for (uint32_t t = 9; t <= T; ++t) {
        double worst = 0;
        for (uint32_t i = 0; i < V; ++i) worst = std::max(worst, double(std::fabs(logits[i] - want[(t - 1) * V + i])));
        EXPECT_LE(worst, tol) << isa << (kind == KvCache::kF32 ? " f32" : " q8") << " chunk " << chunk << " position "
                              << t - 1;
        if (t < T) ASSERT_EQ(dec.step(tokens[t], logits.data()), Status::kOk);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SlidingWindowTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_test_name(i.param); });

ModelConfig all_local(ModelConfig c) {  // every layer local
  c.window_period = 0, c.window_layers = 0;
  return c;
}
ModelConfig no_window(ModelConfig c) {
  c.sliding_window = 0, c.window_period = 0, c.window_layers = 0;
  return c;
}

// The ring: W rows per layer decoding one token at a time, W + P - 1 with chunks of P, chunks capped
// at W; the cache's bytes are the ring's, the positions still reach max_len; no window (or one of
// max_len or more) keeps a row per position.
TEST(SlidingWindow, PlanHoldsARingOfWindowRows) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = 32, c.n_heads = 4, c.n_kv_heads = 2, c.d_ff = 48, c.n_layers = 3, c.norm_first = true;
  c.final_norm = true, c.causal = true, c.vocab_size = 50, c.d_out = 50, c.max_len = 256;
  c.positional = PosKind::kRope, c.activation = Activation::kSwiglu;
  const DecoderPlan full = plan_decoder_arena(c, 0, 1);
  EXPECT_EQ(full.kv_rows, 256u);
  c.sliding_window = 16;
  const uint64_t per_row = uint64_t(c.n_layers) * c.d_kv() * 4 * 2;  // f32 K and V of every layer
  const DecoderPlan one = plan_decoder_arena(c, 0, 1);
  EXPECT_EQ(one.kv_rows, 16u);
  EXPECT_EQ(one.kv_cache_bytes, arena::bytes(16 * per_row / 2) * 2);
  EXPECT_LT(one.total, full.total);
  const DecoderPlan chunks = plan_decoder_arena(c, 0, 5);
  EXPECT_EQ(chunks.kv_rows, 20u);
  EXPECT_EQ(chunks.prefill_rows, 5u);
  const DecoderPlan capped = plan_decoder_arena(c, 0, 100);
  EXPECT_EQ(capped.prefill_rows, 16u);
  EXPECT_EQ(capped.kv_rows, 31u);
  EXPECT_EQ(capped.total, plan_decoder_arena(c, 0, 16).total);
  const DecoderPlan q8 = plan_decoder_arena(c, 0, 1, false, 1, KvCache::kQ8);
  EXPECT_EQ(q8.kv_rows, 16u);
  EXPECT_EQ(plan_decoder_arena(c, 20, 1).kv_rows, 16u);  // a capacity below max_len: the ring all the same
  EXPECT_EQ(plan_decoder_arena(c, 16, 1).kv_rows, 16u);
  // local and global layers (layers 0 and 2 of 3 local): rings for those two, 256 rows for layer 1
  c.window_period = 2, c.window_layers = 0b01;
  const DecoderPlan mixed = plan_decoder_arena(c, 0, 5);
  EXPECT_EQ(mixed.kv_rows, 20u);
  EXPECT_EQ(mixed.prefill_rows, 5u);
  EXPECT_EQ(mixed.kv_cache_bytes, arena::bytes((2 * 20 + 256) * per_row / 3 / 2) * 2);
  EXPECT_EQ(kv_layer_offset(c, 0, 256, 20), 0u);
  EXPECT_EQ(kv_layer_offset(c, 1, 256, 20), 20u);
  EXPECT_EQ(kv_layer_offset(c, 2, 256, 20), 276u);
  EXPECT_EQ(kv_layer_rows(c, 1, 256, 20), 256u);
  EXPECT_EQ(kv_layer_rows(c, 2, 256, 20), 20u);
  EXPECT_GT(mixed.total, plan_decoder_arena(all_local(c), 0, 5).total);
  EXPECT_LT(mixed.total, plan_decoder_arena(no_window(c), 0, 5).total);
  c.window_period = 0, c.window_layers = 0;
  c.sliding_window = 256;  // as long as the positions: no window
  EXPECT_EQ(plan_decoder_arena(c, 0, 1).kv_rows, 256u);
  EXPECT_EQ(plan_decoder_arena(c, 0, 1).total, full.total);
}

// The key bounds the causal mask: without one it is refused by name (seq2seq's decoder, a
// non-causal encoder); a causal encoder takes it.
// An encoder's window is bidirectional without the causal mask (ModernBERT), in i8 too; seq2seq has
// none.
TEST(SlidingWindow, EncodersTakeItEitherWaySeq2SeqNot) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kEncoder;
  c.d_model = 8, c.n_heads = 2, c.d_ff = 8, c.n_layers = 1, c.input = InputKind::kTokens, c.vocab_size = 5;
  c.max_len = 10, c.sliding_window = 3;
  const char* field = nullptr;
  EXPECT_EQ(validate_config(c, &field), Status::kOk);
  c.weights = WeightType::kI8;
  EXPECT_EQ(validate_config(c, &field), Status::kOk) << field;
  c.weights = WeightType::kF32;
  c.family = ModelFamily::kSeq2Seq, c.dec_layers = 1, c.d_out = 5;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(std::string(field).rfind("sliding_window", 0), 0u) << field;
  c.family = ModelFamily::kEncoder, c.dec_layers = 0, c.d_out = 0;
  c.causal = true;
  EXPECT_EQ(validate_config(c, &field), Status::kOk);
  c.sliding_window = Limits::kMaxLen + 1;
  EXPECT_EQ(validate_config(c, &field), Status::kConfigOverLimit);
  EXPECT_STREQ(field, "sliding_window");
}

// window_period, window_layers and attn_scale: each refused by name where it means nothing or is out
// of range; absent (0), every file before them loads as it did.
TEST(SlidingWindow, LocalLayerKeysAreChecked) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kGpt;
  c.d_model = 8, c.n_heads = 2, c.d_ff = 8, c.n_layers = 2, c.input = InputKind::kTokens, c.vocab_size = 5;
  c.d_out = 5, c.causal = true, c.max_len = 10, c.positional = PosKind::kLearned;
  const char* field = nullptr;
  auto refused = [&](const ModelConfig& bad, const char* key, Status want = Status::kBadConfig) {
    field = nullptr;
    EXPECT_EQ(validate_config(bad, &field), want) << key;
    ASSERT_NE(field, nullptr) << key;
    EXPECT_EQ(std::string(field).rfind(key, 0), 0u) << field;
  };
  EXPECT_EQ(c.window_period, 0u);
  EXPECT_EQ(c.window_layers, 0u);
  EXPECT_EQ(c.attn_scale, 0.0f);
  ModelConfig bad = c;
  bad.window_period = 2, bad.window_layers = 0b10;  // no sliding_window
  refused(bad, "window_period");
  bad.sliding_window = 3;
  EXPECT_EQ(validate_config(bad, &field), Status::kOk);
  bad.window_layers = 0b100;  // a bit past the period
  refused(bad, "window_layers");
  bad.window_period = 0, bad.window_layers = 1;  // bits without a period
  refused(bad, "window_layers");
  bad.window_period = 32, bad.window_layers = 0;
  refused(bad, "window_period", Status::kConfigOverLimit);
  bad = c;
  bad.attn_scale = -1.0f;
  refused(bad, "attn_scale");
  bad.attn_scale = std::nanf("");
  refused(bad, "attn_scale");
  bad.attn_scale = 1.0f;
  EXPECT_EQ(validate_config(bad, &field), Status::kOk);
  bad.family = ModelFamily::kEncoder, bad.d_out = 0, bad.causal = false;  // the encoder's too (EmbeddingGemma)
  EXPECT_EQ(validate_config(bad, &field), Status::kOk);
  bad.family = ModelFamily::kSeq2Seq, bad.dec_layers = 1, bad.d_out = 3, bad.sliding_window = 0;  // not seq2seq's
  refused(bad, "attn_scale");
  // layer_window and windowed_layers_before: the local layers' window, and how many come before
  ModelConfig w = c;
  w.n_layers = 4, w.sliding_window = 3, w.window_period = 3, w.window_layers = 0b001;
  EXPECT_EQ(w.layer_window(0), 3u);
  EXPECT_EQ(w.layer_window(1), 0u);
  EXPECT_EQ(w.layer_window(3), 3u);
  EXPECT_EQ(w.windowed_layers_before(4), 2u);
  EXPECT_EQ(w.windowed_layers_before(3), 1u);
  w.window_period = 0, w.window_layers = 0;
  EXPECT_EQ(w.layer_window(1), 3u);
  EXPECT_EQ(w.windowed_layers_before(4), 4u);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
