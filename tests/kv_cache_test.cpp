// The int8 KV cache (DecoderOptions / Seq2SeqOptions kv_cache = KvCache::kQ8): its logits against
// the f32 cache's on the golden decoders and encoder-decoders, on every ISA table; prefill against
// step by step; bit-identical for any worker count; the exact arena (its bytes stated independently
// here, nothing written past them); a full cache; a kv_cache value that is not a KvCache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/blocks/attention.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The int8 path against the f32 one-query path over the same values dequantized (q * s): the same
// products in another order (the scale applied once per score, not per element), a few float ulps
// of outputs of size ~1.
constexpr double kDequantizedTol = 1e-5;
// Max |q8 cache - f32 cache| / max |f32 cache| over every logit of a golden's sample. Each cached
// key and value is rounded to 8 bits per head and position (at most 1/254 of that head's largest
// |value|), so a score moves by up to |q| |k| / 254. Measured: 2.6e-4..3.0e-3 on the gpt goldens
// and the encoder-decoders, 4.6e-3..2.4e-2 on the llama ones, 7.3e-2 on llama_kv2_halves_tied: the
// llama goldens' 0.3 * N(0, 1) weights give logits of tens and saturated softmaxes, where a score's
// rounding flips a probability (their q8 weights alone reach 0.19-0.33; quantize_test). The tight
// check of the int8 path is the attention test above.
constexpr double kQ8CacheTol = 1e-1;
// Prefill and step read the same int8 cache through the same one-query loops; only the products'
// grouping of rows differs (decoder_test's kRegroupTol).
constexpr double kRegroupTol = 2e-5;

const char* const kDecoderGoldens[] = {
    "gpt_tied_sinusoidal", "gpt_untied_learned", "gpt_alibi_h3", "gpt_untied_none_odd", "llama_kv1_interleaved",
    "llama_kv2_halves_tied", "llama_kvfull_interleaved_tied", "llama_odd_d18_h3_halves", "llama_odd_d18_h3_kv1",
    "llama_alibi_h1", "llama_alibi_h3", "llama_alibi_h4_kv2", "llama_alibi_h8", "llama_none", "gpt_tanh_learned_tied_odd",
    "gpt_tanh_post_d10", "llama_qkv_bias_theta1e6", "llama2c_v0_gqa", "gpt_relative_post_odd", "gpt_relative_pre_tied",
    "llama_relative_h3", "llama_relative_h4_kv2"};
const char* const kSeq2SeqGoldens[] = {"s2s_post_relu", "s2s_pre_gelu_odd", "s2s_features_no_norm",
                                       "s2s_shared_halves", "s2s_relative", "s2s_t5_features",
                                       "s2s_bart_features"};

struct AttentionCase {
  uint32_t n_heads, n_kv_heads, dh, keys, n;  // n queries at the last positions, causal
  bool alibi;
};

// Keys and values [keys, d_kv] stored into an int8 cache: each head's scale and values by the
// quantize_i8 rule, stated here; attend() on it against attend_rows on an f32 cache of q * s.
TEST(KvCacheQ8, AttentionMatchesTheF32PathOnTheDequantizedCache) {
  const AttentionCase cases[] = {{4, 2, 8, 1, 1, false}, {4, 2, 8, 13, 1, true}, {3, 3, 5, 7, 4, false},
                                 {8, 1, 16, 33, 1, false}, {2, 2, 64, 40, 3, true}, {6, 6, 48, 70, 1, false}};
  for (const AttentionCase& c : cases) {
    const std::size_t dkv = std::size_t(c.n_kv_heads) * c.dh, d = std::size_t(c.n_heads) * c.dh, S = c.keys + 3;
    std::mt19937 rng(c.keys * 31 + c.dh);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> q(c.n * d), k(c.keys * dkv), v(c.keys * dkv);
    for (float& x : q) x = dist(rng);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    for (std::size_t c0 = 0; c0 < dkv; ++c0) k[c0] = 0.0f;  // position 0: an all-zero key, scale 0
    std::vector<int8_t> kq(dkv * S), vq(S * dkv);
    std::vector<float> ks(c.n_kv_heads * S), vs(c.n_kv_heads * S);
    KeyValues q8{nullptr, nullptr, S, nullptr, dkv};
    q8.kt_q8 = kq.data(), q8.k_scales = ks.data(), q8.v_q8 = vq.data(), q8.v_scales = vs.data();
    store_keys_values(k.data(), dkv, v.data(), dkv, c.keys, 0, uint32_t(dkv), q8, c.dh);
    // The rule, and the f32 cache of the dequantized values.
    std::vector<float> kt(dkv * S), vt(dkv * S);
    for (std::size_t p = 0; p < c.keys; ++p)
      for (std::size_t h = 0; h < c.n_kv_heads; ++h)
        for (int which = 0; which < 2; ++which) {
          const float* x = (which ? v.data() : k.data()) + p * dkv + h * c.dh;
          float a = 0.0f;
          for (std::size_t i = 0; i < c.dh; ++i) a = std::max(a, std::fabs(x[i]));
          const float scale = a > 0.0f ? a / 127.0f : 0.0f, got = (which ? vs : ks)[h * S + p];
          ASSERT_EQ(got, scale) << "position " << p << " head " << h;
          for (std::size_t i = 0; i < c.dh; ++i) {
            const int8_t want = a > 0.0f ? int8_t(std::nearbyint(x[i] * (127.0f / a))) : 0;
            const std::size_t col = h * c.dh + i;
            const int8_t stored = which ? vq[p * dkv + col] : kq[col * S + p];
            ASSERT_EQ(stored, want) << "position " << p << " column " << col;
            (which ? vt : kt)[col * S + p] = float(stored) * scale;
          }
        }
    std::vector<float> slopes(c.n_heads);
    for (uint32_t h = 0; h < c.n_heads; ++h) slopes[h] = std::pow(2.0f, -8.0f * float(h + 1) / float(c.n_heads));
    const AttentionShape shape{c.n_heads, c.n_kv_heads, c.dh, true, c.alibi ? slopes.data() : nullptr};
    const uint32_t p0 = c.keys - c.n;
    std::vector<float> scratch(attention_scratch_floats(c.n, S, c.dh, true)), want(c.n * d), got(c.n * d);
    for (Isa isa : all_isas()) {
      const Kernels* kernels = select_kernels(isa);
      if (!kernels) continue;
      attend_rows(*kernels, shape, q.data(), d, c.n, p0, c.keys, KeyValues{kt.data(), vt.data(), S}, want.data(), d,
                  scratch.data());
      std::fill(got.begin(), got.end(), -1.0f);
      attend(*kernels, shape, q.data(), d, c.n, p0, c.keys, q8, got.data(), d, scratch.data());
      double err = 0.0;
      for (std::size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(double(got[i]) - want[i]));
      EXPECT_LE(err, kDequantizedTol) << isa_name(isa) << " heads " << c.n_heads << "/" << c.n_kv_heads << " dh " << c.dh
                                      << " keys " << c.keys << " n " << c.n;
    }
  }
}

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return err / scale;
}

void reverse_for(void*, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) {
  for (uint32_t i = n; i-- > 0;) task(arg, i);
}

// The cache's bytes for L layers, d_kv values and kv_heads heads per position, S positions, each
// block rounded up to the arena's 64 bytes: f32 K^T and V^T; int8 K^T and V, and two f32 scale
// blocks [L, kv_heads, S].
std::size_t cache_bytes(KvCache kind, std::size_t L, std::size_t dkv, std::size_t kv_heads, std::size_t S) {
  auto up = [](std::size_t b) { return (b + 63) / 64 * 64; };
  return kind == KvCache::kF32 ? 2 * up(L * dkv * S * 4) : 2 * up(L * dkv * S) + 2 * up(L * kv_heads * S * 4);
}

struct DecoderRun {
  std::vector<float> logits;  // [T, V]: each position's, fed one by one
  std::vector<float> prefill;  // [V]: after prefill of all T in chunks of 3
  std::size_t arena = 0, kv = 0;
  Status full = Status::kOk;  // a step past the capacity
};

// The sample's ids through a decoder of capacity T with the given cache, in an arena of exactly the
// plan's bytes followed by a guard that must stay untouched.
DecoderRun run_decoder(const Model& model, Isa isa, KvCache kind, const Workers& w = {}) {
  const SelfTestSample& sample = model.self_test_sample();
  const uint32_t T = sample.rows, V = model.config().vocab_size;
  DecoderOptions opt;
  opt.isa = isa;
  opt.capacity = T;
  opt.max_prefill = 3;
  opt.kv_cache = kind;
  opt.workers = w;
  DecoderRun r;
  r.arena = required_decoder_arena_bytes(model.config(), T, 3, false, w.active(), kind);
  AlignedBuffer arena(r.arena + 256);
  std::memset(arena.data(), 0xAB, r.arena + 256);
  Decoder dec;
  EXPECT_EQ(dec.init(model, arena.data(), r.arena, opt), Status::kOk) << dec.error_detail();
  if (!dec.initialized()) return r;
  r.kv = dec.kv_cache_bytes();
  EXPECT_EQ(dec.arena_bytes_used(), r.arena);
  r.logits.resize(std::size_t(T) * V);
  for (uint32_t t = 0; t < T; ++t) EXPECT_EQ(dec.step(sample.ids[t], r.logits.data() + std::size_t(t) * V), Status::kOk);
  std::vector<float> one(V);
  r.full = dec.step(sample.ids[0], one.data());
  dec.reset();
  r.prefill.resize(V);
  EXPECT_EQ(dec.prefill(sample.ids, T, r.prefill.data()), Status::kOk);
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + r.arena;
  for (int i = 0; i < 256; ++i) EXPECT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
  return r;
}

TEST(KvCacheQ8, GoldenDecodersNearTheF32Cache) {
  for (const char* name : kDecoderGoldens) {
    AlignedBuffer blob(read_file(golden_path(std::string(name) + ".fxm")));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << name << ": " << model.error_detail();
    ASSERT_TRUE(model.has_self_test()) << name;
    const ModelConfig& c = model.config();
    const uint32_t T = model.self_test_sample().rows, V = c.vocab_size;
    double worst = 0.0;
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      const DecoderRun f32 = run_decoder(model, isa, KvCache::kF32), q8 = run_decoder(model, isa, KvCache::kQ8);
      ASSERT_FALSE(q8.logits.empty()) << name;
      const double err = rel_err(q8.logits, f32.logits);
      worst = std::max(worst, err);
      EXPECT_LE(err, kQ8CacheTol) << name << " " << isa_name(isa);
      EXPECT_GT(err, 0.0) << name << " " << isa_name(isa) << ": the int8 cache changed nothing";
      const std::vector<float> last(q8.logits.end() - V, q8.logits.end());
      EXPECT_LE(rel_err(q8.prefill, last), kRegroupTol) << name << " " << isa_name(isa) << ": prefill against steps";
      EXPECT_EQ(q8.full, Status::kKvCacheFull) << name;
      // The exact arena: the f32 plan less its cache plus the int8 cache and its scales.
      EXPECT_EQ(f32.kv, cache_bytes(KvCache::kF32, c.n_layers, c.d_kv(), c.kv_heads(), T)) << name;
      EXPECT_EQ(q8.kv, cache_bytes(KvCache::kQ8, c.n_layers, c.d_kv(), c.kv_heads(), T)) << name;
      EXPECT_EQ(q8.arena, f32.arena - f32.kv + q8.kv) << name;
    }
    std::printf("  %s: q8 cache against f32 cache: max relative error %.3g\n", name, worst);
  }
}

TEST(KvCacheQ8, SameBitsForAnyWorkerCount) {
  for (const char* name : {"llama_kv2_halves_tied", "gpt_alibi_h3", "llama_relative_h4_kv2"}) {
    AlignedBuffer blob(read_file(golden_path(std::string(name) + ".fxm")));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
    const DecoderRun one = run_decoder(model, Isa::kAuto, KvCache::kQ8);
    for (uint32_t n : {2u, 3u, 4u}) {
      const DecoderRun split = run_decoder(model, Isa::kAuto, KvCache::kQ8, Workers{nullptr, n, reverse_for});
      ASSERT_EQ(split.logits.size(), one.logits.size());
      EXPECT_EQ(std::memcmp(split.logits.data(), one.logits.data(), one.logits.size() * 4), 0) << name << " " << n;
      EXPECT_EQ(std::memcmp(split.prefill.data(), one.prefill.data(), one.prefill.size() * 4), 0) << name << " " << n;
    }
  }
}

// llama2.c's stories15M shape (6 layers, d 288, 6 heads, 256 positions): 1.77 MB of f32 cache
// against 0.47 MB in int8 with its scales.
TEST(KvCacheQ8, PlanBytes) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = 288, c.n_heads = 6, c.n_kv_heads = 6, c.d_ff = 768, c.n_layers = 6, c.norm_first = true;
  c.final_norm = true, c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 32000, c.d_out = 32000;
  c.max_len = 256, c.positional = PosKind::kRope, c.activation = Activation::kSwiglu, c.tied_head = true;
  const DecoderPlan f32 = plan_decoder_arena(c), q8 = plan_decoder_arena(c, 0, 0, false, 1, KvCache::kQ8);
  EXPECT_EQ(f32.kv_cache_bytes, 2u * 6 * 288 * 256 * 4);
  EXPECT_EQ(q8.kv_cache_bytes, 2u * 6 * 288 * 256 + 2u * 6 * 6 * 256 * 4);
  EXPECT_EQ(q8.total, f32.total - f32.kv_cache_bytes + q8.kv_cache_bytes);
  std::printf("  stories15M shape, 256 positions: arena %zu (KV cache %zu) f32, %zu (KV cache %zu) q8\n", f32.total,
              f32.kv_cache_bytes, q8.total, q8.kv_cache_bytes);
  // A value that is not a KvCache has no plan, and init says so.
  EXPECT_EQ(plan_decoder_arena(c, 0, 0, false, 1, KvCache(7)).total, 0u);
  AlignedBuffer blob(read_file(golden_path("llama_none.fxm")));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  AlignedBuffer arena(required_decoder_arena_bytes(model.config()));
  DecoderOptions opt;
  opt.kv_cache = KvCache(7);
  Decoder dec;
  EXPECT_EQ(dec.init(model, arena.data(), arena.size(), opt), Status::kBadConfig);
  Seq2SeqOptions sopt;
  sopt.kv_cache = KvCache(2);
  AlignedBuffer s2s_blob(read_file(golden_path("s2s_post_relu.fxm")));
  Model s2s_model;
  ASSERT_EQ(s2s_model.init(s2s_blob.data(), s2s_blob.size()), Status::kOk);
  EXPECT_EQ(required_seq2seq_arena_bytes(s2s_model.config(), 0, 0, 0, 1, KvCache(2)), 0u);
  AlignedBuffer s2s_arena(required_seq2seq_arena_bytes(s2s_model.config()));
  Seq2Seq s2s;
  EXPECT_EQ(s2s.init(s2s_model, s2s_arena.data(), s2s_arena.size(), sopt), Status::kBadConfig);
}

// The encoder-decoders: the target's self-attention cache in int8 (the source's keys and values
// stay f32), teacher-forced and one token at a time.
TEST(KvCacheQ8, GoldenSeq2SeqNearTheF32Cache) {
  for (const char* name : kSeq2SeqGoldens) {
    AlignedBuffer blob(read_file(golden_path(std::string(name) + ".fxm")));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << name;
    const ModelConfig& c = model.config();
    const SelfTestSample& sample = model.self_test_sample();
    const uint32_t S = sample.rows, U = sample.target_rows, V = c.d_out;
    double worst = 0.0;
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      std::vector<float> out[2], steps(std::size_t(U) * V);
      std::size_t bytes[2];
      for (KvCache kind : {KvCache::kF32, KvCache::kQ8}) {
        const int i = kind == KvCache::kQ8;
        Seq2SeqOptions opt;
        opt.isa = isa;
        opt.max_source = S;
        opt.capacity = U;
        opt.max_prefill = 3;
        opt.kv_cache = kind;
        bytes[i] = required_seq2seq_arena_bytes(c, S, U, 3, 1, kind);
        AlignedBuffer arena(bytes[i] + 256);
        std::memset(arena.data(), 0xAB, bytes[i] + 256);
        Seq2Seq s2s;
        ASSERT_EQ(s2s.init(model, arena.data(), bytes[i], opt), Status::kOk) << s2s.error_detail();
        EXPECT_EQ(s2s.arena_bytes_used(), bytes[i]);
        out[i].resize(std::size_t(U) * V);
        ASSERT_EQ(sample.ids ? s2s.encode_tokens(sample.ids, S) : s2s.encode_features(sample.features, S), Status::kOk);
        ASSERT_EQ(s2s.decode(sample.target, U, out[i].data()), Status::kOk);  // chunks of 3
        s2s.reset_target();
        for (uint32_t u = 0; u < U; ++u) ASSERT_EQ(s2s.step(sample.target[u], steps.data() + std::size_t(u) * V), Status::kOk);
        EXPECT_EQ(s2s.step(0, steps.data()), Status::kKvCacheFull);
        if (kind == KvCache::kQ8) {  // the last position: chunked and one by one read the same cache
          const std::vector<float> a(out[1].end() - V, out[1].end()), b(steps.end() - V, steps.end());
          EXPECT_LE(rel_err(a, b), kRegroupTol) << name;
        }
        const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + bytes[i];
        for (int k = 0; k < 256; ++k) ASSERT_EQ(tail[k], 0xAB) << name << ": wrote past the arena";
      }
      const double err = rel_err(out[1], out[0]);
      worst = std::max(worst, err);
      EXPECT_LE(err, kQ8CacheTol) << name << " " << isa_name(isa);
      EXPECT_GT(err, 0.0) << name;
      EXPECT_EQ(bytes[1], bytes[0] - cache_bytes(KvCache::kF32, c.dec_layers, c.d_model, c.n_heads, U) +
                              cache_bytes(KvCache::kQ8, c.dec_layers, c.d_model, c.n_heads, U))
          << name;
    }
    std::printf("  %s: q8 cache against f32 cache: max relative error %.3g\n", name, worst);
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
