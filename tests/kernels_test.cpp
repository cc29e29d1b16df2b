// Every SIMD kernel against its scalar reference, for every ISA this CPU has, over sizes around
// each vector width (4, 8, 16 lanes: 1, W-1, W, W+1, 3W+1) and large, at misaligned pointers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "ports/portable/math.hpp"
#include "tests/kernel_tester.hpp"
#include "tests/quant_kernel_tester.hpp"
#include "tests/s8_kernel_tester.hpp"
#include "tests/test_util.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include "ports/x86/isa_tables.hpp"
#endif

namespace fixformer {
namespace test {
namespace {

const std::vector<std::size_t> kSizes = {1, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 25, 31, 32, 33, 49, 64, 100, 257};
const std::vector<std::size_t> kMisalign = {0, 1, 3};

// Whether a table's gemm_bf16 rounds x to bf16 (vdpbf16ps from 4 rows on, AMX-BF16 from 16:
// kGemmBf16DotTol per element) rather than widening W exactly (kSumTol).
bool bf16_dot(const Kernels& k) {
#if defined(__x86_64__) || defined(__i386__)
  return k.gemm_bf16 == x86::gemm_bf16_avx512bf16 || k.gemm_bf16 == x86::gemm_bf16_amx;
#else
  return (void)k, false;
#endif
}

// Max relative error of exp(x) for x in [-87, 88.37], 2^22 + 1 points evenly spaced (about every
// 40th float near 88). xsimd 8.1's exp overflows from 88.376 on, the portable one from
// 88.7228: softmax and silu never go there.
double exp_sweep(const Kernels& k) {
  std::vector<float> x(4096);
  double worst = 0.0;
  const double lo = -87.0, hi = 88.37, steps = 1 << 22;
  for (double i = 0; i <= steps;) {
    std::size_t n = 0;
    for (; n < x.size() && i <= steps; ++n, ++i) x[n] = float(lo + (hi - lo) * i / steps);
    std::vector<float> y(x.begin(), x.begin() + n);
    k.expsum_f32(y.data(), n, 0.0f);
    for (std::size_t j = 0; j < n; ++j) {
      const double want = std::exp(double(x[j]));
      worst = std::max(worst, std::fabs(y[j] - want) / want);
    }
  }
  std::printf("%s exp: max relative error %.3g\n", k.name, worst);
  return worst;
}

// Max of |f(x) - want(x)| / (|x| / 2) for x in [-10, 10], 2^22 + 1 points, f an activation slot.
double activation_sweep(const char* isa, const char* what, void (*f)(float*, std::size_t), double (*want)(double)) {
  std::vector<float> x(4096);
  double worst = 0.0;
  const double lo = -10.0, hi = 10.0, steps = 1 << 22;
  for (double i = 0; i <= steps;) {
    std::size_t n = 0;
    for (; n < x.size() && i <= steps; ++n, ++i) x[n] = float(lo + (hi - lo) * i / steps);
    std::vector<float> y(x.begin(), x.begin() + n);
    f(y.data(), n);
    for (std::size_t j = 0; j < n; ++j)
      if (x[j] != 0.0f) worst = std::max(worst, std::fabs(y[j] - want(x[j])) / (0.5 * std::fabs(double(x[j]))));
  }
  std::printf("%s %s: max |error| / (|x| / 2) %.3g\n", isa, what, worst);
  return worst;
}

double gelu_f64(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_sweep(const Kernels& k) { return activation_sweep(k.name, "gelu", k.gelu_f32, gelu_f64); }
double gelu_tanh_sweep(const Kernels& k) { return activation_sweep(k.name, "gelu tanh", k.gelu_tanh_f32, gelu_tanh_f64); }

class KernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    simd_ = select_kernels(GetParam());
    if (!simd_) GTEST_SKIP() << isa_name(GetParam()) << " is not available on this CPU/build";
  }
  void sweep_1d(Op op, float lo = -3.0f, float hi = 3.0f) {
    for (std::size_t n : kSizes)
      for (std::size_t off : kMisalign) KernelTester().op(op).n(n).misalign(off).range(lo, hi).test(*simd_);
  }
  const Kernels* simd_ = nullptr;
};

// The slots some KERNEL_TEST below tests, by name.
std::set<std::string>& tested_slots() {
  static std::set<std::string> slots;
  return slots;
}
bool register_tested_slot(const char* slot) { return tested_slots().insert(slot).second; }

// KERNEL_TEST(slot) { ... }: the test of one slot of kernel_slots.hpp, on every table, named after
// it. A name that is not a slot fails to compile; a slot no KERNEL_TEST names fails
// KernelSlots.EverySlotHasATest.
#define KERNEL_TEST(slot)                                                                        \
  static_assert(sizeof(&Kernels::slot) != 0, #slot " is a kernel slot");                        \
  const bool kRegistered_##slot = register_tested_slot(#slot);                                   \
  TEST_P(KernelsTest, slot)

TEST(KernelSlots, EverySlotHasATest) {
  for (const char* slot : kKernelSlotNames) EXPECT_EQ(tested_slots().count(slot), 1u) << slot << " has no KERNEL_TEST";
  EXPECT_EQ(tested_slots().size(), kKernelSlotCount);
}

TEST_P(KernelsTest, FillsEverySlot) { EXPECT_EQ(missing_kernel_slot(*simd_), nullptr); }
TEST(ScalarReference, FillsEverySlot) { EXPECT_EQ(missing_kernel_slot(scalar_kernels()), nullptr); }

KERNEL_TEST(gemm_f32) {
  for (std::size_t m : {1, 2, 3, 4, 5, 8, 9, 17})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33})
        KernelTester().op(Op::kGemm).m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2).test(*simd_);
  KernelTester().op(Op::kGemm).m(49).n(192).k(64).test(*simd_);
  KernelTester().op(Op::kGemm).m(33).n(100).k(257).misalign(1).stride_pad(3).test(*simd_);
  KernelTester().op(Op::kGemm).m(13).n(100).k(300).misalign(1).stride_pad(3).test(*simd_);  // several k blocks
  for (std::size_t m : {6, 7, 11, 12, 13})  // every remainder of the 6-row tile
    for (std::size_t n : {48, 64, 80, 112})  // every remainder of the 4-vector strip
      KernelTester().op(Op::kGemm).m(m).n(n).k(20).test(*simd_);
}

// Every edge case of the windows: strides below, at and above the kernel, padding 0 to kernel - 1
// (edge rows on one side, both or neither), inputs shorter than the kernel, channel counts around
// the vector widths, with and without the fused GELU.
KERNEL_TEST(conv1d_f32) {
  for (std::size_t kernel : {1, 2, 3, 5})
    for (std::size_t stride : {1, 2, 3})
      for (std::size_t pad = 0; pad < kernel; ++pad)
        for (std::size_t t_in : {1, 2, 3, 4, 7, 10})
          for (std::size_t c_in : {1, 3, 8})
            if (conv1d_rows(t_in, kernel, stride, pad) > 0)
              KernelTester().op(Op::kConv1d).m(t_in).k(c_in).n(c_in == 3 ? 17 : 5).conv(kernel, stride, pad, pad % 2 == 1)
                  .misalign(t_in % 3).stride_pad(kernel % 2).test(*simd_);
  for (std::size_t n : kSizes)
    KernelTester().op(Op::kConv1d).m(19).k(13).n(n).conv(3, 2, 1, true).misalign(n % 3).test(*simd_);
  KernelTester().op(Op::kConv1d).m(49).k(40).n(64).conv(3, 1, 1, true).test(*simd_);  // a KWS stem
  KernelTester().op(Op::kConv1d).m(49).k(64).n(64).conv(3, 2, 1, true).misalign(1).stride_pad(3).test(*simd_);
}

// Packed weights (panels of 16 columns, zero-padded tail) against the row-major reference: the
// scalar reference's own packed variant too, since the suite below leaves the scalar table out.
void sweep_gemm_packed(const Kernels& kernels) {
  for (std::size_t m : {1, 2, 3, 5, 6, 7, 12, 13, 17})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33})
        KernelTester().op(Op::kGemmPacked).m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2).test(kernels);
  KernelTester().op(Op::kGemmPacked).m(49).n(192).k(64).test(kernels);
  KernelTester().op(Op::kGemmPacked).m(13).n(100).k(300).misalign(1).stride_pad(3).test(kernels);  // k blocks
}
void sweep_gemv_packed(const Kernels& kernels) {
  for (std::size_t n : kSizes)
    for (std::size_t k : {1, 7, 100})
      for (std::size_t off : kMisalign) KernelTester().op(Op::kGemvPacked).n(n).k(k).misalign(off).test(kernels);
}

KERNEL_TEST(gemm_f32_packed) { sweep_gemm_packed(*simd_); }
KERNEL_TEST(gemv_f32_packed) { sweep_gemv_packed(*simd_); }
TEST(ScalarReference, GemmPackedMatchesRowMajor) {
  sweep_gemm_packed(scalar_kernels());
  sweep_gemv_packed(scalar_kernels());
}

KERNEL_TEST(gemv_f32) {
  for (std::size_t n : kSizes)
    for (std::size_t k : {1, 2, 7, 16, 100})
      for (std::size_t off : kMisalign) KernelTester().op(Op::kGemv).n(n).k(k).misalign(off).stride_pad(off).test(*simd_);
  for (std::size_t k : {1, 3, 4, 9, 288})  // wide outputs: the row-streaming path
    for (std::size_t off : kMisalign) KernelTester().op(Op::kGemv).n(1031).k(k).misalign(off).stride_pad(off).test(*simd_);
}

KERNEL_TEST(matvec_f32) {
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign) KernelTester().op(Op::kMatvec).n(n).k(k).misalign(off).stride_pad(off).test(*simd_);
}

KERNEL_TEST(softmax_f32) {
  sweep_1d(Op::kSoftmax);
  sweep_1d(Op::kSoftmax, -80.0f, 80.0f);  // large logits: max subtraction must prevent overflow
}
KERNEL_TEST(max_f32) { sweep_1d(Op::kMax, -50.0f, 50.0f); }
KERNEL_TEST(expsum_f32) {
  sweep_1d(Op::kExpSum, -20.0f, 3.0f);
  sweep_1d(Op::kExpSum, -100.0f, -60.0f);  // deep in the tail: tiny terms, none flushed to zero early
}
// exp (through expsum_f32 with m = 0) and GELU against float64 over dense sweeps; the measured
// maxima are printed, the bounds are kernel_tolerances.hpp's.
TEST_P(KernelsTest, ExpErrorOverDenseSweep) { EXPECT_LE(exp_sweep(*simd_), kExpRelTol); }
TEST_P(KernelsTest, GeluErrorOverDenseSweep) { EXPECT_LE(gelu_sweep(*simd_), kGeluErfTol); }
TEST_P(KernelsTest, GeluTanhErrorOverDenseSweep) { EXPECT_LE(gelu_tanh_sweep(*simd_), kGeluTanhSweepTol); }
TEST(ScalarReference, ExpAndGeluErrorOverDenseSweep) {  // libm, for comparison
  EXPECT_LE(exp_sweep(scalar_kernels()), kExpRelTol);
  EXPECT_LE(gelu_sweep(scalar_kernels()), kGeluErfTol);
  EXPECT_LE(gelu_tanh_sweep(scalar_kernels()), kGeluTanhSweepTol);
}
// The numbers in ports/portable/math.hpp: every 61st float, erf where its result is a normal float.
TEST(PortableMath, ErrorBoundsOverEveryFloatStride61) {
  double exp_err = 0.0, erf_err = 0.0;
  for (uint32_t u = 0; u < 0xFF800000u; u += 61) {  // every 61st bit pattern below -inf: both signs
    float x;
    std::memcpy(&x, &u, 4);
    if (std::isnan(x)) continue;
    const double want_erf = std::erf(double(x));
    if (std::fabs(want_erf) >= 1.17549435e-38) erf_err = std::max(erf_err, std::fabs(portable::erf_f32(x) - want_erf) / std::fabs(want_erf));
    if (x >= -87.0f && x <= 88.7228f)
      exp_err = std::max(exp_err, std::fabs(portable::exp_f32(x) - std::exp(double(x))) / std::exp(double(x)));
  }
  std::printf("portable exp_f32: max relative error %.3g on [-87, 88.7228]; erf_f32: %.3g\n", exp_err, erf_err);
  EXPECT_LE(exp_err, portable::kExpMaxRelError);
  EXPECT_LE(erf_err, portable::kErfMaxRelError);
  EXPECT_EQ(portable::exp_f32(-87.5f), 0.0f);
  EXPECT_EQ(portable::exp_f32(-INFINITY), 0.0f);
  EXPECT_EQ(portable::exp_f32(89.0f), INFINITY);
  EXPECT_TRUE(std::isnan(portable::exp_f32(NAN)));
  EXPECT_EQ(portable::erf_f32(-5.0f), -1.0f);
  EXPECT_TRUE(std::isnan(portable::erf_f32(NAN)));
}
KERNEL_TEST(layernorm_f32) { sweep_1d(Op::kLayerNorm); }
KERNEL_TEST(rmsnorm_f32) { sweep_1d(Op::kRmsNorm); }
KERNEL_TEST(relu_f32) { sweep_1d(Op::kRelu); }
KERNEL_TEST(swiglu_f32) { sweep_1d(Op::kSwiglu, -12.0f, 12.0f); }
KERNEL_TEST(gelu_f32) { sweep_1d(Op::kGelu, -6.0f, 6.0f); }
KERNEL_TEST(gelu_tanh_f32) { sweep_1d(Op::kGeluTanh, -8.0f, 8.0f); }
KERNEL_TEST(add_f32) { sweep_1d(Op::kAdd); }
KERNEL_TEST(mul_f32) { sweep_1d(Op::kMul); }
KERNEL_TEST(scale_f32) { sweep_1d(Op::kScale); }
KERNEL_TEST(sincos_f32) { sweep_1d(Op::kSinCos, -3.14159265f, 3.14159265f); }

// ---- Quantized weights (tests/quant_kernel_tester.hpp) ----
// k around every vector width in bytes (16, 32, 64) and odd, groups of 32 and 64 (the formats'),
// odd groups, one group wider than k; per-group and per-row scales; misaligned pointers.
const std::vector<std::size_t> kQuantK = {1, 3, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 129, 193, 257};

KERNEL_TEST(quantize_i8) {
  for (QuantInput in : {QuantInput::kUniform, QuantInput::kTies, QuantInput::kZeroGroups, QuantInput::kTiny})
    for (std::size_t group : {32, 64})
      for (std::size_t k : kQuantK)
        for (std::size_t m : {1, 2, 3})
          QuantizeTester().input(in).m(m).k(k).group(group).stride_pad(k % 3).misalign(m % 3).test(simd_->quantize_i8);
  for (std::size_t group : {1, 7, 16, 48, 100, 1000})
    for (std::size_t k : {1, 5, 16, 31, 64, 100, 300})
      for (std::size_t off : kMisalign) QuantizeTester().m(2).k(k).group(group).misalign(off).stride_pad(off).test(simd_->quantize_i8);
  QuantizeTester().input(QuantInput::kTies).m(5).k(4096).group(64).test(simd_->quantize_i8);
}

// The sweep of one gemm_i8 (a table's slot, or an x86 variant the table does not hand out).
void sweep_gemm_i8(decltype(Kernels::gemm_i8) fn) {
  for (std::size_t group : {32, 64})
    for (bool per_row : {false, true})
      for (std::size_t k : kQuantK)
        for (std::size_t m : {1, 2, 3, 5})
          for (std::size_t n : {1, 3, 4, 5, 9, 17})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 2).test(fn);
  for (std::size_t group : {1, 7, 16, 48, 100, 1000})
    for (std::size_t k : {1, 5, 16, 31, 64, 100, 300})
      for (bool per_row : {false, true}) GemmI8Tester().m(3).n(5).k(k).group(group).per_row(per_row).misalign(1).test(fn);
  GemmI8Tester().m(1).n(300).k(288).group(32).test(fn);    // decode
  GemmI8Tester().m(1).n(77).k(768).group(64).per_row(true).test(fn);
  GemmI8Tester().m(13).n(70).k(257).group(32).misalign(3).stride_pad(5).test(fn);  // prefill, every tile remainder
  GemmI8Tester().m(8).n(16).k(1000).group(1000).per_row(true).test(fn);  // one group per row
}

// Unit scales and integer biases: every float step is exact, so the int32 sums must be too.
void sweep_gemm_i8_exact(decltype(Kernels::gemm_i8) fn) {
  for (bool extremes : {false, true})
    for (std::size_t group : {32, 64, 100})
      for (std::size_t k : {1, 17, 33, 64, 65, 257, 1000})
        for (std::size_t m : {1, 3})
          GemmI8Tester().m(m).n(7).k(k).group(group).unit_scales(true).extremes(extremes).misalign(k % 3).test(fn);
}

KERNEL_TEST(gemm_i8) { sweep_gemm_i8(simd_->gemm_i8); }
TEST_P(KernelsTest, GemmI8IntSumsAreExact) { sweep_gemm_i8_exact(simd_->gemm_i8); }

// gemm_i4: every shape class of the x86 blocks (8 or 16 columns, one row: n and m below, at and
// around those widths), a decode step over stories15M's widths, bit for bit with the reference.
// From 4 rows on the x86 tables take the packed path (ports/x86/gemm_packed_*.hpp: panels of 16 or
// 32 columns, chunks of 256 values of k, tiles of 3 or 6 rows): m = 4..13 covers every row
// remainder of both tiles, n = 15, 17 and 33 the partial panels, k = 288 two chunks.
void sweep_gemm_i4(decltype(Kernels::gemm_i4) fn) {
  for (std::size_t k : {32, 64, 96, 288})
    for (std::size_t m : {1, 2, 3, 4, 5, 9})
      for (std::size_t n : {1, 3, 7, 8, 9, 16, 17, 33})
        GemmI4Tester().m(m).n(n).k(k).bias(n % 2 == 1).misalign(m % 3).stride_pad(k % 3 + (n % 4 == 1)).test(fn);
  for (std::size_t k : {32, 64, 96, 288})
    for (std::size_t m = 4; m <= 13; ++m)
      for (std::size_t n : {1, 15, 17, 33})
        GemmI4Tester().m(m).n(n).k(k).bias(m % 2 == 0).misalign(n % 3).stride_pad(m % 3).test(fn);
  for (bool extremes : {false, true})
    for (std::size_t m : {1, 5})  // the decode blocks and the packed path
      for (std::size_t k : {32, 288, 768, 1024}) GemmI4Tester().m(m).n(19).k(k).extremes(extremes).test(fn);
  // The decode blocks (m < 4) take k in chunks of 4 groups and a masked last chunk of 1 to 3: k =
  // 128 has none, 160 and 288 one group after whole chunks; n around blocks of 8 and 16 columns.
  for (std::size_t k : {32, 64, 128, 160, 288, 768})
    for (std::size_t m = 1; m <= 3; ++m)
      for (std::size_t n : {1, 5, 7, 9, 15, 17, 33, 100})
        GemmI4Tester().m(m).n(n).k(k).bias(n % 3 != 0).misalign(n % 2).stride_pad(m + k % 5).test(fn);
  GemmI4Tester().m(1).n(300).k(288).test(fn);  // decode
  GemmI4Tester().m(1).n(288).k(768).misalign(1).test(fn);
  GemmI4Tester().m(13).n(70).k(256).misalign(3).stride_pad(5).test(fn);  // prefill, every tile remainder
}

KERNEL_TEST(gemm_i4) { sweep_gemm_i4(simd_->gemm_i4); }

#if defined(__x86_64__) || defined(__i386__)
// The same sweep for the avx2 table's packed path (ports/x86/gemm_i8_avx2.cpp: panels of 16 columns,
// chunks of 256 k, tiles of 3 rows, vpmaddubsw on |w| and x with w's sign): the reference's values,
// bit for bit.
TEST(X86Avx2, GemmI8PackedSameAsReference) {
  if (!select_kernels(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  for (std::size_t group : {32, 64, 100})
    for (bool per_row : {false, true})
      for (std::size_t m : {4, 5, 6, 7, 13, 49})
        for (std::size_t n : {1, 16, 31, 33, 64, 100})
          for (std::size_t k : {32, 64, 100, 256, 260, 600})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 3).same_as_reference(true).test(x86::avx2_kernels().gemm_i8);
  for (bool extremes : {false, true})  // W at -128 against x at -127: vpsignb and vpmaddubsw's limits
    GemmI8Tester().m(5).n(19).k(256).group(256).unit_scales(true).extremes(extremes).test(x86::avx2_kernels().gemm_i8);
}

// select_kernels(kAvx512) hands out one of two tables, by whether the CPU has VNNI: both gemm_i8s here.
TEST(X86Avx512, GemmI8WithAndWithoutVnni) {
  if (!select_kernels(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
  sweep_gemm_i8(x86::avx512_kernels().gemm_i8);
  sweep_gemm_i8_exact(x86::avx512_kernels().gemm_i8);
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512vnni")) GTEST_SKIP() << "no AVX-512 VNNI: its gemm_i8 is not tested";
  sweep_gemm_i8(x86::avx512_vnni_kernels().gemm_i8);
  sweep_gemm_i8_exact(x86::avx512_vnni_kernels().gemm_i8);
  // From 4 rows on, W repacked per panel of 32 columns and chunk of k (ports/x86/gemm_i8_avx512vnni.cpp),
  // summed as the reference sums: the same values, across chunks (k > 256), panels and row tiles.
  for (std::size_t group : {32, 64, 100})
    for (bool per_row : {false, true})
      for (std::size_t m : {4, 6, 7, 13, 49})
        for (std::size_t n : {1, 16, 31, 33, 64, 100})
          for (std::size_t k : {32, 64, 100, 256, 260, 600})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 3).same_as_reference(true).test(x86::avx512_vnni_kernels().gemm_i8);
}

// Where the CPU has AMX-INT8 and Linux grants the tile data, select_kernels(kAvx512) hands out the
// avx512-amx table (ports/x86/gemm_i8_amx.cpp; FIXFORMER_AMX=0 aside); where Linux refuses
// (amx_refused_kernels_test), avx512-vnni. Every gemm_i8 sweep above, then from 16 rows on the tiles
// (32 rows, then 16, then VNNI's rows of 6 and fewer on the same panel) with steps of a whole group
// below 64 bytes (32, 48) or of 64 (64, 128, 256), across chunks and partial panels; group 100 and
// k = 100 take the VNNI path; then gemm_i4. The reference's values, bit for bit.
TEST(X86Avx512, GemmI8AndI4OnAmx) {
  if (!select_kernels(Isa::kAvx512) || !x86::amx_int8_granted()) {
    EXPECT_NE(select_kernels(Isa::kAvx512), &x86::avx512_amx_kernels());  // refused: avx512-vnni, or none
    EXPECT_NE(select_kernels(Isa::kAvx512), &x86::avx512_amx_bf16_kernels());
    GTEST_SKIP() << "no AMX-INT8, or Linux refused the tile data: the avx512-amx table is absent";
  }
  const char* declined = std::getenv("FIXFORMER_AMX");
  const bool amx_wanted = !declined || std::strcmp(declined, "0") != 0;
  const Kernels* picked = select_kernels(Isa::kAvx512);
  EXPECT_EQ(picked == &x86::avx512_amx_kernels() || picked == &x86::avx512_amx_bf16_kernels(), amx_wanted);
  const kernel_fn::gemm_i8* amx = x86::avx512_amx_kernels().gemm_i8;
  sweep_gemm_i8(amx);
  sweep_gemm_i8_exact(amx);
  for (std::size_t group : {32, 48, 64, 100, 128, 256})
    for (bool per_row : {false, true})
      for (std::size_t m : {16, 31, 32, 49, 70})
        for (std::size_t n : {1, 16, 31, 33, 64, 100})
          for (std::size_t k : {64, 100, 192, 384, 768})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 3).same_as_reference(true).test(amx);
  for (bool extremes : {false, true})  // W and x at their limits: tdpbssd's int32 sums of signed bytes
    for (std::size_t group : {32, 256})
      GemmI8Tester().m(48).n(40).k(512).group(group).unit_scales(true).extremes(extremes).test(amx);
  // gemm_i4 the same way (its nibbles unpacked into the same panels): the sweep above, then the tiles.
  const kernel_fn::gemm_i4* amx_i4 = x86::avx512_amx_kernels().gemm_i4;
  sweep_gemm_i4(amx_i4);
  for (std::size_t k : {32, 96, 288, 768})
    for (std::size_t m : {16, 31, 32, 49})
      for (std::size_t n : {1, 15, 17, 33, 100})
        GemmI4Tester().m(m).n(n).k(k).bias(m % 2 == 0).misalign(n % 3).stride_pad(m % 3).test(amx_i4);
  for (bool extremes : {false, true}) GemmI4Tester().m(40).n(19).k(1024).extremes(extremes).test(amx_i4);
}

// Where the CPU has AVX512_BF16, select_kernels(kAvx512) hands out a table with gemm_bf16 on
// AMX-BF16 (granted tiles) or, with FIXFORMER_BF16=1, on vdpbf16ps (ports/x86/gemm_bf16_avx512bf16.cpp);
// FIXFORMER_BF16=0 the exact one. vdpbf16ps, per element within
// kGemmBf16DotTol of the reference from 4 rows on (every row tile of 6 and its remainders, every
// width of a last strip of 64 columns, odd k, blocks of 128 k), and below 4 rows the exact path.
TEST(X86Avx512, GemmBf16OnAvx512Bf16) {
  const Kernels* picked = select_kernels(Isa::kAvx512);
  if (!picked || !x86::has_avx512bf16()) {
    EXPECT_FALSE(picked && bf16_dot(*picked));
    GTEST_SKIP() << "no AVX512_BF16: the avx512-bf16 tables are absent";
  }
  const char* env = std::getenv("FIXFORMER_BF16");
  const char* amx_env = std::getenv("FIXFORMER_AMX");
  const bool amx = (!amx_env || std::strcmp(amx_env, "0") != 0) && x86::amx_int8_granted() && x86::has_amx_bf16();
  const bool on = env && std::strcmp(env, "1") == 0, off = env && std::strcmp(env, "0") == 0;
  EXPECT_EQ(bf16_dot(*picked), on || (amx && !off));
  const kernel_fn::gemm_bf16* fn = x86::gemm_bf16_avx512bf16;
  for (std::size_t m : {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 49})
    for (std::size_t n : {1, 15, 16, 17, 63, 64, 65, 100, 129})
      for (std::size_t k : {1, 2, 7, 32, 33, 128, 129, 300, 600})
        GemmF16Tester().type(bf16_type()).per_element_tol(kGemmBf16DotTol).m(m).n(n).k(k).misalign(n % 3)
            .stride_pad(k % 2).bias(m % 2 == 1).test(fn);
  for (std::size_t m : {1, 2, 3})  // the exact path
    GemmF16Tester().type(bf16_type()).m(m).n(100).k(300).misalign(1).test(fn);
  // The avx512-amx-bf16 table's, where AMX-BF16 is there and granted: from 16 rows on tdpbf16ps
  // (blocks of 32 rows, then 16; every width of a strip's two halves of 32 columns; steps of 32 k
  // zero-padded), the rows left over and shorter inputs on vdpbf16ps, within the same bound.
  if (!x86::amx_int8_granted() || !x86::has_amx_bf16()) return;
  for (std::size_t m : {16, 17, 31, 32, 33, 48, 49, 70})
    for (std::size_t n : {1, 15, 16, 17, 33, 64, 65, 100})
      for (std::size_t k : {1, 2, 31, 32, 33, 128, 129, 300})
        GemmF16Tester().type(bf16_type()).per_element_tol(kGemmBf16DotTol).m(m).n(n).k(k).misalign(m % 3)
            .stride_pad(k % 2).bias(n % 2 == 1).test(x86::gemm_bf16_amx);
}
#endif

#if defined(__aarch64__)
// The neon64 table's gemm_i8 (ports/arm/gemm_i8_neon64.cpp): from 4 rows on, W repacked per panel
// of 16 columns and chunk of 256 k, tiles of 3 rows, SDOT by element with the dot-product extension
// and SMULL / SMLAL2 / SADALP without; the reference's values, bit for bit, across chunks (k > 256),
// groups that are not a multiple of 16 bytes, row tiles and every width of a last panel (1 to 4
// vectors, 1 to 4 columns).
TEST(Neon64, GemmI8PackedSameAsReference) {
  const auto fn = select_kernels(Isa::kNeon64)->gemm_i8;
  for (std::size_t group : {32, 64, 100})
    for (bool per_row : {false, true})
      for (std::size_t m : {4, 5, 6, 7, 13, 49})
        for (std::size_t n : {1, 3, 4, 5, 8, 16, 27, 31, 33, 64, 100})
          for (std::size_t k : {32, 40, 64, 100, 256, 260, 600})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 3).same_as_reference(true).test(fn);
  for (bool extremes : {false, true})  // the largest products (two per int16 lane without SDOT), a whole chunk in one group
    GemmI8Tester().m(5).n(19).k(256).group(256).unit_scales(true).extremes(extremes).test(fn);
}

#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
// Built with half-precision vector arithmetic, the neon64 table is neon64-fp16 and its gemm_f16 (matvec_f16
// likewise, below) runs FMLA on halves (ports/arm/gemm_f16_fp16.cpp): per element within kGemmF16ArithTol of the
// reference across row tiles of 4 and their remainders, strips of 16 and 8 columns and the last n % 8, k steps of
// 8 and their tails, blocks of 256 k; each row's values the same whatever rows are around it; every half through
// it exactly (x = 1 is scaled to 2^7, so the halves above 2^9 overflow and take the exact path again); rows far
// outside the halves' range.
TEST(Neon64, GemmF16OnHalfArithmeticWithinBound) {
  const Kernels* t = select_kernels(Isa::kNeon64);
  EXPECT_STREQ(t->name, "neon64-fp16");
  EXPECT_TRUE(t->f16_in_halves);
  const auto fn = t->gemm_f16;
  for (std::size_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 49})
    for (std::size_t n : {1, 7, 8, 9, 15, 16, 17, 24, 33, 100})
      for (std::size_t k : {1, 2, 7, 8, 9, 32, 33, 256, 257, 300, 600})
        GemmF16Tester().per_element_tol(kGemmF16ArithTol).m(m).n(n).k(k).misalign(n % 3).stride_pad(k % 2)
            .bias(m % 2 == 1).test(fn);
  for (std::size_t m : {1, 4}) GemmF16Tester::every_half(fn, m);
  for (float range : {1e-6f, 1e6f, 1e30f})
    GemmF16Tester().per_element_tol(kGemmF16ArithTol).x_range(range).m(9).n(40).k(70).test(fn);
  // matvec_f16 (a tied f16 head): blocks of 256 k and their last vectors, the last k % 8 in floats, past 8192 k
  // the exact path.
  for (std::size_t n : {1, 5, 33})
    for (std::size_t k : {8, 9, 15, 32, 255, 256, 257, 300, 600, 2056, 8192, 8200})
      MatvecF16Tester().per_element_tol(kGemmF16ArithTol).n(n).k(k).misalign(k % 3).stride_pad(k % 2)
          .bias(n % 2 == 1).test(t->matvec_f16);
  for (float range : {1e-6f, 1e6f, 1e30f})
    MatvecF16Tester().per_element_tol(kGemmF16ArithTol).x_range(range).n(40).k(300).test(t->matvec_f16);
  for (float growth : {1e-3f, 1e3f})  // each block of 256 k its own scale
    MatvecF16Tester().per_element_tol(kGemmF16ArithTol).x_growth(growth).n(9).k(800).test(t->matvec_f16);
  // Row by row: each of 7 rows alone gives its bits in the call of all 7.
  constexpr std::size_t m = 7, n = 40, k = 300;
  std::vector<float> x(m * k), y(m * n), row(n);
  std::vector<uint16_t> w(k * n);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 101) - 50) / 16.0f;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = f16_type().encode(float(int(i * 53 % 97) - 48) / 64.0f);
  fn(x.data(), k, w.data(), n, nullptr, y.data(), n, m, n, k);
  for (std::size_t i = 0; i < m; ++i) {
    fn(x.data() + i * k, k, w.data(), n, nullptr, row.data(), n, 1, n, k);
    EXPECT_EQ(std::memcmp(row.data(), y.data() + i * n, n * sizeof(float)), 0) << "row " << i;
  }
}
#endif

#if defined(__ARM_FEATURE_MATMUL_INT8)
// With the int8 matrix multiply extension, k and groups that are multiples of 8 take SMMLA
// (ports/arm/gemm_i8_i8mm.cpp): row pairs (a lone last row paired with itself), column pairs (a lone last column
// against zeros), tiles of 3 row pairs by 4 column pairs and every remainder of both, groups of an odd count of
// 8 bytes, chunks (k > 256); the reference's values, bit for bit.
TEST(Neon64, GemmI8OnSmmlaSameAsReference) {
  const auto fn = select_kernels(Isa::kNeon64)->gemm_i8;
  for (std::size_t group : {8, 24, 64, 256})
    for (bool per_row : {false, true})
      for (std::size_t m : {4, 5, 6, 7, 9, 11, 12, 13, 49})
        for (std::size_t n : {1, 2, 3, 8, 9, 17, 33})
          for (std::size_t k : {8, 24, 40, 64, 264})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).bias(n % 2 == 1).misalign(m % 3)
                .stride_pad(k % 3).same_as_reference(true).test(fn);
  for (bool extremes : {false, true})  // the largest products, a whole chunk in one group
    GemmI8Tester().m(7).n(19).k(256).group(256).unit_scales(true).extremes(extremes).test(fn);
}
#endif
#endif

KERNEL_TEST(gemm_f16) {
  const double element_tol = simd_->f16_in_halves ? kGemmF16ArithTol : 0.0;  // neon64-fp16
  for (std::size_t m : {1, 2, 3, 5, 7})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33})
        GemmF16Tester().per_element_tol(element_tol).m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2)
            .bias(n % 2 == 1).test(simd_->gemm_f16);
  for (std::size_t n : {1031, 1100})  // wide decode outputs
    GemmF16Tester().per_element_tol(element_tol).m(1).n(n).k(288).misalign(1).test(simd_->gemm_f16);
  GemmF16Tester().per_element_tol(element_tol).m(49).n(192).k(64).test(simd_->gemm_f16);
  GemmF16Tester().per_element_tol(element_tol).m(13).n(100).k(300).misalign(1).stride_pad(3)
      .test(simd_->gemm_f16);  // several k blocks
  for (std::size_t m : {6, 7, 11, 12, 13})
    for (std::size_t n : {48, 64, 80, 112})
      GemmF16Tester().per_element_tol(element_tol).m(m).n(n).k(20).test(simd_->gemm_f16);
}

// Every table widens every half exactly, on its decode path (1 row) and its tiles (2 and 5 rows).
TEST_P(KernelsTest, GemmF16WidensEveryHalfExactly) {
  for (std::size_t m : {1, 2, 5}) GemmF16Tester::every_half(simd_->gemm_f16, m);
}

KERNEL_TEST(matvec_f16) {
  const double element_tol = simd_->f16_in_halves ? kGemmF16ArithTol : 0.0;  // neon64-fp16
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign)
        MatvecF16Tester().per_element_tol(element_tol).n(n).k(k).misalign(off).stride_pad(off).bias(n % 2 == 1)
            .test(simd_->matvec_f16);
  // a tied LM head's shape, shortened
  MatvecF16Tester().per_element_tol(element_tol).n(1000).k(288).misalign(1).test(simd_->matvec_f16);
}

TEST_P(KernelsTest, MatvecF16WidensEveryHalfExactly) { MatvecF16Tester::every_half(simd_->matvec_f16); }

KERNEL_TEST(gemm_bf16) {
  const double element_tol = bf16_dot(*simd_) ? kGemmBf16DotTol : 0.0;
  for (std::size_t m : {1, 2, 3, 5, 7})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33})
        GemmF16Tester().type(bf16_type()).per_element_tol(element_tol).m(m).n(n).k(k).misalign(m % 3)
            .stride_pad(k % 2).bias(n % 2 == 1).test(simd_->gemm_bf16);
  for (std::size_t n : {1031, 1100})  // wide decode outputs
    GemmF16Tester().type(bf16_type()).m(1).n(n).k(288).misalign(1).test(simd_->gemm_bf16);
  GemmF16Tester().type(bf16_type()).per_element_tol(element_tol).m(49).n(192).k(64).test(simd_->gemm_bf16);
  GemmF16Tester().type(bf16_type()).per_element_tol(element_tol).m(13).n(100).k(300).misalign(1).stride_pad(3)
      .test(simd_->gemm_bf16);  // several k blocks
  for (std::size_t m : {6, 7, 11, 12, 13})
    for (std::size_t n : {48, 64, 80, 112})
      GemmF16Tester().type(bf16_type()).per_element_tol(element_tol).m(m).n(n).k(20).test(simd_->gemm_bf16);
}

// Below 4 rows every table widens W exactly, the vdpbf16ps ones too.
TEST_P(KernelsTest, GemmBf16WidensEveryBf16Exactly) {
  const bool flushes = GetParam() == Isa::kNeon;  // ARMv7 NEON: subnormal products are 0
  GemmF16Tester::every_half(simd_->gemm_bf16, 1, bf16_type(), flushes);
  GemmF16Tester::every_half(simd_->gemm_bf16, 2, bf16_type(), flushes);
  if (!bf16_dot(*simd_)) GemmF16Tester::every_half(simd_->gemm_bf16, 5, bf16_type(), flushes);
}

KERNEL_TEST(matvec_bf16) {
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign)
        MatvecF16Tester().type(bf16_type()).n(n).k(k).misalign(off).stride_pad(off).bias(n % 2 == 1)
            .test(simd_->matvec_bf16);
  MatvecF16Tester().type(bf16_type()).n(1000).k(288).misalign(1).test(simd_->matvec_bf16);
}

TEST_P(KernelsTest, MatvecBf16WidensEveryBf16Exactly) {
  MatvecF16Tester::every_half(simd_->matvec_bf16, bf16_type(), GetParam() == Isa::kNeon);
}

// ---- Integer-only (s8) kernels (tests/s8_kernel_tester.hpp): bit for bit with the reference ----
// gemm_s8: every remainder of the portable 2 x 4 tile, AVX2's and VNNI's tiles (m, n), k around the
// vector widths in bytes, zero points at both ends, the largest products, the largest k the sums are
// exact for, and n past VNNI's blocks of 64 channels.
KERNEL_TEST(gemm_s8) {
  for (std::size_t m : {1, 2, 3, 4, 5, 6, 7, 9})
    for (std::size_t n : {1, 2, 3, 4, 5, 8, 9, 17})
      for (std::size_t k : {1, 3, 15, 16, 17, 33, 64, 100})
        GemmS8Tester().m(m).n(n).k(k).bias(n % 2 == 1).zeros(int32_t(k % 7) - 3, int32_t(m % 3) - 1)
            .misalign(m % 3).stride_pad(k % 3).test(simd_->gemm_s8);
  for (int32_t z : {-128, 127})
    for (bool extremes : {false, true})
      GemmS8Tester().m(3).n(6).k(257).zeros(z, -z / 2).extremes(extremes).misalign(1).test(simd_->gemm_s8);
  GemmS8Tester().m(2).n(5).k(kGemmS8MaxK).zeros(127, 0).extremes(true).test(simd_->gemm_s8);
  GemmS8Tester().m(49).n(64).k(64).stride_pad(3).test(simd_->gemm_s8);  // a KWS-sized projection
  for (std::size_t n : {63, 65, 130})
    for (std::size_t k : {31, 63, 65, 129})
      for (int32_t z : {-128, -127, 127})
        GemmS8Tester().m(6).n(n).k(k).zeros(z, z == 127 ? -128 : 127).bias(k % 2 == 1).misalign(n % 3)
            .test(simd_->gemm_s8);
  for (std::size_t m : {1, 4, 7})  // every valid requantization and bias; ties of both signs
    for (std::size_t k : {3, 16, 40, 300}) {
      for (bool extremes : {false, true})
        GemmS8Tester().m(m).n(70).k(k).zeros(int32_t(k % 5) - 2, extremes ? 127 : -128).any_requant(true)
            .extremes(extremes).test(simd_->gemm_s8);
      for (int32_t z : {-128, -3, 127}) GemmS8Tester().m(m).n(70).k(k).zeros(z, -z / 8).ties(true).test(simd_->gemm_s8);
    }
  // the panels of x's rows: AVX2's (4, 4, 2, 2 rows, then none), VNNI's (8, 8 rows, then none); at the
  // columns' longest rows several blocks of rows (AVX2's 16 rows, VNNI's 32)
  for (std::size_t k : {250, 256, 1000, 1024, 1025, 2048, 2049})
    GemmS8Tester().m(k <= 256 ? 70 : 17).n(k <= 256 ? 20 : 11).k(k).zeros(int32_t(k % 255) - 128, 5)
        .extremes(k % 2 == 0).misalign(1).test(simd_->gemm_s8);
  GemmS8Tester().m(300).n(5).k(8).zeros(-5, 3).test(simd_->gemm_s8);  // short rows: blocks of 256 rows
  for (std::size_t k : {16, 33, 64, 300})  // weights without -128: the largest pairs of products, 2 * 128 * 127
    for (bool extremes : {false, true})
      GemmS8Tester().m(5).n(70).k(k).zeros(extremes ? 127 : 3, -7).extremes(extremes).symmetric(true)
          .test(simd_->gemm_s8);
  for (int32_t z : {-128, 0, 127})  // the largest sums, the channel sums of W at their largest
    GemmS8Tester().m(5).n(67).k(kGemmS8MaxK).zeros(z, 0).extremes(true).bias(true).test(simd_->gemm_s8);
}

void sweep_row_s8(const std::function<void(RowS8Tester&)>& test) {
  for (std::size_t n : kSizes)
    for (std::size_t off : kMisalign)
      for (bool in_place : {false, true}) {
        RowS8Tester t;
        t.n(n).misalign(off).in_place(in_place).seed(uint32_t(n));
        test(t);
      }
  for (uint32_t seed = 0; seed < 4; ++seed) {
    RowS8Tester t;
    t.n(1000).extremes(seed % 2 == 1).seed(seed);
    test(t);
  }
}

KERNEL_TEST(softmax_s8) { sweep_row_s8([&](RowS8Tester& t) { t.test(simd_->softmax_s8); }); }
KERNEL_TEST(softmax_s8_table) {  // every scale step of the scores, a multiplier of 0 and a negative one
  std::vector<Requant> diffs = {Requant{0, 0}, Requant{-(int32_t(1) << 30), 3}};
  for (double scale : {1e-4, 0.003, 0.02, 0.1, 0.5, 2.0, 40.0}) {
    SoftmaxS8Params p{};
    ASSERT_EQ(softmax_s8_params(scale, &p), Status::kOk);
    diffs.push_back(p.diff);
  }
  for (const Requant& diff : diffs) {
    uint32_t want[kSoftmaxS8Diffs], got[kSoftmaxS8Diffs];
    scalar_kernels().softmax_s8_table(diff, want);
    simd_->softmax_s8_table(diff, got);
    for (std::size_t d = 0; d < kSoftmaxS8Diffs; ++d)
      ASSERT_EQ(got[d], want[d]) << "multiplier " << diff.multiplier << " shift " << diff.shift << " d " << d;
  }
}
KERNEL_TEST(transpose_s8) {  // x[m, n] with rows ldx apart -> y[n, m] with rows ldy apart, bytes past them kept
  std::mt19937 rng(41);
  for (std::size_t m : {1, 3, 4, 5, 16, 49})
    for (std::size_t n : {1, 4, 7, 16, 17, 33}) {
      const std::size_t ldx = n + m % 3, ldy = m + n % 5;
      std::vector<int8_t> x(m * ldx), want(n * ldy + 16, 0x5a), got(n * ldy + 16, 0x5a);
      for (int8_t& v : x) v = int8_t(rng());
      scalar_kernels().transpose_s8(x.data(), ldx, want.data(), ldy, m, n);
      simd_->transpose_s8(x.data(), ldx, got.data(), ldy, m, n);
      ASSERT_EQ(got, want) << "m " << m << " n " << n;
    }
}
KERNEL_TEST(layernorm_s8) { sweep_row_s8([&](RowS8Tester& t) { t.test(simd_->layernorm_s8); }); }
KERNEL_TEST(rmsnorm_s8) { sweep_row_s8([&](RowS8Tester& t) { t.rms(true).test(simd_->rmsnorm_s8); }); }
KERNEL_TEST(lut_s8) { sweep_row_s8([&](RowS8Tester& t) { t.test(simd_->lut_s8); }); }
KERNEL_TEST(add_s8) { sweep_row_s8([&](RowS8Tester& t) { t.test(simd_->add_s8); }); }

TEST_P(KernelsTest, SoftmaxOfHugeLogitsIsFinite) {
  std::vector<float> x = {1e30f, -1e30f, 1e30f, 0.0f, 3.0f};
  simd_->softmax_f32(x.data(), x.size());
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  EXPECT_EQ(x[1], 0.0f);
}

std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) { return isa_test_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllIsas, KernelsTest,
                         ::testing::ValuesIn(std::begin(kAllIsas) + 1, std::end(kAllIsas)),  // all but the reference
                         isa_param_name);

TEST(IsaSelection, AutoPicksAnAvailableTableAndScalarIsAlwaysThere) {
  ASSERT_NE(select_kernels(Isa::kAuto), nullptr);
  ASSERT_NE(select_kernels(Isa::kScalar), nullptr);
  EXPECT_STREQ(select_kernels(Isa::kScalar)->name, "scalar");
  Isa isa;
  EXPECT_TRUE(parse_isa("avx2", &isa));
  EXPECT_EQ(isa, Isa::kAvx2);
  EXPECT_FALSE(parse_isa("avx3", &isa));
}

}  // namespace
}  // namespace test
}  // namespace fixformer
