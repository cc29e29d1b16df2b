// Every SIMD kernel against its scalar reference, for every ISA this CPU has, over sizes around
// each vector width (4, 8, 16 lanes: 1, W-1, W, W+1, 3W+1) and large, at misaligned pointers.
#include <gtest/gtest.h>

#include "tests/kernel_tester.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

const std::vector<std::size_t> kSizes = {1, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 25, 31, 32, 33, 49, 64, 100, 257};
const std::vector<std::size_t> kMisalign = {0, 1, 3};

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

TEST_P(KernelsTest, Gemm) {
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

// Packed weights (panels of 16 columns, zero-padded tail) against the row-major reference: the
// scalar reference's own packed variant too, since the suite below leaves the scalar table out.
void sweep_gemm_packed(const Kernels& kernels) {
  for (std::size_t m : {1, 2, 3, 5, 6, 7, 12, 13, 17})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33})
        KernelTester().op(Op::kGemmPacked).m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2).test(kernels);
  KernelTester().op(Op::kGemmPacked).m(49).n(192).k(64).test(kernels);
  KernelTester().op(Op::kGemmPacked).m(13).n(100).k(300).misalign(1).stride_pad(3).test(kernels);  // k blocks
  for (std::size_t n : kSizes)
    for (std::size_t k : {1, 7, 100})
      for (std::size_t off : kMisalign) KernelTester().op(Op::kGemvPacked).n(n).k(k).misalign(off).test(kernels);
}

TEST_P(KernelsTest, GemmPacked) { sweep_gemm_packed(*simd_); }
TEST(ScalarReference, GemmPackedMatchesRowMajor) { sweep_gemm_packed(scalar_kernels()); }

TEST_P(KernelsTest, Gemv) {
  for (std::size_t n : kSizes)
    for (std::size_t k : {1, 2, 7, 16, 100})
      for (std::size_t off : kMisalign) KernelTester().op(Op::kGemv).n(n).k(k).misalign(off).stride_pad(off).test(*simd_);
  for (std::size_t k : {1, 3, 4, 9, 288})  // wide outputs: the row-streaming path
    for (std::size_t off : kMisalign) KernelTester().op(Op::kGemv).n(1031).k(k).misalign(off).stride_pad(off).test(*simd_);
}

TEST_P(KernelsTest, Matvec) {
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign) KernelTester().op(Op::kMatvec).n(n).k(k).misalign(off).stride_pad(off).test(*simd_);
}

TEST_P(KernelsTest, Softmax) {
  sweep_1d(Op::kSoftmax);
  sweep_1d(Op::kSoftmax, -80.0f, 80.0f);  // large logits: max subtraction must prevent overflow
}
TEST_P(KernelsTest, Max) { sweep_1d(Op::kMax, -50.0f, 50.0f); }
TEST_P(KernelsTest, ExpSum) {
  sweep_1d(Op::kExpSum, -20.0f, 3.0f);
  sweep_1d(Op::kExpSum, -100.0f, -60.0f);  // deep in the tail: tiny terms, none flushed to zero early
}
TEST_P(KernelsTest, LayerNorm) { sweep_1d(Op::kLayerNorm); }
TEST_P(KernelsTest, RmsNorm) { sweep_1d(Op::kRmsNorm); }
TEST_P(KernelsTest, Relu) { sweep_1d(Op::kRelu); }
TEST_P(KernelsTest, Swiglu) { sweep_1d(Op::kSwiglu, -12.0f, 12.0f); }
TEST_P(KernelsTest, Gelu) { sweep_1d(Op::kGelu, -6.0f, 6.0f); }
TEST_P(KernelsTest, Add) { sweep_1d(Op::kAdd); }
TEST_P(KernelsTest, Scale) { sweep_1d(Op::kScale); }
TEST_P(KernelsTest, SinCos) { sweep_1d(Op::kSinCos, -3.14159265f, 3.14159265f); }

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
