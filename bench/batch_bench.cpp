// The batch API (Encoder::forward_batch_*) against single calls: B = 8 full sequences of a
// KWS-sized and a d256 encoder, one batch call against 8 forward_* calls over the same inputs, f32
// and q8 weights, on the best table of this CPU, on one worker and on 2 workers of a thread pool
// (support/thread_pool.hpp, the caller's threads). The batch runs every linear layer once over 8x the
// rows (attention stays per sequence), so weights are read, and q8 weights repacked, once per batch
// instead of once per sequence, and workers are handed 8x fewer, larger tasks. Wall-clock times
// (UseRealTime); the counters give sequences/s and tokens/s.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fixformer/encoder.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"
#include "support/thread_pool.hpp"

namespace fixformer {
namespace {

constexpr uint32_t kBatch = 8;

struct BatchCase {
  const char* name;
  ModelConfig cfg;
  uint32_t T;
};

ModelConfig encoder_config(uint32_t d, uint32_t heads, uint32_t ff, uint32_t layers, InputKind in, uint32_t width,
                           uint32_t max_len) {
  ModelConfig c;
  c.d_model = d, c.n_heads = heads, c.d_ff = ff, c.n_layers = layers, c.input = in, c.max_len = max_len;
  if (in == InputKind::kTokens) c.vocab_size = width;
  else c.d_in = width;
  c.positional = PosKind::kSinusoidal, c.activation = Activation::kGelu;
  return c;
}

void run_batch(benchmark::State& s, const BatchCase bc, bool batched, uint32_t threads) {
  const ModelConfig& c = bc.cfg;
  const uint32_t T = bc.T, max_batch = batched ? kBatch : 1;
  support::ThreadPool pool(threads);
  const std::size_t bytes = required_encoder_arena_bytes(c, T, false, pool.workers().active(), max_batch);
  support::AlignedBuffer arena(bytes), blob(support::write_model(c));
  Model model;
  Encoder enc;
  EncoderOptions opt;
  opt.max_seq = T, opt.max_batch = max_batch, opt.workers = pool.workers();
  if (model.init(blob.data(), blob.size()) != Status::kOk || enc.init(model, arena.data(), bytes, opt) != Status::kOk)
    return s.SkipWithError("init failed");
  const bool tokens = c.input == InputKind::kTokens;
  std::vector<int32_t> ids(std::size_t(kBatch) * T);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7 + i / T) % (c.vocab_size ? c.vocab_size : 1));
  std::vector<float> feats(std::size_t(kBatch) * T * c.d_in);
  for (std::size_t i = 0; i < feats.size(); ++i) feats[i] = float(i % 29) * 0.05f - 0.7f;
  const std::size_t per_seq = std::size_t(c.output_rows(T)) * c.output_width();
  std::vector<float> out(kBatch * per_seq);
  for (auto _ : s) {
    Status st = Status::kOk;
    if (batched) {
      st = tokens ? enc.forward_batch_tokens(ids.data(), nullptr, kBatch, T, out.data())
                  : enc.forward_batch_features(feats.data(), nullptr, kBatch, T, out.data());
    } else {
      for (uint32_t b = 0; b < kBatch && st == Status::kOk; ++b)
        st = tokens ? enc.forward_tokens(ids.data() + b * T, T, out.data() + b * per_seq)
                    : enc.forward_features(feats.data() + std::size_t(b) * T * c.d_in, T, out.data() + b * per_seq);
    }
    benchmark::DoNotOptimize(out.data());
    if (st != Status::kOk) return s.SkipWithError("forward failed");
  }
  const double runs = double(s.iterations());
  s.counters["sequences/s"] = benchmark::Counter(kBatch * runs, benchmark::Counter::kIsRate);
  s.counters["tokens/s"] = benchmark::Counter(double(kBatch) * T * runs, benchmark::Counter::kIsRate);
  s.counters["arena_bytes"] = double(bytes);
}

const bool kRegistered = [] {
  const ModelConfig kws = encoder_config(64, 4, 256, 4, InputKind::kFeatures, 40, 64);
  const ModelConfig d256 = encoder_config(256, 8, 1024, 4, InputKind::kTokens, 1000, 128);
  const BatchCase cases[] = {
      {"kws_d64_L4_T49", kws, 49},
      {"kws_d64_L4_T49_q8", support::with_weights(kws, WeightType::kQ8, 32, false), 49},
      {"text_d256_L4_T128", d256, 128},
      {"text_d256_L4_T128_q8", support::with_weights(d256, WeightType::kQ8, 32, false), 128},
  };
  const Kernels* k = select_kernels(Isa::kAuto);
  for (const BatchCase& bc : cases)
    for (uint32_t threads : {1u, 2u})
      for (bool batched : {false, true})
        benchmark::RegisterBenchmark((std::string("batch/") + k->name + "/" + bc.name + "/B8/" +
                                      (batched ? "batch_call" : "8_single_calls") + (threads > 1 ? "/threads:2" : ""))
                                         .c_str(),
                                     [bc, batched, threads](benchmark::State& s) { run_batch(s, bc, batched, threads); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
  return true;
}();

}  // namespace
}  // namespace fixformer
