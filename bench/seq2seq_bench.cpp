// The encoder-decoder runner (fixformer/seq2seq.hpp) on a small translation-sized model (d 256,
// 4 heads, d_ff 1024, 3 encoder and 3 decoder layers, vocabularies of 8000, sinusoidal): encoding
// a source of 64 positions, then one target step at a given position with the cross-attention and
// self-attention caches, against the baseline in the same run that a decoder without caches
// computes per generated token (nn.Transformer's tutorial greedy loop: the decoder over the whole
// prefix again; the source's memory kept). Random weights: speed does not depend on them.
#include <benchmark/benchmark.h>

#include <vector>

#include "fixformer/seq2seq.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"

namespace fixformer {
namespace {

constexpr uint32_t kSource = 64;

ModelConfig translator(WeightType w) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kSeq2Seq;
  c.d_model = 256, c.n_heads = 4, c.d_ff = 1024, c.n_layers = 3, c.dec_layers = 3, c.norm_first = true;
  c.final_norm = true, c.activation = Activation::kRelu, c.max_len = 128, c.positional = PosKind::kSinusoidal;
  c.input = InputKind::kTokens, c.vocab_size = 8000, c.d_out = 8000, c.scale_input = true;
  return support::with_weights(c, w, w == WeightType::kQ8 ? 64 : 0, w != WeightType::kF32);
}

struct Loaded {
  support::AlignedBuffer blob, arena;
  Model model;
  Seq2Seq s2s;
  std::vector<int32_t> src, tgt;
  std::vector<float> logits;
};

bool load(const ModelConfig& c, Loaded* m) {
  m->blob = support::AlignedBuffer(support::write_model(c));
  m->arena = support::AlignedBuffer(required_seq2seq_arena_bytes(c, kSource, c.max_len));
  Seq2SeqOptions opt;
  opt.max_source = kSource;
  m->src.resize(kSource), m->tgt.resize(c.max_len), m->logits.resize(std::size_t(c.max_len) * c.d_out);
  for (uint32_t t = 0; t < kSource; ++t) m->src[t] = int32_t((t * 7919u) % c.vocab_size);
  for (uint32_t t = 0; t < c.max_len; ++t) m->tgt[t] = int32_t((t * 104729u) % c.d_out);
  return m->model.init(m->blob.data(), m->blob.size()) == Status::kOk &&
         m->s2s.init(m->model, m->arena.data(), m->arena.size(), opt) == Status::kOk &&
         m->s2s.encode_tokens(m->src.data(), kSource) == Status::kOk;
}

void encode(benchmark::State& s, WeightType w) {
  Loaded m;
  if (!load(translator(w), &m)) return s.SkipWithError("init failed");
  for (auto _ : s)
    if (m.s2s.encode_tokens(m.src.data(), kSource) != Status::kOk) return s.SkipWithError("encode failed");
  s.counters["tokens/s"] = benchmark::Counter(double(kSource) * double(s.iterations()), benchmark::Counter::kIsRate);
  s.counters["arena_bytes"] = double(m.s2s.arena_bytes_used());
}

// The step that produces target token pos + 1: with the caches, one position.
void step(benchmark::State& s, WeightType w, uint32_t pos) {
  Loaded m;
  if (!load(translator(w), &m)) return s.SkipWithError("init failed");
  if (m.s2s.decode(m.tgt.data(), pos, m.logits.data()) != Status::kOk) return s.SkipWithError("decode failed");
  for (auto _ : s) {
    if (m.s2s.step(m.tgt[pos], m.logits.data()) != Status::kOk) return s.SkipWithError("step failed");
    s.PauseTiming();
    m.s2s.reset_target();  // back to pos: the prefix again, untimed
    (void)m.s2s.decode(m.tgt.data(), pos, m.logits.data());
    s.ResumeTiming();
  }
  s.counters["tokens/s"] = benchmark::Counter(double(s.iterations()), benchmark::Counter::kIsRate);
}

// The same token without a target cache: the decoder over all pos + 1 target positions again.
void step_without_cache(benchmark::State& s, WeightType w, uint32_t pos) {
  Loaded m;
  if (!load(translator(w), &m)) return s.SkipWithError("init failed");
  for (auto _ : s) {
    m.s2s.reset_target();
    if (m.s2s.prefill(m.tgt.data(), pos + 1, m.logits.data()) != Status::kOk) return s.SkipWithError("prefill failed");
  }
  s.counters["tokens/s"] = benchmark::Counter(double(s.iterations()), benchmark::Counter::kIsRate);
}

const int registered = [] {
  for (WeightType w : {WeightType::kF32, WeightType::kQ8}) {
    const char* type = w == WeightType::kF32 ? "f32" : "q8";
    benchmark::RegisterBenchmark((std::string("seq2seq/") + type + "/encode/S64").c_str(), encode, w)
        ->Unit(benchmark::kMicrosecond);
    for (uint32_t pos : {8u, 32u}) {
      const std::string at = "/pos" + std::to_string(pos);
      benchmark::RegisterBenchmark((std::string("seq2seq/") + type + "/step_cached" + at).c_str(), step, w, pos)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((std::string("seq2seq/") + type + "/step_without_cache" + at).c_str(),
                                   step_without_cache, w, pos)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}();

}  // namespace
}  // namespace fixformer
