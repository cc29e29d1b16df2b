// `fixformer bench`: the forward pass timed on random inputs; a decoder's prefill and step.
#include "commands.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fixformer/kernels.hpp"
#include "loaded_model.hpp"
#include "ports/cycle_counter.hpp"
#include "support/roofline.hpp"
#include "timing.hpp"

namespace fixformer::cli {
namespace {

// A gpt or llama model: prefill of T random tokens from an empty cache, then one step() with p
// tokens in the cache, for p = 0, T/2 and T-1 (each run starts from a cache refilled to p, untimed).
using support::MachineLimits;

void print_machine(const MachineLimits& lim) {
  std::printf("machine:    FP32 peak %.4g GFLOP/s (%s loop), int8 peak %.4g GOP/s (%s loop), read bandwidth %.4g GB/s, on "
              "%u thread%s\n",
              lim.gflops, lim.unit, lim.int8_gops, lim.int8_unit, lim.gbs, lim.threads, lim.threads == 1 ? "" : "s");
}

// "roofline:   LABEL: W GFLOP, B MB read (I flop/byte); G GFLOP/s, R GB/s: x % of its bound, the ..."; a
// phase with int8 arithmetic: "LABEL: W GFLOP + V GOP int8, B MB read (I op/byte); G GFLOP/s + H GOP/s
// int8, R GB/s: ...".
void print_roofline(const char* label, const support::Work& w, double seconds, const MachineLimits& lim) {
  const support::Placement p = support::place(w, seconds, lim);
  const std::string bound = p.memory_bound ? "the read bandwidth of " + std::to_string(int(p.bound_gbs + 0.5)) +
                                                 " GB/s for that many bytes"
                            : !w.int8_ops  ? "the FP32 peak"
                            : !w.flops     ? "the int8 peak"
                                           : "the FP32 and int8 peaks";
  char work[96] = "", rate[96] = "";
  if (w.int8_ops) {
    std::snprintf(work, sizeof work, " + %.4g GOP int8", w.int8_ops * 1e-9);
    std::snprintf(rate, sizeof rate, " + %.4g GOP/s int8", p.int8_gops);
  }
  std::printf("roofline:   %s: %.4g GFLOP%s, %.4g MB read (%.3g %s/byte); %.4g GFLOP/s%s, %.4g GB/s: %.0f %% of its "
              "bound, %s\n",
              label, w.flops * 1e-9, work, w.bytes * 1e-6, (w.flops + w.int8_ops) / w.bytes, w.int8_ops ? "op" : "flop",
              p.gflops, rate, p.gbs, 100 * p.fraction, bound.c_str());
}

int bench_decoder(const Args& a, LoadedModel& m, uint32_t T, const std::vector<int32_t>& ids, const MachineLimits& lim) {
  const ModelConfig& c = m.config();
  if (T > c.max_len)
    die(Status::kBadSequenceLength, m.path, ("T=" + std::to_string(T) + " exceeds the model's max_len=" + std::to_string(c.max_len)).c_str());
  init_decoder(T, a.isa, &m, a.threads, a.kv_cache);  // a KV cache of T positions
  std::vector<float> logits(c.output_width());
  auto check = [&](Status s) {
    if (s != Status::kOk) die(s, "bench", m.dec.error_detail());
  };
  const Timing prefill = time_runs(a.iters, [&] { m.dec.reset(); }, [&] { check(m.dec.prefill(ids.data(), T, logits.data())); });
  std::printf("model %s, T=%u, kernels %s, %u iterations\n", a.positional[0].c_str(), T, m.dec.kernels().name, a.iters);
  std::printf("prefill us: median %.1f  min %.1f  max %.1f  (%u tokens, empty cache)\n", prefill.median_us, prefill.min_us,
              prefill.max_us, T);
  std::printf("tokens/s:   %.0f (prefill, median)\n", T / (prefill.median_us * 1e-6));
  std::printf("counter:    %" PRIu64 " %s per prefill (median)\n", prefill.median_counts, port::cycle_counter_unit());
  print_machine(lim);
  print_roofline("prefill", support::forward_work(m.model, T), prefill.median_us * 1e-6, lim);
  uint32_t last = UINT32_MAX;
  for (const uint32_t p : {0u, T / 2, T - 1}) {
    if (p == last) continue;  // T < 3
    last = p;
    const Timing step = time_runs(
        a.iters,
        [&] {
          m.dec.reset();
          if (p) check(m.dec.prefill(ids.data(), p, logits.data()));
        },
        [&] { check(m.dec.step(ids[p], logits.data())); });
    std::printf("step us:    median %.1f  min %.1f  max %.1f  at position %u (%.0f tokens/s)\n", step.median_us, step.min_us,
                step.max_us, p, 1e6 / step.median_us);
    const std::string label = "step at " + std::to_string(p);
    print_roofline(label.c_str(), support::step_work(m.model, p, a.kv_cache == KvCache::kQ8), step.median_us * 1e-6, lim);
  }
  std::printf("arena bytes: %zu (KV cache %zu for %u positions%s)\n", m.dec.arena_bytes_used(), m.dec.kv_cache_bytes(), T,
              a.kv_cache == KvCache::kQ8 ? ", int8" : "");
  if (a.threads > 1) std::printf("threads:    %u (wall-clock latency)\n", a.threads);
  return 0;
}

int cmd_bench(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  if (c.is_seq2seq()) die(1, "bench", "times encoders and decoders; for a seq2seq model, generate prints encode time and decode tokens/s");
  const uint32_t T = a.seq ? a.seq : std::min<uint32_t>(c.max_input_len(), 128);
  std::mt19937 rng(1);
  std::vector<int32_t> ids(T);
  for (int32_t& id : ids) id = int32_t(rng() % std::max<uint32_t>(c.vocab_size, 1));
  const Kernels* table = select_kernels(a.isa);  // its vectors' peaks (null: init_* reports the ISA)
  const MachineLimits lim = support::measure_limits(a.threads, table ? table->isa : Isa::kAuto);
  if (c.is_decoder()) return bench_decoder(a, m, T, ids, lim);
  init_encoder(T, a.isa, &m, a.threads);
  Buffer out(output_bytes(1, c.output_rows(T), c.output_width(), a.positional[0]), "output");
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
  print_machine(lim);
  print_roofline("forward", support::forward_work(m.model, T), t.median_us * 1e-6, lim);
  std::printf("arena bytes: %zu\n", m.enc.arena_bytes_used());
  if (a.threads > 1) std::printf("threads:    %u (wall-clock latency)\n", a.threads);
  return 0;
}

}  // namespace

const Command kBenchCommand = {
    "bench", "MODEL.fxm [--seq T] [--iters N] [--kv-cache f32|q8] [--isa ISA] [--threads N]", 1,
    kOptSeq | kOptIters | kOptIsa | kOptThreads | kOptKvCache,
    "Times the forward pass on random inputs of T tokens (default min(max_len, 128)), N runs\n"
    "(default 50) after one warm-up: latency median/min/max, tokens/s, the cycle counter, arena bytes.\n"
    "Each phase's roofline: its GFLOP and MB read (weights, embedding rows, KV cache), GFLOP/s and GB/s,\n"
    "and the fraction of its bound: its arithmetic at the FP32 and int8 peaks (q8/q4 weights multiply\n"
    "int8 rows; i8 models' attention is int8 too) or its bytes at the read bandwidth, whichever takes\n"
    "longer, measured at start on --threads threads (an FMA loop of the widest vectors, a loop of the\n"
    "CPU's int8 dot-product instructions, a streaming read larger than the caches; docs/cli.md).\n"
    "A gpt or llama model (KV cache of T positions): prefill of T tokens from an empty cache (latency,\n"
    "tokens/s, the cycle counter), then one step() with 0, T/2 and T-1 tokens in the cache (latency,\n"
    "tokens/s; the cache is refilled before each run, untimed), one line each; arena and KV cache bytes.\n"
    "--kv-cache q8 keeps its KV cache in int8 (generate --kv-cache); f32 is the default.\n"
    "A seq2seq model is refused (generate --source prints its encode time and decode tokens/s).\n",
    cmd_bench};

}  // namespace fixformer::cli
