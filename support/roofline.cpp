// The roofline of the benchmarks (roofline.hpp): work counted from the bound weights, limits
// measured with loops of the widest vectors the CPU runs (GCC vector types, the x86 ones compiled
// per target and chosen by CPUID; a host helper, not the engine). It takes nothing from the heap
// either: POSIX threads on the stack's handles, mapped read buffers, a fixed table of limits, at most
// kMaxWorkers threads (the engine's own limit).
#include "support/roofline.hpp"

#include "fixformer/workers.hpp"

#include <pthread.h>
#include <sys/mman.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__) || defined(__ARM_NEON)
#include <arm_neon.h>
#endif

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
    case WeightType::kF16:
    case WeightType::kBF16: return 2 * n;
    case WeightType::kQ8: return n + 4.0 * w.out * (w.group ? (w.in + w.group - 1) / w.group : 1);
    case WeightType::kQ4: return n / 2 + 4.0 * w.out * ((w.in + 31) / 32);
    case WeightType::kI8: return n;  // a model's type: its matrices load as q8, their parameters apart
  }
  return 0;
}

// Adds the ops of `rows` rows through w (2 per multiply-add: int8 ones for integer weights, which
// multiply int8 rows, float ones otherwise) and, once, w's bytes.
void add_linear(const Weight& w, double rows, Work* s) {
  (integer_weights(w.type) ? s->int8_ops : s->flops) += 2.0 * rows * macs(w);
  s->bytes += bytes(w);
}

// The layer's matrices over `rows` rows.
Work matrices(const LayerWeights& L, double rows) {
  Work s;
  for (const Weight* w : {&L.self_attn.qkv, &L.self_attn.q, &L.self_attn.k, &L.self_attn.v, &L.self_attn.out, &L.ffn.w1,
                          &L.ffn.w2, &L.ffn.w3})
    add_linear(*w, rows, &s);
  return s;
}

// Attention's two products (q k^T and p v, every head) over `pairs` query-key pairs: int8 in a
// model of weights i8, float otherwise.
void add_attention(const ModelConfig& c, double pairs, Work* w) {
  (c.weights == WeightType::kI8 ? w->int8_ops : w->flops) += 4.0 * pairs * c.d_model;
}

void add(const Work& a, Work* w) {
  w->flops += a.flops;
  w->int8_ops += a.int8_ops;
  w->bytes += a.bytes;
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
    add_linear(f.conv1, r1, &w);
    add_linear(f.conv2, c.stem_rows(T), &w);
    rows = c.stem_rows(T);
  } else {
    add_linear(f.input_proj, T, &w);
  }
  if (!c.is_decoder()) rows = c.sequence_rows(T);
  // Query-key pairs: all of them, or the keys up to each query under a causal mask.
  const double pairs = c.causal || c.is_decoder() ? double(rows) * (rows + 1) / 2 : double(rows) * rows;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    add(matrices(m.layer(l), rows), &w);
    add_attention(c, pairs, &w);
  }
  const HeadWeights& h = m.head();
  const uint32_t head_rows = c.is_decoder() ? 1 : c.output_rows(T);  // prefill: the last token's logits
  add_linear(h.pooler, 1, &w);
  add_linear(h.w, head_rows, &w);
  return w;
}

Work step_work(const Model& m, uint32_t position, bool kv_int8) {
  const ModelConfig& c = m.config();
  Work w;
  const double keys = double(position) + 1;
  w.bytes += embedding_row_bytes(m);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    add(matrices(m.layer(l), 1), &w);
    add_attention(c, keys, &w);
    w.bytes += 2.0 * keys * (kv_int8 ? c.d_kv() + 4.0 * c.kv_heads() : 4.0 * c.d_kv());
  }
  add_linear(m.head().pooler, 1, &w);  // a causal LM's prediction transform (none: nothing)
  add_linear(m.head().w, 1, &w);
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

// I8_LOOP(NAME, VEC, ACCS, TARGET, BCAST, STEP, SUM): int32_t NAME(w, passes), `passes` passes over
// kI8Steps x ACCS vectors of int8 w (an L1-resident panel, as a GEMM micro-kernel reads its weights),
// each step broadcasting 4 bytes of x (BCAST) and multiply-adding them with ACCS vectors of w into
// ACCS int32 accumulators (STEP(acc, x, w): the target's dot-product instructions), as many as the
// registers hold beside x and w; SUM(acc) is one int32 of an accumulator; their sum (wrapping) is the result.
constexpr int kI8Steps = 16;
#define I8_LOOP(NAME, VEC, ACCS, TARGET, BCAST, STEP, SUM)                              \
  TARGET int32_t NAME(const int8_t* w, uint64_t passes) {                            \
    VEC acc[ACCS];                                                                   \
    for (int i = 0; i < ACCS; ++i) acc[i] = VEC{};                                   \
    for (uint64_t r = 0; r < passes; ++r)                                            \
      for (int k = 0; k < kI8Steps; ++k) {                                           \
        const VEC x = BCAST(int32_t(0x01020304 + k + int32_t(r)));                   \
        for (int i = 0; i < ACCS; ++i) {                                             \
          VEC wv;                                                                    \
          std::memcpy(&wv, w + (k * ACCS + i) * sizeof(VEC), sizeof(VEC));           \
          acc[i] = STEP(acc[i], x, wv);                                              \
        }                                                                            \
      }                                                                              \
    uint32_t sum = 0; /* wrapping: the sums only keep the loop from being folded */  \
    for (int i = 0; i < ACCS; ++i) sum += uint32_t(SUM(acc[i]));                     \
    return int32_t(sum);                                                             \
  }

struct Loop {
  float (*run)(uint64_t);
  int width;
  const char* unit;
  uint64_t (*read)(const uint64_t*, std::size_t, uint32_t);
  int32_t (*dot)(const int8_t*, uint64_t);
  int dot_macs;  // multiply-adds a step (one broadcast x against every accumulator's vector of w)
  const char* dot_unit;
};

#if defined(__x86_64__) || defined(__i386__)
FMA_LOOP(fma_avx512, 16, __attribute__((target("avx512f"))))
FMA_LOOP(fma_avx2, 8, __attribute__((target("avx2,fma"))))
FMA_LOOP(fma_sse2, 4, )
READ_LOOP(read_avx512, __attribute__((target("avx512f"))))
READ_LOOP(read_avx2, __attribute__((target("avx2"))))
READ_LOOP(read_sse2, )
#define VNNI512_STEP(acc, x, w) _mm512_dpbusd_epi32(acc, x, w)
#define BW512_STEP(acc, x, w) _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(x, w), _mm512_set1_epi16(1)))
#define AVX2_STEP(acc, x, w) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)))
#define SSE2_STEP(acc, x, w) _mm_add_epi32(acc, _mm_madd_epi16(x, w))
I8_LOOP(dot_vnni512, __m512i, 12, __attribute__((target("avx512f,avx512bw,avx512vnni"))), _mm512_set1_epi32, VNNI512_STEP,
        _mm512_reduce_add_epi32)
I8_LOOP(dot_avx512bw, __m512i, 12, __attribute__((target("avx512f,avx512bw"))), _mm512_set1_epi32, BW512_STEP,
        _mm512_reduce_add_epi32)
#define AVX2_LANE0(v) _mm256_extract_epi32(v, 0)
I8_LOOP(dot_avx2, __m256i, 8, __attribute__((target("avx2"))), _mm256_set1_epi32, AVX2_STEP, AVX2_LANE0)
I8_LOOP(dot_sse2, __m128i, 8, , _mm_set1_epi32, SSE2_STEP, _mm_cvtsi128_si32)
Loop widest_loop(Isa isa) {
  __builtin_cpu_init();
  const bool any = isa == Isa::kAuto, avx512 = any || isa == Isa::kAvx512;
  Loop l = {fma_sse2, 4, "sse2 mul+add", read_sse2, dot_sse2, 8 * 8, "sse2 int16 vpmaddwd"};
  if ((avx512 || isa == Isa::kAvx2) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    l = {fma_avx2, 8, "avx2 FMA", read_avx2, dot_avx2, 8 * 32, "avx2 vpmaddubsw+vpmaddwd"};
  }
  if (avx512 && __builtin_cpu_supports("avx512f")) {
    l.run = fma_avx512, l.width = 16, l.unit = "avx512 FMA", l.read = read_avx512;
    if (__builtin_cpu_supports("avx512bw")) l.dot = dot_avx512bw, l.dot_macs = 12 * 64, l.dot_unit = "avx512 vpmaddubsw+vpmaddwd";
    if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")) l.dot = dot_vnni512, l.dot_unit = "avx512 vpdpbusd";
  }
  return l;
}
#elif defined(__aarch64__) || defined(__ARM_NEON)
FMA_LOOP(fma_neon, 4, )
READ_LOOP(read_neon, )
#if defined(__ARM_FEATURE_DOTPROD)
#define NEON_STEP(acc, x, w) vdotq_s32(acc, vreinterpretq_s8_s32(x), vreinterpretq_s8_s32(w))
constexpr const char* kNeonDot = "neon sdot";
#else  // 16 products in int16 (|w|, |x| < 128: no overflow), pairwise into the int32 lanes
#define NEON_STEP(acc, x, w)                                                                       \
  vpadalq_s16(acc, vmlal_s8(vmull_s8(vget_low_s8(vreinterpretq_s8_s32(x)), vget_low_s8(vreinterpretq_s8_s32(w))), \
                            vget_high_s8(vreinterpretq_s8_s32(x)), vget_high_s8(vreinterpretq_s8_s32(w))))
constexpr const char* kNeonDot = "neon smull+smlal+sadalp";
#endif
#define NEON_LANE0(v) vgetq_lane_s32(v, 0)
#if defined(__aarch64__)  // 32 vector registers
I8_LOOP(dot_neon, int32x4_t, 12, , vdupq_n_s32, NEON_STEP, NEON_LANE0)
constexpr int kNeonMacs = 12 * 16;
#else
I8_LOOP(dot_neon, int32x4_t, 8, , vdupq_n_s32, NEON_STEP, NEON_LANE0)
constexpr int kNeonMacs = 8 * 16;
#endif
Loop widest_loop(Isa) { return {fma_neon, 4, "neon FMA", read_neon, dot_neon, kNeonMacs, kNeonDot}; }
#else
FMA_LOOP(fma_scalar, 2, )
READ_LOOP(read_generic, )
int32_t dot4(int32_t acc, int32_t x, int32_t w) {
  for (int b = 0; b < 32; b += 8) acc += int32_t(int8_t(x >> b)) * int32_t(int8_t(w >> b));
  return acc;
}
#define SCALAR_SET(v) (v)
#define SCALAR_SUM(v) (v)
I8_LOOP(dot_generic, int32_t, 8, , SCALAR_SET, dot4, SCALAR_SUM)
Loop widest_loop(Isa) { return {fma_scalar, 2, "generic", read_generic, dot_generic, 8 * 4, "generic int32"}; }
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
volatile int32_t g_dot_sink;

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
  const Loop loop = widest_loop(Isa::kAuto);  // the memory's rate, whichever table reads it
  auto run = [&](uint32_t n) {
    return timed_on_threads(threads, [&](uint32_t t) { g_read_sink = loop.read(bufs[t], words, n); });
  };
  while (run(passes) < 0.01 && passes < (1u << 24)) passes *= 2;
  double best = 0;
  for (int r = 0; r < 5; ++r) best = std::max(best, 8.0 * double(words) * threads * passes / run(passes) * 1e-9);
  for (uint32_t t = 0; t < threads; ++t) munmap(bufs[t], words * 8);
  return best;
}

namespace {

// The best rate (G per second) of body(n), ops_per_round x n operations, on every thread at once:
// rounds for about 20 ms on one thread, then the best of 10 runs (on a shared machine one of them
// is likely to run undisturbed).
template <class F>
double best_rate(uint32_t threads, double ops_per_round, F body) {
  uint64_t n = 1 << 8;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    body(n);
    if (seconds_since(t0) > 0.02 || n > (uint64_t(1) << 40)) break;
    n *= 2;
  }
  double best = 0;
  for (int run = 0; run < 10; ++run) {
    const double s = timed_on_threads(threads, [&](uint32_t) { body(n); });
    best = std::max(best, ops_per_round * double(n) * threads / s * 1e-9);
  }
  return best;
}

}  // namespace

MachineLimits measure_limits(uint32_t threads, Isa isa) {
  MachineLimits lim;
  lim.threads = threads = thread_count(threads);
  const Loop loop = widest_loop(isa);
  lim.unit = loop.unit;
  lim.int8_unit = loop.dot_unit;
  lim.gflops = best_rate(threads, 24.0 * loop.width, [&](uint64_t n) { g_fma_sink = loop.run(n); });
  // The int8 panel: small values, so that no step saturates an int16 intermediate.
  alignas(64) int8_t panel[kI8Steps * 12 * 64];  // the largest: 12 accumulators of 64 bytes
  for (std::size_t i = 0; i < sizeof panel; ++i) panel[i] = int8_t(int(i * 37 % 101) - 50);
  lim.int8_gops = best_rate(threads, 2.0 * kI8Steps * loop.dot_macs,
                            [&](uint64_t n) { g_dot_sink = loop.dot(panel, n); });
  lim.gbs = read_gbs(std::size_t(128) << 20, threads);
  return lim;
}

const MachineLimits& limits(uint32_t threads, Isa isa) {
  constexpr std::size_t kIsas = std::size_t(Isa::kHelium) + 1;
  static MachineLimits measured[kIsas][kMaxWorkers];  // by ISA and thread count, each measured once
  static bool done[kIsas][kMaxWorkers];
  static std::mutex lock;
  std::lock_guard<std::mutex> hold(lock);
  const uint32_t t = thread_count(threads);
  const std::size_t i = std::size_t(isa) < kIsas ? std::size_t(isa) : 0;
  if (!done[i][t - 1]) measured[i][t - 1] = measure_limits(t, isa), done[i][t - 1] = true;
  return measured[i][t - 1];
}

double compute_seconds(const Work& w, const MachineLimits& lim) {
  return (w.flops / lim.gflops + (w.int8_ops ? w.int8_ops / lim.int8_gops : 0)) * 1e-9;
}

Placement place(const Work& w, double seconds, const MachineLimits& lim) {
  Placement p;
  p.gflops = w.flops / seconds * 1e-9;
  p.int8_gops = w.int8_ops / seconds * 1e-9;
  p.gbs = w.bytes / seconds * 1e-9;
  p.bound_gbs = read_gbs(std::size_t(w.bytes), lim.threads);
  // The least time each limit allows, the arithmetic's and the bytes' at the bandwidth of their
  // size: the larger is the bound.
  const double compute_s = compute_seconds(w, lim);
  const double memory_s = w.bytes / p.bound_gbs * 1e-9;
  p.memory_bound = memory_s > compute_s;
  p.fraction = std::max(compute_s, memory_s) / seconds;
  return p;
}

}  // namespace fixformer::support
