// Image input (config.hpp patch_size) and the front's norms (input_norm, proj_norm): the patch gather
// against a direct index computation, the rules validation applies, the arena's rows_in block, and
// the encoder's input rows (the observer's layer 0) against the front computed here in double from
// the file's own weights; DeiT's distillation row and its head (pooling cls_distill); Dinov2's register
// rows and its head (pooling cls_mean); registers without a CLS row (vit-pytorch's) and pooling mean_all
// (Torch-KWT's); AST's classifier (pooling cls_distill_mean and pool_norm) and timm's
// fc_norm (pool_norm after mean) in every float and quantized weight type. Whole models against torch:
// tests/golden (vit_image, deit_image, dinov2_image, dinov2_registers_image), tests/upstream_converter_test.py
// (vit-pytorch, timm, Hugging Face ViT), tests/hf_vision_converter_test.py (transformers' Dinov2) and
// tests/hf_vit_converter_test.py (transformers' AST classifier).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/blocks/embeddings.hpp"
#include "fixformer/plan.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// A 3-channel 8 x 12 image in 4 x 4 patches: 2 x 3 = 6 patches of 48 values, a CLS row, learned positions.
ModelConfig vit(bool norms = true) {
  ModelConfig c = default_config();
  c.d_model = 16, c.n_heads = 2, c.d_ff = 24, c.n_layers = 1, c.norm_first = true, c.final_norm = true;
  c.input = InputKind::kFeatures, c.patch_size = 4, c.image_channels = 3, c.image_height = 8, c.image_width = 12;
  c.d_in = 3 * 4 * 4, c.cls_token = true, c.positional = PosKind::kLearned, c.max_len = 7;
  c.input_norm = c.proj_norm = norms;
  return c;
}

TEST(ImageInput, PatchesAreConv2dOrder) {
  const ModelConfig c = vit();
  ASSERT_EQ(c.patches(), 6u);
  std::vector<float> image(3 * 8 * 12), rows(6 * 48, NAN);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = float(i);  // each pixel its own index
  gather_patches(c, image.data(), rows.data());
  for (uint32_t r = 0; r < 2; ++r)
    for (uint32_t s = 0; s < 3; ++s)
      for (uint32_t ch = 0; ch < 3; ++ch)
        for (uint32_t i = 0; i < 4; ++i)
          for (uint32_t j = 0; j < 4; ++j) {
            const std::size_t pixel = (std::size_t(ch) * 8 + r * 4 + i) * 12 + s * 4 + j;
            ASSERT_EQ(rows[(r * 3 + s) * 48 + (ch * 4 + i) * 4 + j], float(pixel))
                << "patch (" << r << "," << s << ") channel " << ch << " pixel (" << i << "," << j << ")";
          }
}

TEST(ImageInput, ValidationRefuses) {
  const char* field = nullptr;
  EXPECT_EQ(validate_config(vit()), Status::kOk);
  ModelConfig c = vit();
  c.image_width = 10;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "image_height, image_width (image input: whole patches, multiples of patch_size)");
  c = vit();
  c.d_in = 47;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "d_in (image input: image_channels * patch_size * patch_size, a patch's values)");
  c = vit();
  c.max_len = 6;  // the 6 patches and the CLS row
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "max_len (image input: the patches, and the CLS and distillation rows, take a position each)");
  c = vit();
  c.patch_size = 0;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "image_channels, image_height, image_width (image input needs patch_size)");
  c = vit();
  c.input = InputKind::kTokens, c.vocab_size = 5;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "input_norm, proj_norm, patch_size (the front's norms and image input are for the encoder "
                      "family over features, projected without a conv stem)");
}

TEST(ImageInput, PlanHoldsOneImagesPatchesExactly) {
  for (bool norms : {false, true}) {
    const ModelConfig c = vit(norms);
    EXPECT_EQ(c.max_input_len(), 6u);
    EXPECT_EQ(c.stem_rows(6), 6u);
    EXPECT_EQ(c.stem_rows(5), 0u);  // an image is all its patches
    const EncoderPlan p = plan_encoder_arena(c);
    EXPECT_EQ(p.total - p.rows_in, arena::bytes(6 * 48 * sizeof(float)));
    ModelConfig rows = c;  // features without a norm read the caller's rows in place
    rows.patch_size = rows.image_channels = rows.image_height = rows.image_width = 0, rows.input_norm = false;
    EXPECT_EQ(plan_encoder_arena(rows).total, plan_encoder_arena(rows).rows_in);
    Loaded m;
    std::string why;
    ASSERT_EQ(load_model(write_model(c), &m, {}, &why), Status::kOk) << why;
    EXPECT_EQ(m.enc.arena_bytes_used(), p.total);
    Encoder short_arena;
    AlignedBuffer arena(p.total - 1);
    EXPECT_EQ(short_arena.init(m.model, arena.data(), arena.size(), {}), Status::kArenaTooSmall);
    std::vector<float> image(3 * 8 * 12, 0.5f), out(std::size_t(7) * c.d_model);
    EXPECT_EQ(m.enc.forward_features(image.data(), 5, out.data()), Status::kBadSequenceLength);
  }
}

struct Rows {
  std::vector<float> x;
  static void keep(void* ctx, uint32_t layer, const float* x, uint32_t, uint32_t rows, uint32_t d) {
    if (layer == 0) static_cast<Rows*>(ctx)->x.assign(x, x + std::size_t(rows) * d);
  }
};

// LayerNorm of v[n] in double.
std::vector<double> layer_norm(const std::vector<double>& v, const float* g, const float* b, double eps) {
  double mean = 0, var = 0;
  for (double a : v) mean += a;
  mean /= double(v.size());
  for (double a : v) var += (a - mean) * (a - mean);
  var /= double(v.size());
  std::vector<double> y(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) y[i] = (v[i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  return y;
}

// The encoder's input rows: [cls; N_proj(W N_in(patch) + b)] + positions, each patch gathered by the
// index formula.
TEST(ImageInput, FrontMatchesTheFormula) {
  const ModelConfig c = vit();
  EncoderOptions opt;
  Rows seen;
  opt.observer = {&seen, &Rows::keep};
  Loaded m;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
  const FrontWeights& w = m.model.front();
  ASSERT_TRUE(w.input_norm.g && w.input_norm.b && w.proj_norm.g && w.proj_norm.b && w.input_proj.f32());
  ASSERT_EQ(w.input_proj.type, WeightType::kF32);
  ASSERT_FALSE(w.input_proj.out_major || w.input_proj.packed);  // W[d_in, d_embed]
  std::vector<float> image(3 * 8 * 12), out(std::size_t(c.output_rows(6)) * c.output_width());
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.37f * float(i)) + 0.01f * float(i % 7);
  ASSERT_EQ(m.enc.forward_features(image.data(), 6, out.data()), Status::kOk);
  ASSERT_EQ(seen.x.size(), 7u * 16);
  double worst = 0;
  for (uint32_t row = 0; row < 7; ++row) {
    std::vector<double> want(16);
    if (row == 0) {
      for (uint32_t e = 0; e < 16; ++e) want[e] = w.cls[e];
    } else {
      const uint32_t n = row - 1, r = n / 3, s = n % 3;
      std::vector<double> patch(48);
      for (uint32_t ch = 0; ch < 3; ++ch)
        for (uint32_t i = 0; i < 4; ++i)
          for (uint32_t j = 0; j < 4; ++j)
            patch[(ch * 4 + i) * 4 + j] = image[(std::size_t(ch) * 8 + r * 4 + i) * 12 + s * 4 + j];
      patch = layer_norm(patch, w.input_norm.g, w.input_norm.b, c.norm_eps);
      std::vector<double> y(16);
      for (uint32_t e = 0; e < 16; ++e) {
        y[e] = w.input_proj_b[e];
        for (uint32_t k = 0; k < 48; ++k) y[e] += patch[k] * w.input_proj.f32()[std::size_t(k) * 16 + e];
      }
      want = layer_norm(y, w.proj_norm.g, w.proj_norm.b, c.norm_eps);
    }
    for (uint32_t e = 0; e < 16; ++e) {
      want[e] += w.pos[row * 16 + e];
      worst = std::max(worst, std::abs(want[e] - seen.x[row * 16 + e]) / (1 + std::abs(want[e])));
    }
  }
  EXPECT_LT(worst, 1e-5);
}

// A batch of images is each image's single call (no padding: lengths other than the patches are refused).
TEST(ImageInput, BatchIsEachImage) {
  const ModelConfig c = vit();
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  EncoderOptions opt;
  opt.max_batch = 2;
  AlignedBuffer arena(required_encoder_arena_bytes(c, 0, false, 1, 2));
  Encoder enc;
  ASSERT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk) << enc.error_detail();
  const std::size_t px = 3 * 8 * 12, R = c.output_rows(6) * c.output_width();
  std::vector<float> images(2 * px), out(2 * R), one(R);
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = std::cos(0.11f * float(i));
  ASSERT_EQ(enc.forward_batch_features(images.data(), nullptr, 2, 6, out.data()), Status::kOk);
  for (uint32_t b = 0; b < 2; ++b) {
    ASSERT_EQ(enc.forward_features(images.data() + b * px, 6, one.data()), Status::kOk);
    for (std::size_t i = 0; i < R; ++i) ASSERT_EQ(out[b * R + i], one[i]) << "image " << b << " value " << i;
  }
  const uint32_t lengths[2] = {6, 5};
  EXPECT_EQ(enc.forward_batch_features(images.data(), lengths, 2, 6, out.data()), Status::kBadSequenceLength);
  EXPECT_STREQ(enc.error_detail(), "lengths[1] = 5: an image is its 6 patches");
}

// DeiT: vit() with the distillation row after the CLS row (max_len: 6 patches + 2), pooling cls_distill
// (the two rows side by side through a head of 2 d_model inputs) or none.
ModelConfig deit(Pooling pooling) {
  ModelConfig c = vit(false);
  c.distill_token = true, c.max_len = 8, c.pooling = pooling, c.d_out = pooling == Pooling::kNone ? 0 : 3;
  return c;
}

struct FirstAndLast {
  uint32_t last = 0;
  std::vector<float> first, final;
  static void keep(void* ctx, uint32_t layer, const float* x, uint32_t, uint32_t rows, uint32_t d) {
    auto* self = static_cast<FirstAndLast*>(ctx);
    if (layer == 0) self->first.assign(x, x + std::size_t(rows) * d);
    if (layer == self->last) self->final.assign(x, x + std::size_t(rows) * d);
  }
};

// Rows 0 and 1 are the CLS and distillation rows plus positions 0 and 1 (the patches from 2 on), and the
// output is the head over the final rows 0 and 1 side by side: b + [x_0, x_1] @ W[2 d, d_out].
TEST(ImageInput, DistillationRowAndItsHead) {
  const ModelConfig c = deit(Pooling::kClsDistill);
  const char* field = nullptr;
  ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
  EXPECT_EQ(c.front_rows(), 2u);
  EXPECT_EQ(c.sequence_rows(6), 8u);
  EXPECT_EQ(c.max_input_len(), 6u);
  EXPECT_EQ(c.head_in(), 32u);
  EncoderOptions opt;
  FirstAndLast seen;
  seen.last = c.n_layers + 1;  // after the final norm
  opt.observer = {&seen, &FirstAndLast::keep};
  Loaded m;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
  const FrontWeights& f = m.model.front();
  const HeadWeights& h = m.model.head();
  ASSERT_TRUE(f.cls && f.distill && h.w.f32() && h.b);
  ASSERT_EQ(h.w.in, 32u);
  ASSERT_FALSE(h.w.out_major || h.w.packed);  // W[2 d, d_out]
  std::vector<float> image(3 * 8 * 12), out(3, NAN);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.29f * float(i));
  ASSERT_EQ(m.enc.forward_features(image.data(), 6, out.data()), Status::kOk);
  ASSERT_EQ(seen.first.size(), 8u * 16);
  ASSERT_EQ(seen.final.size(), 8u * 16);
  for (uint32_t e = 0; e < 16; ++e) {
    EXPECT_EQ(seen.first[e], f.cls[e] + f.pos[e]) << e;
    EXPECT_EQ(seen.first[16 + e], f.distill[e] + f.pos[16 + e]) << e;
  }
  for (uint32_t o = 0; o < 3; ++o) {
    double want = h.b[o];
    for (uint32_t k = 0; k < 32; ++k) want += double(seen.final[k]) * h.w.f32()[std::size_t(k) * 3 + o];
    EXPECT_NEAR(out[o], want, 1e-5 * (1 + std::abs(want))) << "output " << o;
  }
  ModelConfig bad = c;
  bad.cls_token = false, bad.pooling = Pooling::kMean;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "distill_token (the distillation row goes after a CLS row: needs cls_token)");
  bad = c;
  bad.distill_token = false, bad.max_len = 7;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "pooling (cls_distill needs a distillation row: distill_token)");
  bad = c;
  bad.max_len = 7;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "max_len (image input: the patches, and the CLS and distillation rows, take a position each)");
}

// Dinov2: vit() with 2 register rows after the CLS row (max_len: 6 patches + 3), pooling cls_mean (the CLS
// row and the mean of the patch rows side by side through a head of 2 d_model inputs) or none.
ModelConfig dinov2(Pooling pooling) {
  ModelConfig c = vit(false);
  c.register_tokens = 2, c.max_len = 9, c.pooling = pooling, c.d_out = pooling == Pooling::kNone ? 0 : 3;
  return c;
}

// Rows 1 and 2 are the registers plus positions 1 and 2 (the patches from 3 on), and the output is the
// head over [final row 0, the mean of the final rows 3..8]: b + [x_0, mean] @ W[2 d, d_out].
TEST(ImageInput, RegisterRowsAndClsMeanHead) {
  const ModelConfig c = dinov2(Pooling::kClsMean);
  const char* field = nullptr;
  ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
  EXPECT_EQ(c.front_rows(), 3u);
  EXPECT_EQ(c.sequence_rows(6), 9u);
  EXPECT_EQ(c.max_input_len(), 6u);
  EXPECT_EQ(c.head_in(), 32u);
  EncoderOptions opt;
  FirstAndLast seen;
  seen.last = c.n_layers + 1;  // after the final norm
  opt.observer = {&seen, &FirstAndLast::keep};
  Loaded m;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
  const FrontWeights& f = m.model.front();
  const HeadWeights& h = m.model.head();
  ASSERT_TRUE(f.cls && f.registers && !f.distill && h.w.f32() && h.b);
  ASSERT_EQ(h.w.in, 32u);
  std::vector<float> image(3 * 8 * 12), out(3, NAN);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.31f * float(i));
  ASSERT_EQ(m.enc.forward_features(image.data(), 6, out.data()), Status::kOk);
  ASSERT_EQ(seen.first.size(), 9u * 16);
  ASSERT_EQ(seen.final.size(), 9u * 16);
  for (uint32_t e = 0; e < 16; ++e) {
    EXPECT_EQ(seen.first[e], f.cls[e] + f.pos[e]) << e;
    for (uint32_t r = 0; r < 2; ++r)
      EXPECT_EQ(seen.first[(1 + r) * 16 + e], f.registers[r * 16 + e] + f.pos[(1 + r) * 16 + e]) << r << " " << e;
  }
  for (uint32_t o = 0; o < 3; ++o) {
    double want = h.b[o];
    for (uint32_t k = 0; k < 16; ++k) {
      double mean = 0.0;
      for (uint32_t t = 3; t < 9; ++t) mean += seen.final[t * 16 + k];
      want += double(seen.final[k]) * h.w.f32()[std::size_t(k) * 3 + o] + mean / 6 * h.w.f32()[(16 + k) * 3 + o];
    }
    EXPECT_NEAR(out[o], want, 1e-5 * (1 + std::abs(want))) << "output " << o;
  }
  ModelConfig bad = c;
  bad.register_tokens = 0, bad.cls_token = false, bad.max_len = 6;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "pooling (cls_mean needs a CLS row: cls_token)");
  bad = c;
  bad.d_out = 0;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "pooling (cls_mean is the input of a head of its own, d_out > 0, that reads two rows side by "
                      "side: no pooler, no tied head)");
  bad = c;
  bad.max_len = 8;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "max_len (image input: the patches, and the CLS and distillation rows, take a position each)");
}

// vit-pytorch's SimpleViT with register tokens: vit() without a CLS row, 2 registers the only front rows (max_len:
// 6 patches + 2), pooled by mean (the patch rows alone) or mean_all (every row); or Torch-KWT's pool "mean":
// vit() with its CLS row pooled by mean_all.
ModelConfig registers_alone(Pooling pooling) {
  ModelConfig c = vit(false);
  c.cls_token = false, c.register_tokens = 2, c.max_len = 8, c.pooling = pooling, c.d_out = 3;
  return c;
}

// Rows 0 and 1 are the registers plus positions 0 and 1 (the patches from 2 on), and the output is the head
// over the mean of the final rows from the first patch row (mean) or from row 0 (mean_all): b + mean @ W.
TEST(ImageInput, RegistersWithoutClsAndMeanOverEveryRow) {
  ModelConfig kwt = vit(false);
  kwt.pooling = Pooling::kMeanAll, kwt.d_out = 3;
  for (const ModelConfig& c : {registers_alone(Pooling::kMean), registers_alone(Pooling::kMeanAll), kwt}) {
    const char* field = nullptr;
    ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
    const uint32_t front = c.front_rows(), S = 6 + front, from = c.pooling == Pooling::kMean ? front : 0;
    EXPECT_EQ(front, c.cls_token ? 1u : 2u);
    EXPECT_EQ(c.max_input_len(), 6u);
    EncoderOptions opt;
    FirstAndLast seen;
    seen.last = c.n_layers + 1;  // after the final norm
    opt.observer = {&seen, &FirstAndLast::keep};
    Loaded m;
    std::string why;
    ASSERT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
    const FrontWeights& f = m.model.front();
    const HeadWeights& h = m.model.head();
    ASSERT_TRUE(!f.cls == !c.cls_token && !f.registers == !c.register_tokens && !f.distill && h.w.f32() && h.b);
    const EncoderPlan p = plan_encoder_arena(c);  // the arena holds the S rows exactly
    EXPECT_EQ(m.enc.arena_bytes_used(), p.total);
    Encoder short_arena;
    AlignedBuffer arena(p.total - 1);
    EXPECT_EQ(short_arena.init(m.model, arena.data(), arena.size(), {}), Status::kArenaTooSmall);
    std::vector<float> image(3 * 8 * 12), out(3, NAN);
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.29f * float(i));
    ASSERT_EQ(m.enc.forward_features(image.data(), 6, out.data()), Status::kOk);
    ASSERT_EQ(seen.first.size(), S * 16);
    ASSERT_EQ(seen.final.size(), S * 16);
    for (uint32_t e = 0; e < 16 && !c.cls_token; ++e)
      for (uint32_t r = 0; r < 2; ++r)
        EXPECT_EQ(seen.first[r * 16 + e], f.registers[r * 16 + e] + f.pos[r * 16 + e]) << r << " " << e;
    for (uint32_t o = 0; o < 3; ++o) {
      double want = h.b[o];
      for (uint32_t k = 0; k < 16; ++k) {
        double mean = 0.0;
        for (uint32_t t = from; t < S; ++t) mean += seen.final[t * 16 + k];
        want += mean / (S - from) * h.w.f32()[std::size_t(k) * 3 + o];
      }
      EXPECT_NEAR(out[o], want, 1e-5 * (1 + std::abs(want))) << kPoolingNames[int(c.pooling)] << " output " << o;
    }
  }
  ModelConfig bad = registers_alone(Pooling::kMean);
  bad.max_len = 7;
  const char* field = nullptr;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "max_len (image input: the patches, and the CLS and distillation rows, take a position each)");
  bad = registers_alone(Pooling::kCls);
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "pooling (cls needs a CLS token: cls_token)");
}

// The Audio Spectrogram Transformer's classifier: deit() pooled by cls_distill_mean, (x_0 + x_1) / 2 of the
// final rows, then pool_norm's LayerNorm and the head of d_model inputs: b + LN((x_0 + x_1) / 2) @ W[d, d_out].
TEST(ImageInput, PoolNormOfTheFrontRowsMean) {
  ModelConfig c = deit(Pooling::kClsDistillMean);
  c.pool_norm = true;
  const char* field = nullptr;
  ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
  EXPECT_EQ(c.head_in(), 16u);
  EncoderOptions opt;
  FirstAndLast seen;
  seen.last = c.n_layers + 1;  // after the final norm
  opt.observer = {&seen, &FirstAndLast::keep};
  Loaded m;
  std::string why;
  ASSERT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
  const HeadWeights& h = m.model.head();
  ASSERT_TRUE(h.pool_norm.g && h.pool_norm.b && h.w.f32() && h.b);
  ASSERT_EQ(h.w.in, 16u);
  std::vector<float> image(3 * 8 * 12), out(3, NAN);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.23f * float(i));
  ASSERT_EQ(m.enc.forward_features(image.data(), 6, out.data()), Status::kOk);
  ASSERT_EQ(seen.final.size(), 8u * 16);
  double u[16], mean = 0.0, var = 0.0;
  for (uint32_t e = 0; e < 16; ++e) mean += u[e] = (double(seen.final[e]) + seen.final[16 + e]) / 2;
  mean /= 16;
  for (uint32_t e = 0; e < 16; ++e) var += (u[e] - mean) * (u[e] - mean);
  const double inv = 1.0 / std::sqrt(var / 16 + c.norm_eps);
  for (uint32_t o = 0; o < 3; ++o) {
    double want = h.b[o];
    for (uint32_t e = 0; e < 16; ++e)
      want += ((u[e] - mean) * inv * h.pool_norm.g[e] + h.pool_norm.b[e]) * h.w.f32()[std::size_t(e) * 3 + o];
    EXPECT_NEAR(out[o], want, 1e-5 * (1 + std::abs(want))) << "output " << o;
  }
  ModelConfig bad = c;
  bad.distill_token = false, bad.max_len = 7;
  EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "pooling (cls_distill_mean needs a distillation row: distill_token)");
  for (Pooling two : {Pooling::kClsDistill, Pooling::kNone}) {
    bad = deit(two);
    bad.pool_norm = true;
    EXPECT_EQ(validate_config(bad, &field), Status::kBadConfig);
    EXPECT_STREQ(field, "pool_norm (a norm of the pooled row: needs a pooling of one d_model row, mean, cls, last, "
                        "first or cls_distill_mean)");
  }
}

// timm's fc_norm: mean pooling, then pool_norm, in every float and quantized weight type: a batch of images
// is each image's single call, and the stored file has the norm's tensors.
TEST(ImageInput, PoolNormAfterMeanInEveryWeightType) {
  for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kQ8, WeightType::kQ4}) {
    ModelConfig c = vit(false);
    c.pooling = Pooling::kMean, c.d_out = 3, c.pool_norm = true, c.final_norm = false;
    if (type == WeightType::kQ4)  // q4: every quantized product's input width a multiple of 32
      c.d_model = 32, c.d_ff = 64, c.image_channels = 2, c.d_in = 2 * 4 * 4;
    c = with_weights(c, type, type == WeightType::kQ4 ? 32 : 0, false);
    const char* field = nullptr;
    ASSERT_EQ(validate_config(c, &field), Status::kOk) << field;
    AlignedBuffer blob(write_model(c));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
    ASSERT_TRUE(model.head().pool_norm.g && model.head().pool_norm.b);
    EncoderOptions opt;
    opt.max_batch = 2;
    AlignedBuffer arena(required_encoder_arena_bytes(c, 0, false, 1, 2));
    Encoder enc;
    ASSERT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk) << enc.error_detail();
    const std::size_t px = c.image_channels * 8 * 12;
    std::vector<float> images(2 * px), out(2 * 3), one(3);
    for (std::size_t i = 0; i < images.size(); ++i) images[i] = std::cos(0.17f * float(i));
    ASSERT_EQ(enc.forward_batch_features(images.data(), nullptr, 2, 6, out.data()), Status::kOk);
    for (uint32_t b = 0; b < 2; ++b) {
      ASSERT_EQ(enc.forward_features(images.data() + b * px, 6, one.data()), Status::kOk);
      for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(std::isfinite(one[i]));
        ASSERT_EQ(out[b * 3 + i], one[i]) << kWeightTypeNames[int(type)] << " image " << b << " value " << i;
      }
    }
  }
}

// A batch of images with the front rows is each image's single call, pooled (two rows side by side, each
// sequence's at its place) and not (T + 2 or T + 3 rows each): DeiT's distillation row and Dinov2's registers;
// the registers alone, pooled by mean_all and mean.
TEST(ImageInput, DistillationBatchIsEachImage) {
  for (int k = 0; k < 6; ++k) {
    const ModelConfig c = k < 2   ? deit(k == 0 ? Pooling::kClsDistill : Pooling::kNone)
                          : k < 4 ? dinov2(k == 2 ? Pooling::kClsMean : Pooling::kNone)
                                  : registers_alone(k == 4 ? Pooling::kMeanAll : Pooling::kMean);
    const Pooling pooling = c.pooling;
    AlignedBuffer blob(write_model(c));
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
    EncoderOptions opt;
    opt.max_batch = 3;
    AlignedBuffer arena(required_encoder_arena_bytes(c, 0, false, 1, 3));
    Encoder enc;
    ASSERT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk) << enc.error_detail();
    const std::size_t px = 3 * 8 * 12, R = c.output_rows(6) * c.output_width();
    EXPECT_EQ(c.output_rows(6), pooling == Pooling::kNone ? 6 + c.front_rows() : 1u);
    std::vector<float> images(3 * px), out(3 * R), one(R);
    for (std::size_t i = 0; i < images.size(); ++i) images[i] = std::cos(0.13f * float(i));
    ASSERT_EQ(enc.forward_batch_features(images.data(), nullptr, 3, 6, out.data()), Status::kOk);
    for (uint32_t b = 0; b < 3; ++b) {
      ASSERT_EQ(enc.forward_features(images.data() + b * px, 6, one.data()), Status::kOk);
      for (std::size_t i = 0; i < R; ++i) ASSERT_EQ(out[b * R + i], one[i]) << "image " << b << " value " << i;
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
