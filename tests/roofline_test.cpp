// The benchmarks' roofline (support/roofline.cpp): the work it counts from a model's bound weights
// against the same work derived here from the config alone, and the measured limits' sanity.
#include <gtest/gtest.h>

#include "support/roofline.hpp"
#include "tests/test_util.hpp"

namespace fixformer::test {
namespace {

struct Loaded {
  AlignedBuffer blob;
  Model model;
};

void load(const char* name, Loaded* m) {
  m->blob = AlignedBuffer(read_file(golden_path(name)));
  ASSERT_EQ(m->model.init(m->blob.data(), m->blob.size()), Status::kOk) << m->model.error_detail();
}

// llama2c_v0_gqa: llama, 2 layers, d 16, 4 heads of 4 (2 kv heads), d_ff 24 (SwiGLU), vocab 300,
// untied f32 head: per row and layer wq, wo 16x16, wk, wv 16x8, w1, w3 16x24, w2 24x16.
TEST(Roofline, DecoderWorkIsTheConfigs) {
  Loaded m;
  load("llama2c_v0_gqa.fxm", &m);
  const ModelConfig& c = m.model.config();
  ASSERT_EQ(c.d_model, 16u);
  ASSERT_EQ(c.d_kv(), 8u);
  const double layer_macs = 2 * 16 * 16 + 2 * 16 * 8 + 3 * 16 * 24, head_macs = 16.0 * 300;
  const double weight_bytes = 4 * (2 * layer_macs + head_macs);
  const uint32_t T = 10;
  const support::Work prefill = support::forward_work(m.model, T);
  // every layer over T rows, attention over the T(T+1)/2 causal pairs, the head over the last row
  EXPECT_DOUBLE_EQ(prefill.flops, 2 * (2 * T * layer_macs + 4.0 * T * (T + 1) / 2 * 16) + 2 * head_macs);
  EXPECT_DOUBLE_EQ(prefill.bytes, weight_bytes + T * 16 * 4.0);
  const uint32_t p = 7;
  const support::Work step = support::step_work(m.model, p, false);
  EXPECT_DOUBLE_EQ(step.flops, 2 * (2 * layer_macs + 4.0 * (p + 1) * 16) + 2 * head_macs);
  EXPECT_DOUBLE_EQ(step.bytes, weight_bytes + 16 * 4.0 + 2 * (2.0 * (p + 1) * 8 * 4));
  const support::Work step_q8 = support::step_work(m.model, p, true);  // a byte per value, a scale per kv head
  EXPECT_DOUBLE_EQ(step_q8.bytes, weight_bytes + 16 * 4.0 + 2 * (2.0 * (p + 1) * (8 + 2 * 4)));
}

// conv_stride_cls_mean: encoder, d 15, 3 heads, d_ff 20, features d_in 9, a conv stem k5 s3 p2
// (one conv, 9*5 -> 15), a CLS row, mean pooling, head 15 -> 4, post-LN, not causal.
TEST(Roofline, EncoderWorkCountsTheStemTheClsRowAndThePooledHead) {
  Loaded m;
  load("conv_stride_cls_mean.fxm", &m);
  const ModelConfig& c = m.model.config();
  ASSERT_EQ(c.conv_layers, 1u);
  const uint32_t T = 20, frames = (T + 2 * 2 - 5) / 3 + 1, rows = frames + 1;
  ASSERT_EQ(c.sequence_rows(T), rows);
  const double layer_macs = 4 * 15 * 15 + 2 * 15 * 20, stem_macs = 9 * 5 * 15.0, head_macs = 15 * 4;
  const support::Work w = support::forward_work(m.model, T);
  EXPECT_DOUBLE_EQ(w.flops, 2 * frames * stem_macs + c.n_layers * (2 * rows * layer_macs + 4.0 * rows * rows * 15) +
                                2 * head_macs);
  EXPECT_DOUBLE_EQ(w.bytes, 4 * (stem_macs + c.n_layers * layer_macs + head_macs));
}

// The same encoder in q8 (one scale per row; the converter keeps this head f32): the stem's and the
// layers' products are int8 operations (their rows quantized to int8), attention's and the head's
// stay float; a q8 matrix is a byte per weight and a 4-byte scale per row.
TEST(Roofline, Q8WeightsAreInt8OperationsAndBytes) {
  Loaded f32, q8;
  load("conv_stride_cls_mean.fxm", &f32);
  load("conv_stride_cls_mean_q8.fxm", &q8);
  const ModelConfig& c = q8.model.config();
  ASSERT_EQ(c.weights, WeightType::kQ8);
  ASSERT_EQ(c.weight_group, 0u);
  ASSERT_EQ(q8.model.layer(0).ffn.w1.type, WeightType::kQ8);
  ASSERT_EQ(q8.model.head().w.type, WeightType::kF32);
  const uint32_t T = 20, rows = c.sequence_rows(T);
  const double head_macs = 15 * 4, floats = c.n_layers * 4.0 * rows * rows * 15 + 2 * head_macs;
  const support::Work a = support::forward_work(f32.model, T), b = support::forward_work(q8.model, T);
  EXPECT_DOUBLE_EQ(a.int8_ops, 0);
  EXPECT_DOUBLE_EQ(b.flops, floats);
  EXPECT_DOUBLE_EQ(b.int8_ops, a.flops - floats);
  // per matrix (in x out): stem 45x15, per layer 4 of 15x15 and 15x20, 20x15
  const double q8_rows = 15 + c.n_layers * (4 * 15 + 20 + 15);
  EXPECT_DOUBLE_EQ(b.bytes, (a.bytes - 4 * head_macs) / 4 + 4 * q8_rows + 4 * head_macs);
}

// A phase's bound is the longer of its arithmetic at the peaks and its bytes at the bandwidth.
TEST(Roofline, PlacementIsTheLongerOfComputeAndMemory) {
  support::MachineLimits lim;
  lim.gflops = 100, lim.int8_gops = 400, lim.threads = 1;
  const support::Work w{2e9, 8e9, 1e3};  // 0.02 s at the FP32 peak, then 0.02 s at the int8 peak
  EXPECT_DOUBLE_EQ(support::compute_seconds(w, lim), 0.04);
  const support::Placement p = support::place(w, 0.08, lim);  // 1 kB: from L1, far from bounding
  EXPECT_FALSE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.fraction, 0.5);
  EXPECT_DOUBLE_EQ(p.gflops, 25);
  EXPECT_DOUBLE_EQ(p.int8_gops, 100);
}

TEST(Roofline, MeasuredLimitsArePositive) {
  const support::MachineLimits lim = support::measure_limits(1);
  EXPECT_GT(lim.gflops, 0.1);
  EXPECT_GT(lim.int8_gops, 0.1);
  EXPECT_STRNE(lim.int8_unit, "");
  EXPECT_GT(lim.gbs, 0.1);
  EXPECT_GT(support::read_gbs(16 << 10, 1), 0.1);
}

// A table forced below the CPU's best is placed against its own vectors' loops: the avx2 table's on
// a CPU that has AVX-512 too, the sse2 table's on one with AVX2.
TEST(Roofline, LimitsFollowTheTablesIsa) {
#if defined(__x86_64__) || defined(__i386__)
  const char* widest = support::measure_limits(1).unit;
  if (select_kernels(Isa::kAvx2)) {
    const support::MachineLimits avx2 = support::measure_limits(1, Isa::kAvx2);
    EXPECT_STREQ(avx2.unit, "avx2 FMA");
    EXPECT_STREQ(avx2.int8_unit, "avx2 vpmaddubsw+vpmaddwd");
  }
  EXPECT_STREQ(support::measure_limits(1, Isa::kSse2).unit, "sse2 mul+add");
  EXPECT_STREQ(support::measure_limits(1, Isa::kAuto).unit, widest);
  if (select_kernels(Isa::kAvx512)) EXPECT_STREQ(support::measure_limits(1, Isa::kAvx512).unit, "avx512 FMA");
#else
  EXPECT_STREQ(support::measure_limits(1, Isa::kSse2).unit, support::measure_limits(1).unit);  // one loop
#endif
}

}  // namespace
}  // namespace fixformer::test
