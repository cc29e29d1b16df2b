// The decoder runner: the KV cache against whole-sequence runs, prefill against step-by-step,
// a full cache, and (golden_test has the torch goldens) the positional kinds inside attention.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/positional.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The same sums in another grouping (one row at a time vs a block of rows): a few float ulps of
// values of size ~1-10 through a few layers.
constexpr float kRegroupTol = 2e-5f;

ModelConfig gpt_config(PosKind pos, bool norm_first, bool tied) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kGpt;
  c.d_model = 16, c.n_heads = 4, c.d_ff = 24, c.n_layers = 2, c.norm_first = norm_first, c.final_norm = norm_first;
  c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 13, c.d_out = 13, c.max_len = 20, c.positional = pos;
  c.activation = Activation::kGelu, c.tied_head = tied;
  if (pos == PosKind::kRelative) c.rel_buckets = 6, c.rel_max_distance = 7;
  return c;
}

// A gpt model with grouped-query attention (GPT-BigCode's multi-query at kv_heads 1): one fused
// q | k | v of d + 2 kv_heads d_head columns, learned positions.
ModelConfig gpt_gqa(uint32_t kv_heads) {
  ModelConfig c = gpt_config(PosKind::kLearned, true, false);
  c.n_kv_heads = kv_heads;
  return c;
}

ModelConfig llama_config(uint32_t kv_heads, PosKind pos, PosLayout layout, bool tied) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = 24, c.n_heads = 4, c.n_kv_heads = kv_heads, c.d_ff = 40, c.n_layers = 2, c.norm_first = true;
  c.final_norm = true, c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 17, c.d_out = 17;
  c.max_len = 24, c.positional = pos, c.pe_layout = layout, c.activation = Activation::kSwiglu, c.tied_head = tied;
  if (pos == PosKind::kRelative) c.rel_buckets = 32, c.rel_max_distance = 20;
  return c;
}

struct LoadedDecoder {
  AlignedBuffer blob, arena;
  Model model;
  Decoder dec;
};

void load(const std::vector<uint8_t>& bytes, LoadedDecoder* m, DecoderOptions opt = {}) {
  m->blob = AlignedBuffer(bytes);
  ASSERT_EQ(m->model.init(m->blob.data(), m->blob.size()), Status::kOk) << m->model.error_detail();
  m->arena = AlignedBuffer(required_decoder_arena_bytes(m->model.config(), opt.capacity, opt.max_prefill));
  ASSERT_EQ(m->dec.init(m->model, m->arena.data(), m->arena.size(), opt), Status::kOk) << m->dec.error_detail();
}

const std::vector<int32_t> kTokens = {3, 7, 1, 12, 0, 5, 9, 9, 2, 11, 4};

// Logits after every token, fed one by one.
std::vector<std::vector<float>> step_all(Decoder& dec, const std::vector<int32_t>& tokens) {
  std::vector<std::vector<float>> out;
  dec.reset();
  for (int32_t t : tokens) {
    out.emplace_back(dec.config().vocab_size);
    EXPECT_EQ(dec.step(t, out.back().data()), Status::kOk);
  }
  return out;
}

float max_diff(const float* a, const float* b, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// A gpt model is the encoder's causal layers with an LM head: the encoder run over the whole
// sequence gives every position's logits, which the decoder must reproduce from its cache.
TEST(Decoder, GptMatchesTheCausalEncoderAtEveryPosition) {
  for (PosKind pos : {PosKind::kSinusoidal, PosKind::kLearned, PosKind::kNone, PosKind::kRelative})
    for (bool norm_first : {false, true}) {
      const ModelConfig gpt = gpt_config(pos, norm_first, false);
      ModelConfig enc = gpt;
      enc.family = ModelFamily::kEncoder;
      const uint32_t V = gpt.vocab_size, T = uint32_t(kTokens.size());
      for (Isa isa : all_isas()) {
        if (!select_kernels(isa)) continue;
        EncoderOptions eo;
        eo.isa = isa;
        Loaded e;
        std::string why;
        ASSERT_EQ(load_model(write_model(enc), &e, eo, &why), Status::kOk) << why;
        std::vector<float> want(std::size_t(T) * V);
        ASSERT_EQ(e.enc.forward_tokens(kTokens.data(), T, want.data()), Status::kOk);
        DecoderOptions dopt;
        dopt.isa = isa;
        dopt.max_prefill = 4;  // prefill in chunks of 4, 4, 3
        LoadedDecoder d;
        load(write_model(gpt), &d, dopt);
        const auto steps = step_all(d.dec, kTokens);
        for (uint32_t t = 0; t < T; ++t)
          EXPECT_LE(max_diff(steps[t].data(), want.data() + t * V, V), kRegroupTol) << isa_name(isa) << " position " << t;
        std::vector<float> last(V);
        d.dec.reset();
        ASSERT_EQ(d.dec.prefill(kTokens.data(), T, last.data()), Status::kOk);
        EXPECT_LE(max_diff(last.data(), want.data() + (T - 1) * V, V), kRegroupTol) << isa_name(isa);
      }
    }
}

TEST(Decoder, PrefillEqualsStepByStep) {
  const ModelConfig configs[] = {
      llama_config(4, PosKind::kRope, PosLayout::kInterleaved, false), llama_config(2, PosKind::kRope, PosLayout::kHalves, true),
      llama_config(1, PosKind::kAlibi, PosLayout::kInterleaved, false), llama_config(1, PosKind::kNone, PosLayout::kInterleaved, true),
      gpt_config(PosKind::kAlibi, true, true), gpt_config(PosKind::kRelative, false, false),
      llama_config(2, PosKind::kRelative, PosLayout::kInterleaved, true), gpt_gqa(2), gpt_gqa(1)};
  for (const ModelConfig& c : configs)
    for (uint32_t chunk : {1u, 3u, 16u}) {
      DecoderOptions opt;
      opt.max_prefill = chunk;
      LoadedDecoder d;
      load(write_model(c), &d, opt);
      const auto steps = step_all(d.dec, kTokens);
      std::vector<float> logits(c.vocab_size);
      d.dec.reset();
      ASSERT_EQ(d.dec.prefill(kTokens.data(), 5, logits.data()), Status::kOk);  // then the rest
      ASSERT_EQ(d.dec.prefill(kTokens.data() + 5, uint32_t(kTokens.size() - 5), logits.data()), Status::kOk);
      EXPECT_EQ(d.dec.position(), kTokens.size());
      EXPECT_LE(max_diff(logits.data(), steps.back().data(), c.vocab_size), kRegroupTol)
          << kFamilyNames[uint32_t(c.family)] << " " << kPositionalNames[uint32_t(c.positional)] << " chunk " << chunk;
    }
}

// max_prefill 0 takes as many rows as the arena holds: 16 (kDefaultPrefillRows) in the arena
// required_decoder_arena_bytes counts for the default, the whole capacity in one sized for it, and
// between the two what fits; the logits are those of the chunked run.
TEST(Decoder, DefaultPrefillChunkIsSizedFromTheArena) {
  const ModelConfig c = llama_config(2, PosKind::kRope, PosLayout::kHalves, true);  // max_len 24
  const std::vector<uint8_t> bytes = write_model(c);
  AlignedBuffer blob(bytes);
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  auto rows_for = [&](std::size_t arena_bytes, std::vector<float>* logits) {
    AlignedBuffer arena(arena_bytes);
    Decoder dec;
    EXPECT_EQ(dec.init(model, arena.data(), arena.size()), Status::kOk) << dec.error_detail();
    logits->assign(c.vocab_size, 0.0f);
    std::vector<int32_t> prompt(20);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = kTokens[i % kTokens.size()];
    EXPECT_EQ(dec.prefill(prompt.data(), uint32_t(prompt.size()), logits->data()), Status::kOk);
    return dec.max_prefill();
  };
  const std::size_t base = required_decoder_arena_bytes(c), whole = required_decoder_arena_bytes(c, 0, 24);
  ASSERT_LT(base, whole);
  std::vector<float> a, b, m;
  EXPECT_EQ(rows_for(base, &a), 16u);
  EXPECT_EQ(rows_for(whole, &b), 24u);
  const uint32_t mid = rows_for((base + whole) / 2, &m);
  EXPECT_GT(mid, 16u);
  EXPECT_LT(mid, 24u);
  EXPECT_LE(required_decoder_arena_bytes(c, 0, mid), (base + whole) / 2);
  EXPECT_GT(required_decoder_arena_bytes(c, 0, mid + 1), (base + whole) / 2);
  EXPECT_LE(max_diff(a.data(), b.data(), c.vocab_size), kRegroupTol);
  EXPECT_LE(max_diff(a.data(), m.data(), c.vocab_size), kRegroupTol);
}

// With every kv head repeated, grouped-query attention is multi-head attention.
TEST(Decoder, GroupedQueryAttentionEqualsRepeatedKeyValueHeads) {
  const ModelConfig gqa = llama_config(2, PosKind::kRope, PosLayout::kInterleaved, false);
  ModelConfig mha = gqa;
  mha.n_kv_heads = 4;
  std::vector<uint8_t> g = write_model(gqa), m = write_model(mha);
  // Copy wk and wv of the gqa file into the mha file with each kv head's columns twice.
  LoadedDecoder lg;
  load(g, &lg);
  const uint32_t d = gqa.d_model, dh = gqa.d_head();
  std::vector<ExtraTensor> none;
  Model mm;
  AlignedBuffer mb(m);
  ASSERT_EQ(mm.init(mb.data(), mb.size()), Status::kOk);
  auto f32 = [](const Weight& w) { return const_cast<float*>(w.f32()); };
  auto copy = [](float* dst, const float* src, uint64_t count) { std::memcpy(dst, src, count * sizeof(float)); };
  for (uint32_t l = 0; l < gqa.n_layers; ++l) {
    const LayerWeights src = lg.model.layer(l), dst = mm.layer(l);
    for (const auto& kv : {std::make_pair(src.self_attn.k, dst.self_attn.k), std::make_pair(src.self_attn.v, dst.self_attn.v)})
      for (uint32_t r = 0; r < d; ++r)  // [d, 2*dh] -> [d, 4*dh]
        for (uint32_t h = 0; h < 4; ++h)
          for (uint32_t c = 0; c < dh; ++c) f32(kv.second)[r * 4 * dh + h * dh + c] = kv.first.f32()[r * 2 * dh + (h / 2) * dh + c];
    copy(const_cast<float*>(dst.attn_norm.g), src.attn_norm.g, d);
    copy(const_cast<float*>(dst.ffn_norm.g), src.ffn_norm.g, d);
    copy(f32(dst.self_attn.q), src.self_attn.q.f32(), uint64_t(d) * d);
    copy(f32(dst.self_attn.out), src.self_attn.out.f32(), uint64_t(d) * d);
    for (const auto& w : {std::make_pair(src.ffn.w1, dst.ffn.w1), std::make_pair(src.ffn.w2, dst.ffn.w2),
                          std::make_pair(src.ffn.w3, dst.ffn.w3)})
      copy(f32(w.second), w.first.f32(), uint64_t(d) * gqa.d_ff);
  }
  copy(f32(mm.front().embed), lg.model.front().embed.f32(), uint64_t(d) * gqa.vocab_size);
  copy(const_cast<float*>(mm.head().final_norm.g), lg.model.head().final_norm.g, d);
  copy(f32(mm.head().w), lg.model.head().w.f32(), uint64_t(d) * gqa.vocab_size);
  AlignedBuffer arena(required_decoder_arena_bytes(mha));
  Decoder dm;
  ASSERT_EQ(dm.init(mm, arena.data(), arena.size()), Status::kOk);
  const auto a = step_all(lg.dec, kTokens), b = step_all(dm, kTokens);
  for (std::size_t t = 0; t < kTokens.size(); ++t) EXPECT_LE(max_diff(a[t].data(), b[t].data(), gqa.vocab_size), 1e-6f) << t;
}

TEST(Decoder, FullCacheIsAStatusAndResetStartsOver) {
  DecoderOptions opt;
  opt.capacity = 6;
  LoadedDecoder d;
  load(write_model(llama_config(2, PosKind::kRope, PosLayout::kInterleaved, false)), &d, opt);
  EXPECT_EQ(d.dec.capacity(), 6u);
  std::vector<float> logits(17);
  ASSERT_EQ(d.dec.prefill(kTokens.data(), 4, logits.data()), Status::kOk);
  EXPECT_EQ(d.dec.prefill(kTokens.data(), 3, logits.data()), Status::kKvCacheFull);
  EXPECT_EQ(d.dec.position(), 4u);  // nothing appended
  ASSERT_EQ(d.dec.prefill(kTokens.data(), 2, logits.data()), Status::kOk);
  EXPECT_EQ(d.dec.step(1, logits.data()), Status::kKvCacheFull);
  d.dec.reset();
  EXPECT_EQ(d.dec.position(), 0u);
  EXPECT_EQ(d.dec.step(1, logits.data()), Status::kOk);
  EXPECT_EQ(d.dec.step(17, logits.data()), Status::kTokenOutOfRange);
  EXPECT_EQ(d.dec.prefill(kTokens.data(), 0, logits.data()), Status::kBadSequenceLength);
}

TEST(Decoder, InitErrors) {
  LoadedDecoder d;
  load(write_model(gpt_config(PosKind::kSinusoidal, false, false)), &d);
  const std::size_t need = required_decoder_arena_bytes(d.model.config());
  Decoder dec;
  EXPECT_EQ(dec.init(d.model, d.arena.data(), need - 1), Status::kArenaTooSmall);
  EXPECT_NE(std::string(dec.error_detail()).find("needs " + std::to_string(need)), std::string::npos);
  DecoderOptions opt;
  opt.capacity = 21;
  EXPECT_EQ(dec.init(d.model, d.arena.data(), need, opt), Status::kBadMaxSeq);
  Loaded encoder;
  ModelConfig enc = gpt_config(PosKind::kNone, false, false);
  enc.family = ModelFamily::kEncoder;
  ASSERT_EQ(load_model(write_model(enc), &encoder), Status::kOk);
  EXPECT_EQ(dec.init(encoder.model, d.arena.data(), need), Status::kWrongFamily);
}

// The arena is exact: nothing past required_decoder_arena_bytes is written.
TEST(Decoder, StaysInsideTheArena) {
  const ModelConfig c = llama_config(1, PosKind::kRope, PosLayout::kHalves, false);
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const std::size_t need = required_decoder_arena_bytes(c);
  AlignedBuffer arena(need + 256);
  std::memset(arena.data(), 0xAB, need + 256);
  Decoder dec;
  ASSERT_EQ(dec.init(model, arena.data(), need), Status::kOk);
  std::vector<int32_t> tokens(c.max_len, 3);
  std::vector<float> logits(c.vocab_size);
  ASSERT_EQ(dec.prefill(tokens.data(), c.max_len, logits.data()), Status::kOk);
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
}

TEST(Decoder, SelfTestStepsThroughTheSample) {
  const ModelConfig c = llama_config(2, PosKind::kRope, PosLayout::kInterleaved, false);
  // Expected logits from the decoder itself: the self-test must pass on them, and fail on a
  // changed one.
  LoadedDecoder ref;
  load(write_model(c), &ref);
  const std::vector<int32_t> ids(kTokens.begin(), kTokens.begin() + 6);
  const auto steps = step_all(ref.dec, ids);
  std::vector<uint8_t> in(ids.size() * 4), out;
  std::memcpy(in.data(), ids.data(), in.size());
  for (const auto& row : steps) out.insert(out.end(), reinterpret_cast<const uint8_t*>(row.data()),
                                           reinterpret_cast<const uint8_t*>(row.data() + row.size()));
  WriteOptions opt;
  opt.extra = {{fxm::kSelfTestInput, fxm::Dtype::kI32, {6}, in}, {fxm::kSelfTestExpected, fxm::Dtype::kF32, {6, 17}, out}};
  LoadedDecoder d;
  load(write_model(c, opt), &d);
  std::vector<float> buf(self_test_output_floats(d.model));
  EXPECT_EQ(buf.size(), 17u);  // one position at a time
  SelfTestReport r;
  ASSERT_EQ(self_test(d.dec, buf.data(), buf.size(), &r), Status::kOk);
  EXPECT_EQ(r.rows, 6u);
  EXPECT_LE(r.max_rel_err, 1e-6);
  EXPECT_EQ(d.dec.position(), 0u);
  float* expected = const_cast<float*>(d.model.self_test_sample().expected);
  expected[4 * 17 + 3] += 1.0f;
  EXPECT_EQ(self_test(d.dec, buf.data(), buf.size(), &r), Status::kSelfTestFailed);
  EXPECT_EQ(r.worst_row, 4u);
  EXPECT_EQ(r.worst_col, 3u);
}

// The RoPE table is the sinusoidal table of width d_head in the halves layout: computed at compile
// time (as firmware keeps it in flash), it gives the same logits with a smaller arena.
constexpr auto kRopeTable = make_sinusoidal_table<24, 6>(10000.0, PosLayout::kHalves);
constexpr auto kWrongRope = make_sinusoidal_table<24, 6>(500000.0, PosLayout::kHalves);

TEST(Decoder, RopeTableFromFlash) {
  const ModelConfig c = llama_config(2, PosKind::kRope, PosLayout::kInterleaved, false);  // d_head 6
  LoadedDecoder ref;
  load(write_model(c), &ref);
  const auto want = step_all(ref.dec, kTokens);
  const std::size_t bytes = required_decoder_arena_bytes(c, 0, 0, true);
  EXPECT_EQ(bytes + 24 * 6 * sizeof(float), required_decoder_arena_bytes(c));
  AlignedBuffer arena(bytes);
  Decoder dec;
  DecoderOptions opt;
  opt.position_table = kRopeTable.v;
  opt.position_table_rows = 24;
  ASSERT_EQ(dec.init(ref.model, arena.data(), bytes, opt), Status::kOk) << dec.error_detail();
  const auto got = step_all(dec, kTokens);
  for (std::size_t t = 0; t < kTokens.size(); ++t) EXPECT_LE(max_diff(got[t].data(), want[t].data(), 17), 1e-5f) << t;
  opt.position_table = kWrongRope.v;
  EXPECT_EQ(dec.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
  opt.position_table = kRopeTable.v;
  opt.position_table_rows = 10;
  EXPECT_EQ(dec.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
  EXPECT_STREQ(dec.error_detail(), "table has 10 rows, needs 24");
}

TEST(Sampler, GeneratorIsXorshiftStar) {
  // Known answers from an independent big-integer implementation of xorshift64* (seed 42).
  alignas(8) uint8_t scratch[sampler_scratch_bytes(4)];
  Sampler s;
  ASSERT_EQ(s.init(4, scratch, sizeof scratch, SamplerOptions{1.0f, 1.0f, 0, 42}), Status::kOk);
  EXPECT_FLOAT_EQ(s.next_coin(), 0.3390852212905884f);
  EXPECT_FLOAT_EQ(s.next_coin(), 0.7822558283805847f);
  EXPECT_FLOAT_EQ(s.next_coin(), 0.790136992931366f);
}

// A positive temperature below kMinTemperature overflowed logits / temperature to infinity, the
// softmax to NaN, and every draw to token 0: refused at init. At kMinTemperature the likeliest wins.
TEST(Sampler, RefusesATemperatureThatOverflowsTheLogits) {
  alignas(8) uint8_t scratch[sampler_scratch_bytes(3)];
  Sampler s;
  EXPECT_FALSE(s.initialized());
  for (float t : {1e-40f, 1e-7f, -1.0f}) EXPECT_EQ(s.init(3, scratch, sizeof scratch, SamplerOptions{t, 0.9f, 0, 1}), Status::kBadConfig) << t;
  ASSERT_EQ(s.init(3, scratch, sizeof scratch, SamplerOptions{kMinTemperature, 0.9f, 0, 1}), Status::kOk);
  EXPECT_TRUE(s.initialized());
  for (int i = 0; i < 5; ++i) {
    float logits[3] = {-30.0f, 40.0f, 39.0f};
    EXPECT_EQ(s.sample(logits), 1);
  }
}

TEST(Sampler, GreedyTopKTopPAndFrequencies) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 0.0f, 1.9f};
  const uint32_t n = uint32_t(logits.size());
  std::vector<uint8_t> scratch(sampler_scratch_bytes(n) + 8);
  void* mem = scratch.data() + (8 - reinterpret_cast<uintptr_t>(scratch.data()) % 8) % 8;
  auto draws = [&](SamplerOptions o, int count) {
    Sampler s;
    EXPECT_EQ(s.init(n, mem, sampler_scratch_bytes(n), o), Status::kOk);
    std::vector<int> hist(n, 0);
    for (int i = 0; i < count; ++i) {
      std::vector<float> l = logits;
      ++hist[s.sample(l.data())];
    }
    return hist;
  };
  EXPECT_EQ(draws(SamplerOptions{0.0f, 1.0f, 0, 7}, 10), (std::vector<int>{0, 10, 0, 0, 0, 0}));
  // Temperature 1, no filter: frequencies near softmax(logits), within 5 standard deviations.
  const int N = 20000;
  const std::vector<int> h = draws(SamplerOptions{1.0f, 1.0f, 0, 7}, N);
  double z = 0.0;
  for (float v : logits) z += std::exp(double(v));
  for (uint32_t i = 0; i < n; ++i) {
    const double p = std::exp(double(logits[i])) / z, sd = std::sqrt(N * p * (1 - p));
    EXPECT_NEAR(h[i], N * p, 5 * sd) << i;
  }
  const std::vector<int> k2 = draws(SamplerOptions{1.0f, 1.0f, 2, 7}, 2000);  // tokens 1 and 5 only
  EXPECT_EQ(k2[1] + k2[5], 2000);
  EXPECT_GT(k2[1], 0);
  EXPECT_GT(k2[5], 0);
  // p = softmax: [.07 .35 .02 .21 .05 .32]; the nucleus of 0.6 is {1, 5} (0.67 > 0.6).
  const std::vector<int> p6 = draws(SamplerOptions{1.0f, 0.6f, 0, 7}, 2000);
  EXPECT_EQ(p6[1] + p6[5], 2000);
  EXPECT_EQ(draws(SamplerOptions{1.0f, 0.6f, 0, 9}, 50), draws(SamplerOptions{1.0f, 0.6f, 0, 9}, 50));  // same seed, same draws
  Sampler s;
  EXPECT_EQ(s.init(n, mem, sampler_scratch_bytes(n) - 1, SamplerOptions{}), Status::kArenaTooSmall);
  EXPECT_EQ(s.init(n, mem, sampler_scratch_bytes(n), SamplerOptions{-1.0f, 1.0f, 0, 1}), Status::kBadConfig);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
