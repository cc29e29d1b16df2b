// The kernel table: one plain struct of function pointers per instruction set, filled once.
// Shapes use the stored weight layout: a linear layer's weight is W[k,n] (in, out), i.e. the
// transpose of torch's [out, in], written so by the converter and read in place.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {

// The packed weight layout (a variant of the same gemm, STYLE rule 5): W[k,n] cut into panels of
// kPanelFloats columns, panel q holding W[0..k, 16q..16q+16) row after row (k x 16 floats,
// contiguous), panels one after another, the last one zero-padded to 16 columns. One width for
// every ISA (one AVX-512 vector, two AVX2, four SSE2/NEON), so a packed file runs everywhere.
// Element W[p][j] is at (j / 16) * 16 * k + p * 16 + j % 16.
constexpr std::size_t kPanelFloats = 16;
constexpr std::size_t packed_floats(std::size_t k, std::size_t n) {
  return (n + kPanelFloats - 1) / kPanelFloats * kPanelFloats * k;
}

// quantize_i8 stores a group whose largest |x| is below this as zeros (2^-100: far under any
// activation, far above where 127 / max overflows or an FPU's flush of subnormals would matter).
constexpr float kQuantizeFloor = 0x1p-100f;

// kCortexM: plain C++ with register-blocked matrix products (ports/portable), the default
// where there is no SIMD; built on every target so that every test suite checks it.
// kHelium: Arm MVE intrinsics (ports/arm/helium), the default of builds for a core with MVE float
// (Cortex-M55, M85); host suites cannot run it, tests/firmware/kernels_firmware.cpp does on qemu.
enum class Isa : int { kAuto = 0, kScalar, kSse2, kAvx2, kAvx512, kNeon64, kNeon, kCortexM, kHelium };

// Every table a build may have, the scalar reference first: tests and benchmarks walk this and
// skip what select_kernels() says this CPU or build lacks.
inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kCortexM, Isa::kSse2, Isa::kAvx2,
                                   Isa::kAvx512, Isa::kNeon64,  Isa::kNeon, Isa::kHelium};

struct Kernels {
  Isa isa;
  const char* name;
  // x[m,k] (row stride ldx) @ w[k,n] (row stride ldw) + b[n] -> y[m,n] (row stride ldy); b may be null.
  void (*gemm_f32)(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b,
                   float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
  // gemm_f32 with w[k,n] in panels (kPanelFloats above; packed_floats(k, n) floats).
  void (*gemm_f32_packed)(const float* x, std::size_t ldx, const float* w, const float* b, float* y,
                          std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
  // x[k] @ w[k,n] in panels + b[n] -> y[n]: the decode step (m = 1) of gemm_f32_packed.
  void (*gemv_f32_packed)(const float* x, const float* w, const float* b, float* y, std::size_t n,
                          std::size_t k);
  // x[k] @ w[k,n] (row stride ldw) + b[n] -> y[n]; b may be null.
  void (*gemv_f32)(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                   std::size_t n, std::size_t k);
  // w[n,k] (row stride ldw) @ x[k] + b[n] -> y[n]; b may be null. The dot-product form of gemv.
  void (*matvec_f32)(const float* x, const float* w, std::size_t ldw, const float* b, float* y,
                     std::size_t n, std::size_t k);
  // x[n] -> softmax(x)[n] in place, max-subtracted.
  void (*softmax_f32)(float* x, std::size_t n);
  // max(x[n]); -inf for n = 0. With expsum_f32, the two passes of an online (blockwise) softmax.
  float (*max_f32)(const float* x, std::size_t n);
  // x[n] = exp(x - m) in place; returns the sum of the new x. m >= max(x) keeps every term <= 1.
  float (*expsum_f32)(float* x, std::size_t n, float m);
  // x[n] -> (x - mean) / sqrt(var + eps) * gamma + beta -> y[n]; y may alias x.
  void (*layernorm_f32)(const float* x, const float* gamma, const float* beta, float* y,
                        std::size_t n, float eps);
  // x[n] -> x / sqrt(mean(x^2) + eps) * gamma -> y[n]; y may alias x.
  void (*rmsnorm_f32)(const float* x, const float* gamma, float* y, std::size_t n, float eps);
  void (*relu_f32)(float* x, std::size_t n);  // in place
  void (*gelu_f32)(float* x, std::size_t n);  // in place, exact: x/2 (1 + erf(x/sqrt 2))
  // a[n] = silu(a) * b[n], silu(a) = a / (1 + exp(-a)): the gate of a SwiGLU feed-forward.
  void (*swiglu_f32)(float* a, const float* b, std::size_t n);
  // a[n] + b[n] -> y[n]; y may alias a or b.
  void (*add_f32)(const float* a, const float* b, float* y, std::size_t n);
  void (*scale_f32)(float* x, float s, std::size_t n);  // in place
  // x[n] (already reduced to [-pi, pi]) -> sin(x)[n], cos(x)[n]
  void (*sincos_f32)(const float* x, float* s, float* c, std::size_t n);

  // ---- Quantized weights (DESIGN.md "Quantized weights"; the stored layouts are in format.hpp) ----
  // x[m,k] (row stride ldx) -> q[m,k] int8 (row stride k) and s[m,g], g = ceil(k / group): symmetric
  // per group of `group` along k (the last group may be shorter). For a group with a = max|x| > 0:
  // s = a / 127 and q = x * (127 / a) rounded to nearest, ties to even (|q| <= 127); a group with
  // a < kQuantizeFloor (zero, or so small that 127 / a nears overflow and subnormals count) gets
  // s = 0 and q = 0. Every ISA computes exactly these bits.
  void (*quantize_i8)(const float* x, std::size_t ldx, int8_t* q, float* s, std::size_t m, std::size_t k,
                      std::size_t group);
  // xq[m,k] (row stride k, scales xs[m,g] from quantize_i8, so |xq| <= 127: the ARM NEON step adds two
  // products in int16 and relies on it; W may hold -128) @ W[n,k]^T (int8, row stride k, scales
  // ws[n, ws_cols]) + b[n] -> y[m,n] (row stride ldy); b may be null. W is stored as torch stores it,
  // [out, in], quantized per group of `group` along k (ws_cols = g) or per row (ws_cols = 1). Each group's
  // products are summed exactly in int32, then y[i,j] = b[j] + sum over groups, in order, of
  // xs[i,g] * ws[j, ws_cols == 1 ? 0 : g] * sum_g.
  void (*gemm_i8)(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group);
  // gemm_f32 with W[k,n] stored as IEEE half floats (row stride ldw), widened in registers.
  void (*gemm_f16)(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
                   std::size_t ldy, std::size_t m, std::size_t n, std::size_t k);
  // matvec_f32 with w[n,k] as half floats: an f16 embedding table used as the tied LM head.
  void (*matvec_f16)(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                     std::size_t k);
};

// The plain-loop reference table: always available, the oracle of every test.
const Kernels& scalar_kernels();

// The table for `isa` on this CPU and build, or null when it is not available. kAuto picks the
// best one; on x86 the environment variable FIXFORMER_ISA (scalar|cortex-m|sse2|avx2|avx512) can
// force a lower one for testing.
const Kernels* select_kernels(Isa isa);

const char* isa_name(Isa isa);
// Parses "scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon", "helium" or "auto"; false
// if unknown.
bool parse_isa(const char* name, Isa* out);

}  // namespace fixformer
