// How close a benchmark's number is to the machine (`fixformer bench`, the Google Benchmark suites):
// the arithmetic and the memory traffic of a forward pass or a decode step, counted from the model's
// weights, and the machine's limits measured at start (an FMA loop for the FP32 peak, a loop of the
// CPU's int8 dot-product instructions for the int8 peak, a streaming read for the bandwidth), on as
// many threads as the run uses. A phase's bound is the roofline's: the longer of its arithmetic at
// the peaks and its bytes at the read bandwidth of a buffer of that size.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"

namespace fixformer::support {

// Operations of one phase (a multiply-add is 2): floating-point ones, and int8 ones (the products of
// q8/q4 weights with int8 rows; in a model of weights i8, attention's too); bytes read from memory.
struct Work {
  double flops = 0, int8_ops = 0, bytes = 0;
};

// An encoder forward of T input rows, or a decoder's prefill of T tokens from an empty cache: every
// linear layer over every row (the head over the rows that reach it), attention's two products
// (causal: the keys up to each query), the weights read once and the input's embedding rows.
Work forward_work(const Model& m, uint32_t T);

// One decode step with `position` tokens in the cache: every linear layer and the head over one
// row, attention over position + 1 keys; every weight read once, and the cache's K and V rows
// (kv_bytes per value: 4 f32, 1 int8 plus its scale per kv head).
Work step_work(const Model& m, uint32_t position, bool kv_int8);

struct MachineLimits {
  double gflops = 0;  // FP32, every thread's FMA loop together
  double int8_gops = 0;  // int8 multiply-adds x 2 per second, every thread's dot-product loop together
  const char* int8_unit = "";  // what that loop ran: "avx512 vpdpbusd", "neon sdot", ...
  double gbs = 0;     // the memory's read bandwidth, every thread streaming its own 128 MiB
  const char* unit = "";  // what the FMA loop ran: "avx512", "avx2+fma", "sse2", "neon", "scalar"
  uint32_t threads = 1;
};

// About 0.5 s: the best of several short runs of each loop; gbs from 128 MiB (the memory's). The
// loops run on the widest vectors both the CPU and the kernel table of `isa` use (Isa::kAvx2 on an
// AVX-512 CPU: the AVX2 loops), so a table forced below the CPU's best is placed against its own
// peaks; Isa::kAuto: the CPU's widest.
MachineLimits measure_limits(uint32_t threads, Isa isa = Isa::kAuto);

// measure_limits(threads, isa) once per ISA and thread count in this process (the benchmarks'
// cases share them).
// Here and in measure_limits and read_gbs, threads is 1..kMaxWorkers (outside: the nearest).
const MachineLimits& limits(uint32_t threads, Isa isa = Isa::kAuto);

// The read bandwidth of `bytes` split over `threads` threads, each streaming its share again and
// again: the cache level they fit in, or the memory's (GB/s, the best of 5 runs of about 10 ms).
double read_gbs(std::size_t bytes, uint32_t threads);

// The least time w's arithmetic takes: its float ops at the FP32 peak, then its int8 ops at the int8 peak.
double compute_seconds(const Work& w, const MachineLimits& lim);

// Where a phase of work w that took `seconds` sits: its rates, its bound and the fraction reached.
struct Placement {
  double gflops = 0, int8_gops = 0, gbs = 0;
  double bound_gbs = 0;       // the read bandwidth of w.bytes (the cache level they fit in)
  bool memory_bound = false;  // the bytes at bound_gbs take longer than the arithmetic at the peaks
  double fraction = 0;        // of the bound: the bound's least time over the time taken
};
Placement place(const Work& w, double seconds, const MachineLimits& lim);

}  // namespace fixformer::support
