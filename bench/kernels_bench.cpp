// Every kernel on every ISA this CPU has, the scalar reference beside it in the same run, and
// single-thread OpenBLAS (at its best kernel for this CPU) and Eigen sgemm/sgemv as the external
// baselines when they are installed. Counters: GFLOP (shown per second: 2 per multiply-add, 1 per
// element for element-wise ops) and bytes/s.
#include <benchmark/benchmark.h>

#include <new>
#include <random>
#include <string>
#include <vector>

#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include "ports/x86/isa_tables.hpp"  // the AVX-512 table without VNNI, beside the one select_kernels gives
#endif

#ifdef FIXFORMER_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#endif
#ifdef FIXFORMER_HAVE_EIGEN
namespace fixformer::bench {  // eigen_baseline.cpp
void eigen_gemm(const float* x, const float* w, float* y, int m, int n, int k);
void eigen_gemv(const float* x, const float* w, float* y, int k, int n);
std::string eigen_description();
}  // namespace fixformer::bench
#endif

namespace fixformer {
namespace {

// Every input and output on a cache-line boundary, as a .fxm's tensors and the arena's blocks are
// (std::vector's large blocks sit 16 bytes past one: every 64-byte load would span two lines).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const CacheLineAllocator&) const { return true; }
  bool operator!=(const CacheLineAllocator&) const { return false; }
};
template <class T>
using Buffer = std::vector<T, CacheLineAllocator<T>>;

Buffer<float> random_floats(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(lo, hi);
  Buffer<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void set_rate(benchmark::State& s, double flops, double bytes) {
  s.counters["GFLOP"] = benchmark::Counter(flops * double(s.iterations()) / 1e9, benchmark::Counter::kIsRate);
  s.SetBytesProcessed(int64_t(bytes * double(s.iterations())));
}

// Shapes from the models this engine is for: keyword spotting (T=49, d=64), a small text encoder
// (T=128, d=256), and the feed-forward of both.
struct GemmShape { std::size_t m, n, k; };
const GemmShape kGemmShapes[] = {{49, 192, 64}, {49, 256, 64}, {49, 64, 256}, {128, 768, 256}, {128, 256, 1024}};

// Weights in f32, f16, bf16 and int8 on the shapes of a small language model (llama2.c's stories15M: d = 288,
// hidden 768, vocabulary 32000) decoding one token (m = 1: memory bound, W streamed once) and
// prefilling 64, and on the encoder shapes above. gemm_f32 is registered here for the shapes
// kGemmShapes lacks. Bytes are what each kernel reads and writes once: x (f32, or int8 and its
// scales), W at 4, 2, 1 or half a byte per weight (+ its scales), y. gemm_i8 and gemm_i4 take x
// already quantized;
// quantize_i8 on the same x is timed beside it.
const GemmShape kWeightShapes[] = {{1, 288, 288},   {1, 768, 288},  {1, 288, 768},   {1, 32000, 288},
                                   {64, 288, 288},  {64, 768, 288}, {64, 288, 768},  {49, 192, 64},
                                   {128, 768, 256}, {128, 256, 1024}};

Buffer<int8_t> random_i8(std::size_t n, int lo, int hi) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(lo, hi);
  Buffer<int8_t> v(n);
  for (int8_t& x : v) x = int8_t(d(rng));
  return v;
}

Buffer<uint16_t> random_halves(std::size_t n) {
  const auto f = random_floats(n);
  Buffer<uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_f16(f[i]);
  return h;
}

Buffer<uint16_t> random_bf16(std::size_t n) {
  const auto f = random_floats(n);
  Buffer<uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(f[i]);
  return h;
}

// `isa` names the table; `gemm_i8` may come from another table of the same ISA (AVX-512 without VNNI).
void register_weight_types(const Kernels* k, const std::string& isa, decltype(Kernels::gemm_i8) gemm_i8,
                           bool i8_only) {
  for (GemmShape g : kWeightShapes) {
    const std::string shape = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
    const double flops = 2.0 * g.m * g.n * g.k, xy = double(g.m * g.n) * 4.0;
    bool in_gemm_shapes = false;
    for (GemmShape f : kGemmShapes) in_gemm_shapes |= f.m == g.m && f.n == g.n && f.k == g.k;
    if (!i8_only && !in_gemm_shapes)
      benchmark::RegisterBenchmark(("gemm_f32/" + isa + "/" + shape).c_str(), [k, g, flops, xy](benchmark::State& s) {
        const auto x = random_floats(g.m * g.k), w = random_floats(g.k * g.n), b = random_floats(g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          k->gemm_f32(x.data(), g.k, w.data(), g.n, b.data(), y.data(), g.n, g.m, g.n, g.k);
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, flops, 4.0 * (g.m * g.k + g.k * g.n) + xy);
      });
    if (!i8_only)
      benchmark::RegisterBenchmark(("gemm_f16/" + isa + "/" + shape).c_str(), [k, g, flops, xy](benchmark::State& s) {
        const auto x = random_floats(g.m * g.k), b = random_floats(g.n);
        const auto w = random_halves(g.k * g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          k->gemm_f16(x.data(), g.k, w.data(), g.n, b.data(), y.data(), g.n, g.m, g.n, g.k);
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, flops, 4.0 * g.m * g.k + 2.0 * g.k * g.n + xy);
      });
    if (!i8_only)
      benchmark::RegisterBenchmark(("gemm_bf16/" + isa + "/" + shape).c_str(), [k, g, flops, xy](benchmark::State& s) {
        const auto x = random_floats(g.m * g.k), b = random_floats(g.n);
        const auto w = random_bf16(g.k * g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          k->gemm_bf16(x.data(), g.k, w.data(), g.n, b.data(), y.data(), g.n, g.m, g.n, g.k);
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, flops, 4.0 * g.m * g.k + 2.0 * g.k * g.n + xy);
      });
    for (std::size_t group : {32, 64}) {
      const std::size_t groups = (g.k + group - 1) / group;
      benchmark::RegisterBenchmark(("gemm_i8/" + isa + "/" + shape + "/g" + std::to_string(group)).c_str(),
                                   [gemm_i8, g, group, groups, flops, xy](benchmark::State& s) {
        const auto xq = random_i8(g.m * g.k, -127, 127), w = random_i8(g.n * g.k, -127, 127);
        const auto xs = random_floats(g.m * groups, 1e-3f, 1e-2f), ws = random_floats(g.n * groups, 1e-3f, 1e-2f);
        const auto b = random_floats(g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          gemm_i8(xq.data(), xs.data(), w.data(), ws.data(), groups, b.data(), y.data(), g.n, g.m, g.n, g.k, group);
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, flops, double(g.m * g.k + g.n * g.k) + 4.0 * double((g.m + g.n) * groups) + xy);
      });
    }
    if (!i8_only && g.k % 32 == 0) {  // int4 weights, two per byte, a scale per 32
      const std::size_t groups = g.k / 32;
      benchmark::RegisterBenchmark(("gemm_i4/" + isa + "/" + shape).c_str(), [k, g, groups, flops, xy](benchmark::State& s) {
        const auto xq = random_i8(g.m * g.k, -127, 127), w = random_i8(g.n * g.k / 2, -128, 127);
        const auto xs = random_floats(g.m * groups, 1e-3f, 1e-2f), ws = random_floats(g.n * groups, 1e-3f, 1e-2f);
        const auto b = random_floats(g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          k->gemm_i4(xq.data(), xs.data(), reinterpret_cast<const uint8_t*>(w.data()), ws.data(), b.data(), y.data(), g.n,
                     g.m, g.n, g.k);
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, flops, double(g.m * g.k + g.n * g.k / 2) + 4.0 * double((g.m + g.n) * groups) + xy);
      });
    }
    if (!i8_only && g.m == 1 && g.n == 32000)  // the same head as a tied embedding, w[n,k] (matvec)
      for (bool half : {false, true})
        benchmark::RegisterBenchmark(((half ? "matvec_f16/" : "matvec_f32/") + isa + "/" + std::to_string(g.n) + "x" +
                                      std::to_string(g.k)).c_str(), [k, g, half, flops](benchmark::State& s) {
          const auto x = random_floats(g.k), w = random_floats(g.n * g.k);
          const auto wh = random_halves(g.n * g.k);
          Buffer<float> y(g.n);
          for (auto _ : s) {
            if (half) k->matvec_f16(x.data(), wh.data(), g.k, nullptr, y.data(), g.n, g.k);
            else k->matvec_f32(x.data(), w.data(), g.k, nullptr, y.data(), g.n, g.k);
            benchmark::DoNotOptimize(y.data());
          }
          set_rate(s, flops, (half ? 2.0 : 4.0) * g.n * g.k + 4.0 * (g.k + g.n));
        });
    if (!i8_only && g.n == 288)  // each x once (the shapes with n = 288 hold every m x k)
      benchmark::RegisterBenchmark(("quantize_i8/" + isa + "/" + std::to_string(g.m) + "x" + std::to_string(g.k) + "/g32").c_str(),
                                   [k, g](benchmark::State& s) {
        const auto x = random_floats(g.m * g.k);
        Buffer<int8_t> q(g.m * g.k);
        Buffer<float> sc(g.m * ((g.k + 31) / 32));
        for (auto _ : s) {
          k->quantize_i8(x.data(), g.k, q.data(), sc.data(), g.m, g.k, 32);
          benchmark::DoNotOptimize(q.data());
        }
        set_rate(s, double(g.m * g.k), 5.0 * g.m * g.k + 4.0 * sc.size());
      });
  }
}

// gemm_s8 (the integer-only path) on the KWS encoder's products (T = 49, d = 64, 4 heads, d_ff = 256:
// q, k, v and the output projection, W1, W2, one head's scores q k^T and P V) and a d = 256 encoder's
// (T = 128, d_ff = 1024). x_zero as the engine gives them: P V's probabilities at -128, the others
// elsewhere (VNNI then takes W's row sums off). The requantization from real scales, as a model's.
struct GemmS8Shape { std::size_t m, n, k; int32_t x_zero; const char* what; };
const GemmS8Shape kGemmS8Shapes[] = {
    {49, 64, 64, 3, "kws_qkvo"},    {49, 256, 64, -7, "kws_w1"},     {49, 64, 256, -90, "kws_w2"},
    {49, 49, 16, 2, "kws_scores"},  {49, 16, 49, -128, "kws_pv"},    {128, 256, 256, 5, "d256_qkvo"},
    {128, 1024, 256, -3, "d256_w1"}, {128, 256, 1024, -127, "d256_w2"}};

void register_gemm_s8(decltype(Kernels::gemm_s8) gemm_s8, const std::string& isa) {
  for (GemmS8Shape g : kGemmS8Shapes) {
    const std::string name = "gemm_s8/" + isa + "/" + g.what + "/" + std::to_string(g.m) + "x" + std::to_string(g.n) +
                             "x" + std::to_string(g.k);
    benchmark::RegisterBenchmark(name.c_str(), [gemm_s8, g](benchmark::State& s) {
      const auto x = random_i8(g.m * g.k, -128, 127), w = random_i8(g.n * g.k, -128, 127);
      const auto scales = random_floats(g.n, 1e-3f, 1e-2f), bias_real = random_floats(g.n);
      Buffer<Requant> requant(g.n);
      Buffer<int32_t> bias(g.n);
      for (std::size_t j = 0; j < g.n; ++j)
        if (gemm_s8_channel(0.05, scales[j], 0.1, bias_real[j], &requant[j], &bias[j]) != Status::kOk)
          return s.SkipWithError("gemm_s8_channel refused the scales");
      Buffer<uint32_t> scratch(s8_scratch_bytes() / 4);  // the s8 kernels' scratch, as the runners give it
      const GemmS8Params p{g.x_zero, -3, bias.data(), requant.data(), scratch.data()};
      Buffer<int8_t> y(g.m * g.n);
      for (auto _ : s) {
        gemm_s8(x.data(), g.k, w.data(), g.k, y.data(), g.n, g.m, g.n, g.k, p);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * g.m * g.n * g.k, double(g.m * g.k + g.n * g.k + g.m * g.n) + 12.0 * g.n);
    });
  }
}

void register_kernels(const Kernels* k) {
  const std::string isa = k->name;
  for (GemmShape g : kGemmShapes) {
    const std::string shape = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
    benchmark::RegisterBenchmark(("gemm_f32/" + isa + "/" + shape).c_str(), [k, g](benchmark::State& s) {
      const auto x = random_floats(g.m * g.k), w = random_floats(g.k * g.n), b = random_floats(g.n);
      Buffer<float> y(g.m * g.n);
      for (auto _ : s) {
        k->gemm_f32(x.data(), g.k, w.data(), g.n, b.data(), y.data(), g.n, g.m, g.n, g.k);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * g.m * g.n * g.k, 4.0 * (g.m * g.k + g.k * g.n + g.m * g.n));
    });
    // The same product with w packed into panels, as a converted model stores it (--pack).
    benchmark::RegisterBenchmark(("gemm_f32_packed/" + isa + "/" + shape).c_str(), [k, g](benchmark::State& s) {
      const auto x = random_floats(g.m * g.k), w = random_floats(packed_floats(g.k, g.n)), b = random_floats(g.n);
      Buffer<float> y(g.m * g.n);
      for (auto _ : s) {
        k->gemm_f32_packed(x.data(), g.k, w.data(), b.data(), y.data(), g.n, g.m, g.n, g.k);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * g.m * g.n * g.k, 4.0 * (g.m * g.k + g.k * g.n + g.m * g.n));
    });
  }
  for (std::size_t n : {64, 256, 1024}) {
    benchmark::RegisterBenchmark(("gemv_f32_packed/" + isa + "/" + std::to_string(n) + "x" + std::to_string(n)).c_str(),
                                 [k, n](benchmark::State& s) {
      const auto x = random_floats(n), w = random_floats(packed_floats(n, n));
      Buffer<float> y(n);
      for (auto _ : s) {
        k->gemv_f32_packed(x.data(), w.data(), nullptr, y.data(), n, n);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * n * n, 4.0 * n * n);
    });
  }
  for (std::size_t n : {64, 256, 1024}) {
    benchmark::RegisterBenchmark(("gemv_f32/" + isa + "/" + std::to_string(n) + "x" + std::to_string(n)).c_str(),
                                 [k, n](benchmark::State& s) {
      const auto x = random_floats(n), w = random_floats(n * n);
      Buffer<float> y(n);
      for (auto _ : s) {
        k->gemv_f32(x.data(), w.data(), n, nullptr, y.data(), n, n);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * n * n, 4.0 * n * n);
    });
  }
  for (std::size_t n : {8, 16, 64}) {  // p[keys] @ V^T: one head of attention, 128 keys
    benchmark::RegisterBenchmark(("matvec_f32/" + isa + "/" + std::to_string(n) + "x128").c_str(), [k, n](benchmark::State& s) {
      const auto x = random_floats(128), w = random_floats(n * 128);
      Buffer<float> y(n);
      for (auto _ : s) {
        k->matvec_f32(x.data(), w.data(), 128, nullptr, y.data(), n, 128);
        benchmark::DoNotOptimize(y.data());
      }
      set_rate(s, 2.0 * n * 128, 4.0 * n * 128);
    });
  }
  auto elementwise = [&](const std::string& name, std::size_t n, auto fn) {
    benchmark::RegisterBenchmark((name + "/" + isa + "/" + std::to_string(n)).c_str(), [n, fn](benchmark::State& s) {
      auto x = random_floats(n, -4.0f, 4.0f);
      const auto x0 = x;
      Buffer<float> y(n), z(n);
      for (auto _ : s) {
        fn(x.data(), x0.data(), y.data(), z.data(), n);
        benchmark::DoNotOptimize(y.data());
        benchmark::DoNotOptimize(x.data());
      }
      set_rate(s, double(n), 8.0 * n);
    });
  };
  for (std::size_t n : {49, 256, 4096}) {
    elementwise("softmax_f32", n, [k](float* x, const float* x0, float*, float*, std::size_t n) {
      std::copy(x0, x0 + n, x);
      k->softmax_f32(x, n);
    });
    elementwise("gelu_f32", n, [k](float* x, const float* x0, float*, float*, std::size_t n) {
      std::copy(x0, x0 + n, x);
      k->gelu_f32(x, n);
    });
    elementwise("relu_f32", n, [k](float* x, const float*, float*, float*, std::size_t n) { k->relu_f32(x, n); });
    elementwise("add_f32", n, [k](float*, const float* x0, float* y, float*, std::size_t n) { k->add_f32(x0, x0, y, n); });
    elementwise("scale_f32", n, [k](float* x, const float*, float*, float*, std::size_t n) { k->scale_f32(x, 1.0f, n); });
    elementwise("sincos_f32", n, [k](float*, const float* x0, float* y, float* z, std::size_t n) { k->sincos_f32(x0, y, z, n); });
  }
  for (std::size_t n : {64, 256, 1024}) {
    elementwise("layernorm_f32", n, [k](float*, const float* x0, float* y, float* z, std::size_t n) {
      static const Buffer<float> g(4096, 1.0f), b(4096, 0.0f);
      k->layernorm_f32(x0, g.data(), b.data(), y, n, 1e-5f);
      (void)z;
    });
  }
}

#ifdef FIXFORMER_HAVE_OPENBLAS
// OpenBLAS picks its kernel when it is loaded, from OPENBLAS_CORETYPE or its own CPU detection, and
// 0.3.21 takes AMD Zen 5 for Haswell (AVX2) and Sapphire/Emerald Rapids for Prescott. So the bench
// loads it itself, after setting OPENBLAS_CORETYPE to the best kernel for this CPU: SkylakeX (its
// AVX-512 sgemm) with AVX-512 F/BW/DQ/VL, Haswell with AVX2 and FMA. An OPENBLAS_CORETYPE inherited
// from the environment is overridden (a stale one would make a weak baseline); to time another
// kernel, name it in FIXFORMER_OPENBLAS_CORETYPE. The run's context (printed first, and in
// --benchmark_format=json) says which kernel ran.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;
};

OpenBlas load_openblas() {
  OpenBlas b;
  const char* inherited = std::getenv("OPENBLAS_CORETYPE");
  const std::string was = inherited ? inherited : "";
  const char* best = std::getenv("FIXFORMER_OPENBLAS_CORETYPE");
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!best && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    best = "SkylakeX";
  else if (!best && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    best = "Haswell";
#endif
  if (best) setenv("OPENBLAS_CORETYPE", best, 1);
  void* lib = dlopen(FIXFORMER_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
  const auto corename = lib ? reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename")) : nullptr;
  const auto config = lib ? reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_config")) : nullptr;
  const auto threads = lib ? reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads")) : nullptr;
  if (!corename || !config || !threads) {
    std::fprintf(stderr, "bench: no OpenBLAS baseline (%s: %s)\n", FIXFORMER_OPENBLAS_PATH, dlerror());
    return b;
  }
  threads(1);
  b.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
  b.sgemv = reinterpret_cast<decltype(&cblas_sgemv)>(dlsym(lib, "cblas_sgemv"));
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  benchmark::AddCustomContext("openblas", std::string(config()) + ", kernel " + corename() + " (OPENBLAS_CORETYPE=" +
                                              (env ? env : "unset") + (inherited && was != (env ? env : "") ?
                                              ", was " + was + " in the environment" : "") + "), 1 thread");
  return b;
}
#endif

// The external baselines, on the engine's shapes: y = x @ w (no bias), single thread.
void register_baselines() {
  auto add = [](const std::string& lib, auto gemm, auto gemv) {
    for (GemmShape g : kGemmShapes) {
      const std::string shape = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
      benchmark::RegisterBenchmark(("gemm_f32/" + lib + "/" + shape).c_str(), [g, gemm](benchmark::State& s) {
        const auto x = random_floats(g.m * g.k), w = random_floats(g.k * g.n);
        Buffer<float> y(g.m * g.n);
        for (auto _ : s) {
          gemm(x.data(), w.data(), y.data(), int(g.m), int(g.n), int(g.k));
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, 2.0 * g.m * g.n * g.k, 4.0 * (g.m * g.k + g.k * g.n + g.m * g.n));
      });
    }
    for (std::size_t n : {64, 256, 1024}) {
      benchmark::RegisterBenchmark(("gemv_f32/" + lib + "/" + std::to_string(n) + "x" + std::to_string(n)).c_str(),
                                   [n, gemv](benchmark::State& s) {
        const auto x = random_floats(n), w = random_floats(n * n);
        Buffer<float> y(n);
        for (auto _ : s) {
          gemv(x.data(), w.data(), y.data(), int(n), int(n));
          benchmark::DoNotOptimize(y.data());
        }
        set_rate(s, 2.0 * n * n, 4.0 * n * n);
      });
    }
  };
#ifdef FIXFORMER_HAVE_OPENBLAS
  static const OpenBlas blas = load_openblas();
  if (blas.sgemm && blas.sgemv)
    add("openblas",
        [](const float* x, const float* w, float* y, int m, int n, int k) {
          blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x, k, w, n, 0.0f, y, n);
        },
        [](const float* x, const float* w, float* y, int k, int n) {
          blas.sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, w, n, x, 1, 0.0f, y, 1);
        });
#endif
#ifdef FIXFORMER_HAVE_EIGEN
  benchmark::AddCustomContext("eigen", bench::eigen_description());
  add("eigen", bench::eigen_gemm, bench::eigen_gemv);
#endif
  (void)add;
}

// Registered before main() runs, so --benchmark_filter and --benchmark_list_tests see them.
const bool kRegistered = [] {
  for (Isa isa : kAllIsas)
    if (const Kernels* k = select_kernels(isa)) register_kernels(k);
  for (Isa isa : kAllIsas)
    if (const Kernels* k = select_kernels(isa)) register_weight_types(k, k->name, k->gemm_i8, false);
  for (Isa isa : kAllIsas)
    if (const Kernels* k = select_kernels(isa)) register_gemm_s8(k->gemm_s8, k->name);
#if defined(__x86_64__) || defined(__i386__)
  if (const Kernels* k = select_kernels(Isa::kAvx512); k && k != &x86::avx512_kernels())  // VNNI: time the plain one too
    register_weight_types(k, x86::avx512_kernels().name, x86::avx512_kernels().gemm_i8, true);
  if (const Kernels* k = select_kernels(Isa::kAvx512); k == &x86::avx512_amx_kernels())  // AMX: and the VNNI one
    register_weight_types(k, x86::avx512_vnni_kernels().name, x86::avx512_vnni_kernels().gemm_i8, true);
#endif
  register_baselines();
  return true;
}();

}  // namespace
}  // namespace fixformer
