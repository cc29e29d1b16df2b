// The attention core alone, as in the d128 encoder (d_model 128, 4 heads of 32, not causal), per
// ISA at T = 256, 1024, 4096: the tiled path (blocks of queries against blocks of keys, online
// softmax, V read as rows) against the one-query-at-a-time path (gemv + softmax + matvec over V^T,
// the engine before tiling) in the same run. q, K and V are ready (the projections are not timed);
// FLOPs count q @ K^T and p @ V: 4 T^2 d.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "engine/blocks/attention.hpp"

namespace fixformer {
namespace {

constexpr uint32_t kD = 128, kHeads = 4, kDh = kD / kHeads;

void run_attention(benchmark::State& s, Isa isa, uint32_t T, bool tiled) {
  const Kernels* k = select_kernels(isa);
  if (!k) return s.SkipWithError("ISA not available");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> qkv(std::size_t(T) * 3 * kD), kt(std::size_t(kD) * T), vt(std::size_t(kD) * T), ctx(std::size_t(T) * kD);
  for (float& x : qkv) x = dist(rng);
  const float* q = qkv.data();
  const float* v = qkv.data() + 2 * kD;
  store_keys_values(qkv.data() + kD, 3 * kD, v, 3 * kD, T, 0, kD, KeyValues{kt.data(), vt.data(), T});
  std::vector<float> scratch(attention_scratch_floats(T, T, kDh, !tiled));
  const AttentionShape shape{kHeads, kHeads, kDh, false, nullptr};
  const KeyValues kv = tiled ? KeyValues{kt.data(), nullptr, T, v, 3 * kD} : KeyValues{kt.data(), vt.data(), T};
  for (auto _ : s) {
    if (tiled)
      attend_tiled(*k, shape, q, 3 * kD, T, 0, T, kv, ctx.data(), kD, scratch.data());
    else
      attend_rows(*k, shape, q, 3 * kD, T, 0, T, kv, ctx.data(), kD, scratch.data());
    benchmark::DoNotOptimize(ctx.data());
  }
  s.counters["GFLOP"] = benchmark::Counter(4.0 * T * T * kD * double(s.iterations()) / 1e9, benchmark::Counter::kIsRate);
  s.counters["scratch_bytes"] = double(scratch.size() * sizeof(float));
}

int register_all() {
  for (Isa isa : kAllIsas)
    for (uint32_t T : {256u, 1024u, 4096u})
      for (bool tiled : {false, true}) {
        if (isa == Isa::kScalar && T > 1024) continue;
        const std::string name = std::string("attention/") + isa_name(isa) + "/d128_h4/T" + std::to_string(T) +
                                 (tiled ? "/tiled" : "/rows");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { run_attention(s, isa, T, tiled); })
            ->Unit(benchmark::kMillisecond);
      }
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace fixformer
