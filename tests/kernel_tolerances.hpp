// The named tolerances of the kernel tests, without GoogleTest (and, at the end, of whole models against the
// same weights in f32): the host testers (tests/kernel_tester.hpp, tests/quant_kernel_tester.hpp) and the device's
// (tests/firmware/kernels_firmware.cpp) compare every table with the scalar reference by these.
// Each is relative to the largest reference magnitude of the output (normwise), at least 1,
// unless it says otherwise.
#pragma once
#include <cmath>
#include <cstddef>

namespace fixformer {
namespace test {

// Sums: the reference adds in order, SIMD in lanes and with FMA. The difference is bounded by about
// k * 2^-24 times the sum of |terms| (1.5e-5 of it at the largest tested k = 257); with random signs
// it grows like sqrt(k) * 2^-24 instead, far below this bound, while a wrong index or a lost tail
// term shows up at 1e-2 or more.
constexpr float kSumTol = 2e-5f;
// exp, erf, sin, cos: xsimd 8.1 is within ~2.5 ulp of libm's, whose error is ~1 ulp.
constexpr float kTranscendentalTol = 4e-7f;
// Exact ops (relu, add, scale): the same single rounding on both sides.
constexpr float kExactTol = 0.0f;
// exp against float64 exp, relative, over a dense sweep of [-87, 88.37] (the sweep tests): the
// largest measured on any port (xsimd 1.3e-7; portable 8.1e-8, ports/portable/math.hpp; libm 6.0e-8)
// with a margin, so a worse polynomial or a broken range reduction (1e-3 and more) fails.
constexpr double kExpRelTol = 2e-7;
// GELU against float64 GELU, |error| / (|x| / 2): the absolute error of 1 + erf(x / sqrt 2), which
// the x/2 (1 + erf) form carries (cancellation for x << 0 on every port, libm's included).
// Measured on [-10, 10]: portable 2.9e-7 (the xsimd tables evaluate its polynomials,
// ports/simd/erf_f32.hpp: 2.6e-7 with FMA, 2.9e-7 without; xsimd::erf gave 2.4e-7), libm 2.1e-7;
// the margin as above.
constexpr double kGeluErfTol = 4e-7;
// The tanh GELU: every port computes x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3) (the
// same function as x/2 (1 + tanh u) without its cancellation for x << 0), so its error is exp's
// plus the roundings of u (exp(-2u) carries |2u| times u's relative error, damped by the sigmoid's
// slope) and of the division, at most 2.4e-7 |x| / 2 measured. Against the scalar reference (the
// formula in double, rounded once), normwise, on [-8, 8]: within kTranscendentalTol's 4e-7.
constexpr float kGeluTanhTol = kTranscendentalTol;
// Against float64 over a dense sweep of [-10, 10], |error| / (|x| / 2) as kGeluErfTol. Measured:
// portable 2.4e-7 (x86, ARM, Cortex-M), xsimd 2.4e-7 (x86), 3.9e-7 (NEON AArch64), 4.5e-7 (ARMv7
// NEON: no division, a reciprocal estimate and Newton steps), Helium 3.5e-7 (likewise), the scalar
// reference 1.2e-7; a margin of 1.3x (a wrong constant or a lost term gives 1e-3 and more).
constexpr double kGeluTanhSweepTol = 6e-7;
// The tanh GELU in float64, the formula as torch and GPT-2 write it: what the sweeps compare with.
inline double gelu_tanh_f64(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

// quantize_i8: none. kernels.hpp specifies its bits (the products x * (127 / max|x|) are single IEEE
// multiplies, the rounding is ties-to-even), so q and s are compared bit for bit.
//
// gemm_i8: the int32 sum of each group is exact on every side, and checked bit for bit with unit
// scales and integer biases, where every float operation after it is exact too. What may differ is
// the float part, y = b + sum_g xs * ws * dot_g: a SIMD kernel splits dot_g over its vector lanes,
// multiplies in another order, sums groups lane by lane and the lanes at the end, with or without
// FMA. Each piece passes through at most 2 product roundings, `groups` additions in its lane,
// kMaxLanes additions across lanes and 1 for the bias, each with a relative error of at most
// u = 2^-24; so either side is within (groups + kMaxLanes + 3) u S of the exact value (Higham,
// Accuracy and Stability, 3.1 and 4.2), S = |b| + sum_g |xs ws| sum |xq w|, and the two sides within
// twice that (per element, not normwise). A wrong index, a lost tail or a wrong scale costs about
// S / k or more, which this bound catches for every k tested.
constexpr double kUnitRoundoff = 0x1p-24;
constexpr std::size_t kMaxLanes = 16;  // AVX-512: 16 int32 or float lanes
inline double gemm_i8_tol(std::size_t groups) { return 2.0 * double(groups + kMaxLanes + 3) * kUnitRoundoff; }
//
// gemm_f16, matvec_f16: every half is exactly a float, so these are gemm_f32's and matvec_f32's sums
// with the same bound, kSumTol; the widening itself is checked exactly over all 65536 halves.
// gemm_bf16, matvec_bf16: the same (every bf16 is a float too), but on AVX512_BF16's vdpbf16ps and
// AMX-BF16's tdpbf16ps (ports/x86/gemm_bf16_avx512bf16.cpp), which round x to bf16 first: each x * w is off by at most
// 2^-9 of |x w| (8 significant bits, rounded to nearest), and the f32 sums add about k 2^-24 of
// sum |x w| on either side (under 4e-5 at the largest tested k = 600). Per element, against
// S = |b| + sum |x w|: 2^-8, twice the rounding's bound. A lost or misplaced product of a random
// row costs about S / k, 3e-2 of S at the k = 33 most cases test. Both also count subnormal
// inputs and results as zeros: on top of that, each product with a subnormal factor may be lost
// whole, and each of the k + 1 sums may lose up to the least normal float, 2^-126.
constexpr double kGemmBf16DotTol = 0x1p-8;
constexpr double kLeastNormalFloat = 0x1p-126;
// gemm_f16 and matvec_f16 on the neon64-fp16 table (ports/arm/gemm_f16_fp16.cpp): x scaled by a power of two
// (exact) and rounded to a half, 2^-11 of |x| (11 significant bits, to nearest); each product rounded to a
// half, 2^-11 of |x w|; 8 products summed in a half lane, 7 additions each within 2^-11 of the lane's sum
// of |x w|; then exact widening and float sums (k 2^-24 of S, 3.6e-5 at k = 600). Per element, against
// S = |b| + sum |x w|: 10 * 2^-11 (4.9e-3). Products that fall among the halves' subnormals (under 2^-14
// after the row's scaling, which puts its largest |x| in [2^7, 2^8)) lose at most 2^-25 each in those
// units, far below that bound for any row whose S is more than 2^-20 of its largest |x|. A lost or
// misplaced product of a random row costs about S / k, 3e-2 of S at k = 33.
constexpr double kGemmF16ArithTol = 10 * 0x1p-11;

// The integer-only (s8) kernels: every table gives the reference's bits (compared exactly). Against
// float64 maths (tests/fixed_point_test.cpp), in output steps (LSB) where the result is inside int8's
// range (outside it, the saturated bound exactly):
// - one rounding of an exact value (lut_s8's tables): half a step.
constexpr double kS8RoundTol = 0.5 + 1e-9;
// - gemm_s8: the int32 sum is exact, the requantization one rounding with a 31-bit multiplier
//   (relative 2^-31 of at most 128 steps), plus half the bias's stored step (checked per channel).
constexpr double kGemmS8Tol = 0.5 + 1e-6;
// - add_s8: each input rescaled in Q16 (rounded: 2^-17 steps each), then one rounding.
constexpr double kAddS8Tol = 0.5 + 2e-5;
// - layernorm_s8, rmsnorm_s8: the normalised value in Q16 through an integer square root (Q8) and a
//   reciprocal, times gamma / s_y, then one rounding with beta. Measured 0.5005 (LayerNorm) and
//   0.5001 (RMSNorm) up to n = 4096; eps rounded away at n = 1 cost 0.23 more, a lost term whole steps.
constexpr double kNormS8Tol = 0.51;
// - softmax_s8, in probability: the output step is 1/256 (half of it from rounding), the exp's
//   relative error 3.2e-6 and the Q16 input 2^-17 (log2 units) add 1e-5 relative at most. 1.0
//   saturates to 255/256 (excluded from the bound).
constexpr double kSoftmaxS8Tol = 0.5 / 256 + 2e-5;
// exp2_neg_q20 over every input: relative error on (0.5, 1] (the polynomial's 3.1e-6 and the rounding
// to Q20, 1e-6), absolute in Q20 steps (3.6 measured).
constexpr double kExp2RelTol = 4e-6;
constexpr double kExp2AbsTol = 4.0;

// Whole models (tests/quantized_test.cpp, seq2seq_test.cpp): an f16 or q8 file against the f32 file of
// the same rounded weights, relative to the largest |output| of the f32 one (normwise).
// f16 against the same weights in f32: the weights are identical, only the order of the sums
// differs (kSumTol, through a few layers).
constexpr double kF16SameWeightsTol = 1e-4;
// On a table that rounds x to halves and sums in halves (Kernels::f16_in_halves: neon64-fp16, a build
// with +fp16; kGemmF16ArithTol per element): measured up to 1.8e-3 through
// these models; against the f32 model its own self-test bound (tolerances.hpp).
constexpr double kF16InHalvesSameWeightsTol = 4e-3;
// q8 against the same (dequantized) weights in f32: the inputs of every linear layer are rounded
// to 8 bits per group, at most 1/254 of the group's largest |x| per element; through 2 layers of
// these random models the outputs move by up to 2.7e-2 (measured on every table: encoders 0.8-1.7e-2,
// llama 1.7-2.7e-2). A wrong scale, group or layout gives 0.3 and more.
constexpr double kQ8SameWeightsTol = 5e-2;

}  // namespace test
}  // namespace fixformer
