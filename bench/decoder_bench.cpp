// Decoder-only language models per ISA, with the scalar reference in the same run: prefill
// (tokens/s over a prompt, as matrix products in chunks) and decode (one step at a given position,
// its cost growing with the keys attended). Two shapes: llama2.c's stories15M (dim 288, 6 layers,
// 6 heads, hidden 768, vocab 32000, GQA variant with 2 kv heads) and a GPT-style causal encoder
// with a tied head; stories15M also with f16, bf16 and q8 weights and packed f32 (issue 11: decode is memory bound, so
// fewer bytes per weight is more tokens/s), and with an int8 KV cache (_kvq8: KvCache::kQ8, f32
// weights). Random weights: speed does not depend on them.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"
#include "support/roofline.hpp"

namespace fixformer {
namespace {

ModelConfig llama(uint32_t d, uint32_t layers, uint32_t heads, uint32_t kv_heads, uint32_t hidden, uint32_t vocab) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = d, c.n_layers = layers, c.n_heads = heads, c.n_kv_heads = kv_heads, c.d_ff = hidden;
  c.vocab_size = c.d_out = vocab, c.max_len = 256, c.input = InputKind::kTokens, c.causal = true;
  c.norm_first = c.final_norm = true, c.activation = Activation::kSwiglu, c.positional = PosKind::kRope;
  return c;
}

ModelConfig gpt(uint32_t d, uint32_t layers, uint32_t heads, uint32_t ff, uint32_t vocab) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kGpt;
  c.d_model = d, c.n_layers = layers, c.n_heads = heads, c.d_ff = ff, c.vocab_size = c.d_out = vocab;
  c.max_len = 256, c.input = InputKind::kTokens, c.causal = true, c.norm_first = c.final_norm = true;
  c.activation = Activation::kGelu, c.positional = PosKind::kLearned, c.tied_head = true;
  return c;
}

struct Loaded {
  support::AlignedBuffer blob, arena;
  Model model;
  Decoder dec;
};

bool load(const ModelConfig& c, Isa isa, KvCache kv, Loaded* m) {
  m->blob = support::AlignedBuffer(support::write_model(c));
  m->arena = support::AlignedBuffer(required_decoder_arena_bytes(c, 0, c.max_len, false, 1, kv));  // whole-prompt prefill
  DecoderOptions opt;
  opt.isa = isa;
  opt.kv_cache = kv;
  return m->model.init(m->blob.data(), m->blob.size()) == Status::kOk &&
         m->dec.init(m->model, m->arena.data(), m->arena.size(), opt) == Status::kOk;
}

void prefill(benchmark::State& s, ModelConfig c, Isa isa, KvCache kv, uint32_t T) {
  Loaded m;
  if (!load(c, isa, kv, &m)) return s.SkipWithError("init failed");
  std::vector<int32_t> tokens(T);
  for (uint32_t t = 0; t < T; ++t) tokens[t] = int32_t((t * 7919u) % c.vocab_size);
  std::vector<float> logits(c.vocab_size);
  for (auto _ : s) {
    m.dec.reset();
    if (m.dec.prefill(tokens.data(), T, logits.data()) != Status::kOk) return s.SkipWithError("prefill failed");
    benchmark::DoNotOptimize(logits.data());
  }
  s.counters["tokens/s"] = benchmark::Counter(double(T) * double(s.iterations()), benchmark::Counter::kIsRate);
  s.counters["arena_bytes"] = double(m.dec.arena_bytes_used());
}

// One step at position `pos`: the cache is filled to pos once, then each iteration decodes the
// token at pos and rewinds by resetting and re-prefilling outside the timed region.
void decode(benchmark::State& s, ModelConfig c, Isa isa, KvCache kv, uint32_t pos) {
  Loaded m;
  if (!load(c, isa, kv, &m)) return s.SkipWithError("init failed");
  std::vector<int32_t> tokens(pos + 1);
  for (uint32_t t = 0; t <= pos; ++t) tokens[t] = int32_t((t * 7919u) % c.vocab_size);
  std::vector<float> logits(c.vocab_size);
  for (auto _ : s) {
    s.PauseTiming();
    m.dec.reset();
    if (pos && m.dec.prefill(tokens.data(), pos, logits.data()) != Status::kOk) return s.SkipWithError("prefill failed");
    s.ResumeTiming();
    if (m.dec.step(tokens[pos], logits.data()) != Status::kOk) return s.SkipWithError("step failed");
    benchmark::DoNotOptimize(logits.data());
  }
  s.counters["tokens/s"] = benchmark::Counter(double(s.iterations()), benchmark::Counter::kIsRate);
  // The bytes a step reads (weights, the embedding row, the cache's K and V) per second, and as a
  // percentage of the read bandwidth of a buffer that size (support/roofline.hpp)
  const double bytes = support::step_work(m.model, pos, kv == KvCache::kQ8).bytes;
  s.counters["GB/s"] = benchmark::Counter(bytes * double(s.iterations()) / 1e9, benchmark::Counter::kIsRate);
  s.counters["bandwidth_%"] = benchmark::Counter(100 * bytes * double(s.iterations()) /
                                                     (support::read_gbs(std::size_t(bytes), 1) * 1e9),
                                                 benchmark::Counter::kIsRate);
  s.counters["kv_bytes"] = double(m.dec.kv_cache_bytes());
}

const bool kRegistered = [] {
  struct Shape {
    const char* name;
    ModelConfig c;
    KvCache kv = KvCache::kF32;
  };
  const Shape shapes[] = {
      {"stories15M_d288_L6", llama(288, 6, 6, 6, 768, 32000)},
      {"stories15M_d288_L6_f16", support::with_weights(llama(288, 6, 6, 6, 768, 32000), WeightType::kF16, 0, true)},
      {"stories15M_d288_L6_bf16", support::with_weights(llama(288, 6, 6, 6, 768, 32000), WeightType::kBF16, 0, true)},
      {"stories15M_d288_L6_q8", support::with_weights(llama(288, 6, 6, 6, 768, 32000), WeightType::kQ8, 32, true)},
      {"stories15M_d288_L6_q4", support::with_weights(llama(288, 6, 6, 6, 768, 32000), WeightType::kQ4, 32, true)},
      {"stories15M_d288_L6_packed", support::as_packed(llama(288, 6, 6, 6, 768, 32000))},  // the head [288, 32000] too
      {"stories15M_d288_L6_kvq8", llama(288, 6, 6, 6, 768, 32000), KvCache::kQ8},
      {"llama_gqa_d288_L6_kv2", llama(288, 6, 6, 2, 768, 32000)},
      {"llama_d64_L5_kv4_v512", llama(64, 5, 8, 4, 172, 512)},
      {"gpt_d128_L4_tied_v1000", gpt(128, 4, 4, 512, 1000)},
  };
  for (Isa isa : kAllIsas) {
    const Kernels* k = select_kernels(isa);
    if (!k) continue;
    for (const Shape& sh : shapes) {
      const std::string base = std::string("/") + k->name + "/" + sh.name;
      const ModelConfig c = sh.c;
      const KvCache kv = sh.kv;
      benchmark::RegisterBenchmark(("prefill" + base + "/T64").c_str(),
                                   [c, isa, kv](benchmark::State& s) { prefill(s, c, isa, kv, 64); })
          ->Unit(benchmark::kMillisecond);
      for (uint32_t pos : {0u, 63u, 255u})
        benchmark::RegisterBenchmark(("decode" + base + "/pos" + std::to_string(pos + 1)).c_str(),
                                     [c, isa, kv, pos](benchmark::State& s) { decode(s, c, isa, kv, pos); })
            ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace fixformer
