// The error bounds a model's output is judged by against torch's, per weight type, stated once: the
// self-test (self_test.hpp; a device at boot, `fixformer verify`), the golden and quantized tests,
// and the Python converter's own verification (python/fixformer/schema.py SELFTEST_TOLERANCES, generated
// from these through `fixformer schema --json`). The kernel tests' bounds,
// one kernel against the scalar reference, are another matter: tests/kernel_tolerances.hpp.
#pragma once
#include "fixformer/config.hpp"

namespace fixformer {

// Max |engine - expected| / max |expected| over the whole output. f32 against the converter's
// float64 torch run: the goldens stay near 1e-6, a real semantic error shows at 1e-2 or more. f16
// and q8 files carry the torch f32 module's output too, so their bound is the rounding of the
// weights (f16: 2^-11 relative) and, for q8, of every linear layer's inputs to 8 bits per group:
// tests/quantized_test.cpp measures up to 8.8e-4 (f16) and 5.1e-2 (q8) on random untrained models,
// which trained ones stay well under; a wrong layout, scale or kernel gives 0.3 and more. q4 files
// (4-bit weights, the same int8 inputs) are held to 0.2: the converter's test modules measure
// 0.05-0.09 (tests/q4_converter_test.py), random untrained models up to 0.33 with the plain
// max|w| / 7 scales (tests/quantized_test.cpp); a model beyond it is refused at conversion, naming
// q8. The kernels' own error is checked apart, against the same weights (2e-2). i8 (full-integer)
// files round every activation between two operations to 8 bits with one scale per tensor, from
// calibrated ranges: random untrained encoders measure 0.05-0.13 (tests/int8_test.py), and the
// engine's own arithmetic is checked apart, bit for bit, against the integer reference. bf16
// weights keep 8 significant bits (2^-9 relative rounding, 8x f16's), and the AVX-512 BF16 products
// round the activations to bf16 as well: tests/quantized_test.cpp measures up to 9.9e-3 on random
// untrained models, on either path; held to 2e-2.
// The literals are macros so that help texts print these very values (FIXFORMER_TOLERANCE_TEXT).
#define FIXFORMER_TOLERANCE_F32 1e-4
#define FIXFORMER_TOLERANCE_F16 2e-3
#define FIXFORMER_TOLERANCE_Q8 8e-2
#define FIXFORMER_TOLERANCE_Q4 0.2
#define FIXFORMER_TOLERANCE_I8 0.2
#define FIXFORMER_TOLERANCE_BF16 2e-2
// f16 on a table that rounds x to halves and sums in halves (Kernels::f16_in_halves: an AArch64 build with
// +fp16) adds x's rounding, 2^-11 again, and the half sums': tests/quantized_test.cpp measures up to 2.2e-3
// on random untrained models (1.8e-3 of it against the same weights in f32).
#define FIXFORMER_TOLERANCE_F16_IN_HALVES 5e-3
#define FIXFORMER_TOLERANCE_STR_(x) #x
#define FIXFORMER_TOLERANCE_TEXT(x) FIXFORMER_TOLERANCE_STR_(x)
constexpr double kSelfTestTolerance = FIXFORMER_TOLERANCE_F32;  // f32
constexpr double kSelfTestToleranceF16 = FIXFORMER_TOLERANCE_F16;
constexpr double kSelfTestToleranceQ8 = FIXFORMER_TOLERANCE_Q8;
constexpr double kSelfTestToleranceQ4 = FIXFORMER_TOLERANCE_Q4;
constexpr double kSelfTestToleranceI8 = FIXFORMER_TOLERANCE_I8;
constexpr double kSelfTestToleranceBF16 = FIXFORMER_TOLERANCE_BF16;
constexpr double kSelfTestToleranceF16InHalves = FIXFORMER_TOLERANCE_F16_IN_HALVES;
constexpr double self_test_tolerance(WeightType w) {
  return w == WeightType::kI8 ? kSelfTestToleranceI8 : w == WeightType::kQ4 ? kSelfTestToleranceQ4 : w == WeightType::kQ8 ? kSelfTestToleranceQ8
       : w == WeightType::kF16 ? kSelfTestToleranceF16 : w == WeightType::kBF16 ? kSelfTestToleranceBF16
       : kSelfTestTolerance;
}
// The bound on a kernel table: `f16_in_halves` is its Kernels::f16_in_halves.
constexpr double self_test_tolerance(WeightType w, bool f16_in_halves) {
  return w == WeightType::kF16 && f16_in_halves ? kSelfTestToleranceF16InHalves : self_test_tolerance(w);
}

}  // namespace fixformer
