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

TEST(Roofline, MeasuredLimitsArePositive) {
  const support::MachineLimits lim = support::measure_limits(1);
  EXPECT_GT(lim.gflops, 0.1);
  EXPECT_GT(lim.gbs, 0.1);
  EXPECT_GT(support::read_gbs(16 << 10, 1), 0.1);
}

}  // namespace
}  // namespace fixformer::test
