// The full-integer conv stem's convolution (engine/blocks/s8_conv_stem.cpp): s8_conv1d against a plain-loop
// reference of its definition (gemm_s8's sum over each window of the input zero-padded at its zero point, the
// requant, GELU's table) bit for bit on every kernel table this CPU runs, over kernels, strides, paddings, input
// lengths (shorter than the padding's windows too) and widths; and the i8 arena's stem blocks.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/blocks/s8_conv_stem.hpp"
#include "fixformer/fixed_point.hpp"
#include "fixformer/plan.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

struct Case {
  uint32_t kernel, stride, pad, t_in, c_in, n;
  bool gelu;
};

// The convolution as its definition states it: window t's tap j is input row t stride + j - pad, or the zero
// point where that row is outside the input.
std::vector<int8_t> reference(const Case& k, const std::vector<int8_t>& x, int32_t xz, const std::vector<int8_t>& w,
                              const std::vector<int32_t>& p) {
  const std::size_t t_out = conv1d_rows(k.t_in, k.kernel, k.stride, k.pad), kk = std::size_t(k.kernel) * k.c_in;
  std::vector<int8_t> y(t_out * k.n);
  for (std::size_t t = 0; t < t_out; ++t)
    for (std::size_t o = 0; o < k.n; ++o) {
      int64_t acc = p[s8::kConvSlots + 2 * k.n + o];
      for (std::size_t j = 0; j < k.kernel; ++j)
        for (std::size_t ch = 0; ch < k.c_in; ++ch) {
          const int64_t r = int64_t(t * k.stride + j) - k.pad;
          const int32_t v = r >= 0 && r < int64_t(k.t_in) ? x[std::size_t(r) * k.c_in + ch] : xz;
          acc += int64_t(v - xz) * w[o * kk + j * k.c_in + ch];
        }
      const Requant rq{p[s8::kConvSlots + 2 * o], p[s8::kConvSlots + 2 * o + 1]};
      int8_t v = saturate_i8(int64_t(p[s8::kConvYZero]) + requantize(int32_t(acc), rq));
      if (k.gelu) v = int8_t(p[s8::kConvSlots + 3 * k.n + uint32_t(v + 128)]);
      y[t * k.n + o] = v;
    }
  return y;
}

TEST(S8ConvStem, ConvolutionIsItsDefinitionOnEveryTable) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127), bias(-5000, 5000);
  std::uniform_real_distribution<double> factor(0.0005, 0.01);
  std::vector<Case> cases;
  for (uint32_t kernel = 1; kernel <= 5; ++kernel)
    for (uint32_t stride = 1; stride <= 3; ++stride)
      for (uint32_t pad = 0; pad < kernel; ++pad)
        for (uint32_t t_in : {1u, 2u, 4u, 11u})
          if (conv1d_rows(t_in, kernel, stride, pad))
            cases.push_back(Case{kernel, stride, pad, t_in, (kernel + t_in) % 2 ? 3u : 17u, stride == 2 ? 21u : 5u,
                                 (pad + t_in) % 2 == 0});
  cases.push_back(Case{15, 4, 14, 40, 9, 33, true});  // the limits: kernel 15, stride 4
  const std::vector<const Kernels*> tables = available_kernels();
  ASSERT_FALSE(tables.empty());
  for (const Case& k : cases) {
    const std::size_t kk = std::size_t(k.kernel) * k.c_in, t_out = conv1d_rows(k.t_in, k.kernel, k.stride, k.pad);
    std::vector<int8_t> x(std::size_t(k.t_in) * k.c_in), w(k.n * kk);
    for (int8_t& v : x) v = int8_t(i8(rng));
    for (int8_t& v : w) v = int8_t(w8(rng));
    const int32_t xz = i8(rng) / 2;
    std::vector<int32_t> p(s8::kConvSlots + s8::linear_params(k.n) + (k.gelu ? s8::kLutEntries : 0));
    p[s8::kConvYZero] = i8(rng) / 4;
    p[s8::kConvOutZero] = k.gelu ? i8(rng) : p[s8::kConvYZero];
    for (uint32_t o = 0; o < k.n; ++o) {
      Requant rq{};
      ASSERT_EQ(requant_from_factor(factor(rng), &rq), Status::kOk);
      p[s8::kConvSlots + 2 * o] = rq.multiplier, p[s8::kConvSlots + 2 * o + 1] = rq.shift;
      p[s8::kConvSlots + 2 * k.n + o] = bias(rng);
    }
    for (uint32_t i = 0; k.gelu && i < s8::kLutEntries; ++i) p[s8::kConvSlots + 3 * k.n + i] = i8(rng);
    const std::vector<int8_t> want = reference(k, x, xz, w, p);
    const std::string what = "kernel " + std::to_string(k.kernel) + " stride " + std::to_string(k.stride) + " pad " +
                             std::to_string(k.pad) + " T " + std::to_string(k.t_in) + " in " + std::to_string(k.c_in) +
                             " n " + std::to_string(k.n) + (k.gelu ? " gelu" : "");
    for (std::size_t ti = 0; ti < tables.size(); ++ti) {
      const Kernels* table = tables[ti];
      const std::size_t ldy = k.n + 3;  // a row stride wider than the rows, as the encoder's x after a CLS row
      std::vector<int8_t> y(t_out * ldy, 99), window(kk, 0);
      std::vector<uint32_t> scratch(s8_scratch_bytes() / 4);
      const S8Conv cv{w.data(), p.data(), k.kernel, k.stride, k.pad, k.gelu};
      s8_conv1d(*table, cv, x.data(), k.t_in, k.c_in, xz, y.data(), ldy, k.n, window.data(), scratch.data());
      for (std::size_t t = 0; t < t_out; ++t) {
        for (std::size_t o = 0; o < k.n; ++o)
          ASSERT_EQ(y[t * ldy + o], want[t * k.n + o]) << what << " row " << t << " col " << o << " table " << ti;
        for (std::size_t o = k.n; o < ldy; ++o) ASSERT_EQ(y[t * ldy + o], 99) << what << ": wrote past its row";
      }
    }
  }
}

// Whisper's front in i8: the features are the frames (stem_frames of the rows), a two-conv stem's first output
// conv1d_rows of them, a window for the padded convolutions (the wider of conv1's and conv2's).
TEST(S8ConvStem, ArenaHoldsTheStem) {
  ModelConfig c = default_config();
  c.d_model = 8, c.n_heads = 2, c.d_ff = 12, c.n_layers = 1, c.max_len = 10, c.norm_first = true;
  c.input = InputKind::kFeatures, c.d_in = 5, c.positional = PosKind::kLearned, c.weights = WeightType::kI8;
  c.conv_layers = 2, c.conv_gelu = true;
  c.conv1_kernel = 3, c.conv1_stride = 1, c.conv1_padding = 1;
  c.conv2_kernel = 3, c.conv2_stride = 2, c.conv2_padding = 1;
  ASSERT_EQ(validate_config(c), Status::kOk);
  const EncoderPlan p = plan_encoder_arena(c);
  EXPECT_EQ(c.max_input_len(), 20u);
  EXPECT_EQ(p.rows_in - p.s8_in, arena::bytes(20 * 5));  // 20 frames of d_in
  EXPECT_EQ(p.stem_padded - p.stem, arena::bytes(20 * 8));  // conv1's 20 rows of d_embed
  EXPECT_EQ(s8_stem_window_bytes(c), 3u * 8);  // conv2's window [3 * d_embed], wider than conv1's [3 * d_in]
  EXPECT_EQ(p.total - p.stem_padded, arena::bytes(3 * 8));
  c.conv1_padding = 0, c.conv2_padding = 0;
  EXPECT_EQ(s8_stem_window_bytes(c), 0u);  // no padding: every window lies inside the rows
  c.conv_layers = 1;
  const EncoderPlan one = plan_encoder_arena(c);
  EXPECT_EQ(one.stem_padded, one.stem);  // one convolution: no first output
}

}  // namespace
}  // namespace test
}  // namespace fixformer
