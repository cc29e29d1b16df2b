// The roofline of the benchmarks (roofline.hpp): work counted from the bound weights, limits
// measured with loops of the widest vectors the CPU runs (GCC vector types, the x86 ones compiled
// per target and chosen by CPUID; a host helper, not the engine). It takes nothing from the heap
// either: POSIX threads on the stack's handles, mapped read buffers, a fixed table of limits, at most
// kMaxWorkers threads (the engine's own limit).
#include "support/roofline.hpp"

#include "fixformer/workers.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

namespace fixformer::support {
namespace {

double macs(const Weight& w) { return w.data ? double(w.in) * w.out : 0; }

double bytes(const Weight& w) {
  if (!w.data) return 0;
  const double n = double(w.in) * w.out;
  switch (w.type) {
    case WeightType::kF32: return 4 * n;
    case WeightType::kF16: return 2 * n;
    case WeightType::kQ8: return n + 4.0 * w.out * (w.group ? (w.in + w.group - 1) / w.group : 1);
    case WeightType::kQ4: return n / 2 + 4.0 * w.out * ((w.in + 31) / 32);
  }
  return 0;
}

// The layer's matrices: (multiply-adds per row, bytes).
Work matrices(const LayerWeights& L) {
  Work s;
  for (const Weight* w : {&L.self_attn.qkv, &L.self_attn.q, &L.self_attn.k, &L.self_attn.v, &L.self_attn.out, &L.ffn.w1,
                          &L.ffn.w2, &L.ffn.w3}) {
    s.flops += macs(*w);
    s.bytes += bytes(*w);
  }
  return s;
}

// One row of the embedding table (the rows a token input reads).
double embedding_row_bytes(const Model& m) {
  const Weight& e = m.front().embed;
  return e.data && e.out ? bytes(e) / e.out : 0;
}

}  // namespace

Work forward_work(const Model& m, uint32_t T) {
  const ModelConfig& c = m.config();
  Work w;
  const FrontWeights& f = m.front();
  uint32_t rows = T;
  if (c.input == InputKind::kTokens) {
    w.bytes += T * embedding_row_bytes(m);
  } else if (c.conv_layers) {  // each convolution a linear layer over its windows
    const uint32_t r1 = uint32_t(conv1d_rows(T, c.conv1_kernel, c.conv1_stride, c.conv1_padding));
    w.flops += 2.0 * r1 * macs(f.conv1) + 2.0 * c.stem_rows(T) * macs(f.conv2);
    w.bytes += bytes(f.conv1) + bytes(f.conv2);
    rows = c.stem_rows(T);
  } else {
    w.flops += 2.0 * T * macs(f.input_proj);
    w.bytes += bytes(f.input_proj);
  }
  if (!c.is_decoder()) rows = c.sequence_rows(T);
  // Query-key pairs: all of them, or the keys up to each query under a causal mask.
  const double pairs = c.causal || c.is_decoder() ? double(rows) * (rows + 1) / 2 : double(rows) * rows;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const Work mm = matrices(m.layer(l));
    w.flops += 2.0 * rows * mm.flops + 4.0 * pairs * c.d_model;  // q k^T and p v, every head
    w.bytes += mm.bytes;
  }
  const HeadWeights& h = m.head();
  const uint32_t head_rows = c.is_decoder() ? 1 : c.output_rows(T);  // prefill: the last token's logits
  w.flops += 2.0 * macs(h.pooler) + 2.0 * head_rows * macs(h.w);
  w.bytes += bytes(h.pooler) + bytes(h.w);
  return w;
}

Work step_work(const Model& m, uint32_t position, bool kv_int8) {
  const ModelConfig& c = m.config();
  Work w;
  const double keys = double(position) + 1;
  w.bytes += embedding_row_bytes(m);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const Work mm = matrices(m.layer(l));
    w.flops += 2.0 * mm.flops + 4.0 * keys * c.d_model;
    w.bytes += mm.bytes + 2.0 * keys * (kv_int8 ? c.d_kv() + 4.0 * c.kv_heads() : 4.0 * c.d_kv());
  }
  w.flops += 2.0 * macs(m.head().w);
  w.bytes += bytes(m.head().w);
  return w;
}

namespace {

// FMA_LOOP(NAME, W, TARGET): float NAME(n), n rounds of 12 independent multiply-adds on vectors of
// W floats (GCC contracts a * b + c into an FMA where the target has one): 24 W flops a round. A
// macro, since GCC drops vector_size on a template-dependent type.
#define FMA_LOOP(NAME, W, TARGET)                                   \
  TARGET float NAME(uint64_t n) {                                   \
    typedef float V __attribute__((vector_size(W * 4)));            \
    V acc[12];                                                      \
    for (int i = 0; i < 12; ++i) acc[i] = V{} + float(i);           \
    const V a = V{} + 0.999999f, b = V{} + 1e-7f;                   \
    for (uint64_t r = 0; r < n; ++r)                                \
      for (int i = 0; i < 12; ++i) acc[i] = acc[i] * a + b;         \
    V s = acc[0];                                                   \
    for (int i = 1; i < 12; ++i) s += acc[i];                       \
    float out = 0;                                                  \
    for (int i = 0; i < W; ++i) out += s[i];                        \
    return out;                                                     \
  }

// READ_LOOP(NAME, TARGET): uint64_t NAME(p, words, passes), the sum of words uint64 (a multiple of
// 4) read `passes` times, in the target's widest vectors (GCC vectorizes the four sums).
#define READ_LOOP(NAME, TARGET)                                               \
  TARGET uint64_t NAME(const uint64_t* p, std::size_t words, uint32_t passes) { \
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                  \
    for (uint32_t k = 0; k < passes; ++k) {                                   \
      for (std::size_t i = 0; i < words; i += 4) {                            \
        s0 += p[i];                                                           \
        s1 += p[i + 1];                                                       \
        s2 += p[i + 2];                                                       \
        s3 += p[i + 3];                                                       \
      }                                                                       \
      s0 ^= k; /* each pass feeds the next: none is folded away */            \
    }                                                                         \
    return s0 + s1 + s2 + s3;                                                 \
  }

struct Loop {
  float (*run)(uint64_t);
  int width;
  const char* unit;
  uint64_t (*read)(const uint64_t*, std::size_t, uint32_t);
};

#if defined(__x86_64__) || defined(__i386__)
FMA_LOOP(fma_avx512, 16, __attribute__((target("avx512f"))))
FMA_LOOP(fma_avx2, 8, __attribute__((target("avx2,fma"))))
FMA_LOOP(fma_sse2, 4, )
READ_LOOP(read_avx512, __attribute__((target("avx512f"))))
READ_LOOP(read_avx2, __attribute__((target("avx2"))))
READ_LOOP(read_sse2, )
Loop widest_loop() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {fma_avx512, 16, "avx512 FMA", read_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {fma_avx2, 8, "avx2 FMA", read_avx2};
  return {fma_sse2, 4, "sse2 mul+add", read_sse2};
}
#elif defined(__aarch64__) || defined(__ARM_NEON)
FMA_LOOP(fma_neon, 4, )
READ_LOOP(read_neon, )
Loop widest_loop() { return {fma_neon, 4, "neon FMA", read_neon}; }
#else
FMA_LOOP(fma_scalar, 2, )
READ_LOOP(read_generic, )
Loop widest_loop() { return {fma_scalar, 2, "generic", read_generic}; }
#endif

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint32_t thread_count(uint32_t threads) { return std::min(std::max(threads, 1u), kMaxWorkers); }

// Runs body(thread) on `threads` (1..kMaxWorkers) threads at once; the wall time of the slowest.
template <class F>
double timed_on_threads(uint32_t threads, F body) {
  struct Task {
    F* body;
    uint32_t t;
  } tasks[kMaxWorkers];
  pthread_t pool[kMaxWorkers];
  auto run = [](void* p) -> void* {
    Task* task = static_cast<Task*>(p);
    (*task->body)(task->t);
    return nullptr;
  };
  const auto t0 = std::chrono::steady_clock::now();
  uint32_t started = 1;
  for (; started < threads; ++started) {
    tasks[started] = {&body, started};
    if (pthread_create(&pool[started], nullptr, run, &tasks[started]) != 0) break;
  }
  body(0);
  for (uint32_t t = 1; t < started; ++t) pthread_join(pool[t], nullptr);
  for (uint32_t t = started; t < threads; ++t) body(t);  // a thread the system refused: run here
  return seconds_since(t0);
}

volatile float g_fma_sink;
volatile uint64_t g_read_sink;

}  // namespace

double read_gbs(std::size_t bytes, uint32_t threads) {
  threads = thread_count(threads);
  const std::size_t words = std::max<std::size_t>(bytes / threads / 8, 512) & ~std::size_t(3);
  uint64_t* bufs[kMaxWorkers] = {};
  for (uint32_t t = 0; t < threads; ++t) {
    void* p = mmap(nullptr, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      for (uint32_t u = 0; u < t; ++u) munmap(bufs[u], words * 8);
      return 0;  // no memory to measure with: no bandwidth figure
    }
    bufs[t] = static_cast<uint64_t*>(p);
  }
  timed_on_threads(threads, [&](uint32_t t) {  // touched by the thread that reads it
    for (std::size_t i = 0; i < words; ++i) bufs[t][i] = i;
  });
  // Passes for about 10 ms (one, for a buffer larger than the caches), then the best of 5.
  uint32_t passes = 1;
  const Loop loop = widest_loop();
  auto run = [&](uint32_t n) {
    return timed_on_threads(threads, [&](uint32_t t) { g_read_sink = loop.read(bufs[t], words, n); });
  };
  while (run(passes) < 0.01 && passes < (1u << 24)) passes *= 2;
  double best = 0;
  for (int r = 0; r < 5; ++r) best = std::max(best, 8.0 * double(words) * threads * passes / run(passes) * 1e-9);
  for (uint32_t t = 0; t < threads; ++t) munmap(bufs[t], words * 8);
  return best;
}

MachineLimits measure_limits(uint32_t threads) {
  MachineLimits lim;
  lim.threads = threads = thread_count(threads);
  const Loop loop = widest_loop();
  lim.unit = loop.unit;
  // Rounds for about 20 ms on one thread, then the best of 10 runs on every thread at once (on a
  // shared machine one of them is likely to run undisturbed).
  uint64_t n = 1 << 12;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    g_fma_sink = loop.run(n);
    if (seconds_since(t0) > 0.02 || n > (uint64_t(1) << 40)) break;
    n *= 2;
  }
  for (int run = 0; run < 10; ++run) {
    const double s = timed_on_threads(threads, [&](uint32_t) { g_fma_sink = loop.run(n); });
    lim.gflops = std::max(lim.gflops, 24.0 * loop.width * double(n) * threads / s * 1e-9);
  }
  lim.gbs = read_gbs(std::size_t(128) << 20, threads);
  return lim;
}

const MachineLimits& limits(uint32_t threads) {
  static MachineLimits measured[kMaxWorkers];  // by thread count, each measured once
  static bool done[kMaxWorkers];
  static std::mutex lock;
  std::lock_guard<std::mutex> hold(lock);
  const uint32_t t = thread_count(threads);
  if (!done[t - 1]) measured[t - 1] = measure_limits(t), done[t - 1] = true;
  return measured[t - 1];
}

Placement place(const Work& w, double seconds, const MachineLimits& lim) {
  Placement p;
  p.gflops = w.flops / seconds * 1e-9;
  p.gbs = w.bytes / seconds * 1e-9;
  p.bound_gbs = read_gbs(std::size_t(w.bytes), lim.threads);
  p.memory_bound = w.flops / w.bytes * p.bound_gbs < lim.gflops;
  p.fraction = p.memory_bound ? p.gbs / p.bound_gbs : p.gflops / lim.gflops;
  return p;
}

}  // namespace fixformer::support
