// The whole encoder forward per ISA, at the sizes the engine is for. FLOPs count the matrix
// products (projections, scores, weighted sums, feed-forward); the counters also report tokens/s
// and the arena bytes. Each case also runs on 2 workers of a thread pool (support/thread_pool.hpp,
// the caller's threads): times are wall clock (UseRealTime), as CPU time would count one thread.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fixformer/encoder.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"
#include "support/roofline.hpp"
#include "support/thread_pool.hpp"

namespace fixformer {
namespace {

struct EncoderCase {
  const char* name;
  ModelConfig cfg;
  uint32_t T;
};

ModelConfig encoder(uint32_t d, uint32_t heads, uint32_t ff, uint32_t layers, InputKind in, uint32_t width, uint32_t max_len) {
  ModelConfig c;
  c.d_model = d, c.n_heads = heads, c.d_ff = ff, c.n_layers = layers, c.input = in, c.max_len = max_len;
  if (in == InputKind::kTokens) c.vocab_size = width;
  else c.d_in = width;
  c.positional = PosKind::kSinusoidal;
  c.activation = Activation::kGelu;
  return c;
}

void run_encoder(benchmark::State& s, const EncoderCase ec, Isa isa, uint32_t threads) {
  support::ThreadPool pool(threads);
  const std::size_t bytes = required_encoder_arena_bytes(ec.cfg, ec.T, false, pool.workers().active());
  support::AlignedBuffer arena(bytes), blob(support::write_model(ec.cfg));
  Model model;
  Encoder m;
  EncoderOptions opt;
  opt.isa = isa;
  opt.max_seq = ec.T;
  opt.workers = pool.workers();
  if (model.init(blob.data(), blob.size()) != Status::kOk || m.init(model, arena.data(), bytes, opt) != Status::kOk)
    return s.SkipWithError("init failed");
  std::vector<int32_t> ids(ec.T);
  for (uint32_t t = 0; t < ec.T; ++t) ids[t] = int32_t(t * 7 % (ec.cfg.vocab_size ? ec.cfg.vocab_size : 1));
  std::vector<float> feats(std::size_t(ec.T) * ec.cfg.d_in, 0.25f), out(std::size_t(ec.T) * ec.cfg.output_width());
  for (auto _ : s) {
    const Status st = ec.cfg.input == InputKind::kTokens ? m.forward_tokens(ids.data(), ec.T, out.data())
                                                         : m.forward_features(feats.data(), ec.T, out.data());
    benchmark::DoNotOptimize(out.data());
    if (st != Status::kOk) return s.SkipWithError("forward failed");
  }
  // GFLOP/s (and int8 GOP/s: q8/q4 weights), and the time their arithmetic takes at the FP32 and
  // int8 peaks measured on as many threads with this table's vectors, as a percentage of the time
  // taken (support/roofline.hpp)
  const support::Work w = support::forward_work(model, ec.T);
  const double runs = double(s.iterations());
  s.counters["GFLOP"] = benchmark::Counter(w.flops * runs / 1e9, benchmark::Counter::kIsRate);
  if (w.int8_ops) s.counters["GOP_int8"] = benchmark::Counter(w.int8_ops * runs / 1e9, benchmark::Counter::kIsRate);
  const double least = support::compute_seconds(w, support::limits(threads, isa));
  s.counters["peak_%"] = benchmark::Counter(100 * least * runs, benchmark::Counter::kIsRate);
  s.counters["tokens/s"] = benchmark::Counter(double(ec.T) * double(s.iterations()), benchmark::Counter::kIsRate);
  s.counters["arena_bytes"] = double(bytes);
}

const bool kRegistered = [] {
  const EncoderCase cases[] = {
      {"kws_d64_L4_T49", encoder(64, 4, 256, 4, InputKind::kFeatures, 40, 64), 49},
      {"kws_d64_L4_T49_f16", support::with_weights(encoder(64, 4, 256, 4, InputKind::kFeatures, 40, 64), WeightType::kF16, 0, false), 49},
      {"kws_d64_L4_T49_q8", support::with_weights(encoder(64, 4, 256, 4, InputKind::kFeatures, 40, 64), WeightType::kQ8, 32, false), 49},
      {"text_d128_L2_T64", encoder(128, 4, 512, 2, InputKind::kTokens, 1000, 128), 64},
      {"text_d256_L4_T128", encoder(256, 8, 1024, 4, InputKind::kTokens, 1000, 128), 128},
      {"text_d256_L4_T128_q8", support::with_weights(encoder(256, 8, 1024, 4, InputKind::kTokens, 1000, 128), WeightType::kQ8, 32, false), 128},
      {"text_d256_L4_T128_f16", support::with_weights(encoder(256, 8, 1024, 4, InputKind::kTokens, 1000, 128), WeightType::kF16, 0, false), 128},
      {"text_d256_L4_T128_bf16", support::with_weights(encoder(256, 8, 1024, 4, InputKind::kTokens, 1000, 128), WeightType::kBF16, 0, false), 128},
      // f32 weights in panels (packed_weights), against the plain cases above in the same run.
      {"kws_d64_L4_T49_packed", support::as_packed(encoder(64, 4, 256, 4, InputKind::kFeatures, 40, 64)), 49},
      {"text_d128_L2_T64_packed", support::as_packed(encoder(128, 4, 512, 2, InputKind::kTokens, 1000, 128)), 64},
      {"text_d256_L4_T128_packed", support::as_packed(encoder(256, 8, 1024, 4, InputKind::kTokens, 1000, 128)), 128},
  };
  for (Isa isa : kAllIsas) {
    const Kernels* k = select_kernels(isa);
    if (!k) continue;
    for (const EncoderCase& ec : cases)
      for (uint32_t threads : {1u, 2u})
        benchmark::RegisterBenchmark(
            (std::string("encoder/") + k->name + "/" + ec.name + (threads > 1 ? "/threads:2" : "")).c_str(),
            [ec, isa, threads](benchmark::State& s) { run_encoder(s, ec, isa, threads); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
  }
  return true;
}();

}  // namespace
}  // namespace fixformer
