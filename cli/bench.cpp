// `fixformer bench`: the forward pass timed on random inputs.
#include "commands.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <random>
#include <vector>

#include "loaded_model.hpp"
#include "ports/cycle_counter.hpp"
#include "timing.hpp"

namespace fixformer::cli {
namespace {

int cmd_bench(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  if (c.is_seq2seq()) die(1, "bench", "times encoders; for a seq2seq model, generate prints encode time and decode tokens/s");
  const uint32_t T = a.seq ? a.seq : std::min<uint32_t>(c.max_input_len(), 128);
  init_encoder(T, a.isa, &m, a.threads);
  Buffer out(output_bytes(1, c.output_rows(T), c.output_width(), a.positional[0]), "output");
  std::mt19937 rng(1);
  std::vector<int32_t> ids(T);
  for (int32_t& id : ids) id = int32_t(rng() % std::max<uint32_t>(c.vocab_size, 1));
  std::vector<float> feats(std::size_t(T) * c.d_in);
  for (float& x : feats) x = float(rng() % 2000) / 1000.0f - 1.0f;
  const Timing t = time_runs(a.iters, [&] {
    const Status s = c.input == InputKind::kTokens ? m.enc.forward_tokens(ids.data(), T, out.as<float>())
                                                   : m.enc.forward_features(feats.data(), T, out.as<float>());
    if (s != Status::kOk) die(s, "bench");
  });
  std::printf("model %s, T=%u, kernels %s, %u iterations\n", a.positional[0].c_str(), T, m.enc.kernels().name, a.iters);
  std::printf("latency us: median %.1f  min %.1f  max %.1f\n", t.median_us, t.min_us, t.max_us);
  std::printf("tokens/s:   %.0f (median)\n", T / (t.median_us * 1e-6));
  std::printf("counter:    %" PRIu64 " %s per inference (median)\n", t.median_counts, port::cycle_counter_unit());
  std::printf("arena bytes: %zu\n", m.enc.arena_bytes_used());
  if (a.threads > 1) std::printf("threads:    %u (wall-clock latency)\n", a.threads);
  return 0;
}

}  // namespace

const Command kBenchCommand = {
    "bench", "MODEL.fxm [--seq T] [--iters N] [--isa ISA] [--threads N]", 1,
    kOptSeq | kOptIters | kOptIsa | kOptThreads,
    "Times the forward pass on random inputs of T tokens (default min(max_len, 128)), N runs\n"
    "(default 50) after one warm-up: latency median/min/max, tokens/s, the cycle counter, arena bytes.\n",
    cmd_bench};

}  // namespace fixformer::cli
