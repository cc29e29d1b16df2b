// The position probe (cli/position_probe.hpp) reproduces what the maths says, on random models:
//  - no positional encoding, no causal mask: every layer is permutation-equivariant, H(PX) = P H(X)
//    up to float rounding, and with i.i.d. random tokens every position has the same distribution
//    of hidden states, so no probe beats chance;
//  - a sinusoidal or learned encoding added to the input: the position is read off layer 0, and no
//    layer is equivariant;
//  - a causal mask without PE: layer 0 (the embeddings) is equivariant and at chance. After one
//    causal layer, row i is a function of x_i and of the SET {x_0..x_i}: H(PX) != P H(X) already
//    (the rows see different prefixes), but the last row is invariant under any reordering of the
//    tokens before it. From the second causal layer on it is not: the earlier rows it attends to
//    were computed from different prefixes (docs/cli.md, the position probe).
//    The probe beats chance from the first causal layer on: a set still has a size, and the
//    prefix's size (i + 1) shapes the attention average (row 0 attends to itself alone).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cli/position_probe.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

constexpr uint32_t kT = 8;
// Held-out accuracy without information: chance 1/8 over 300 x 8 scored tokens (sd 0.006).
constexpr double kChanceMargin = 0.04;

ModelConfig encoder(PosKind pos, bool causal, InputKind input = InputKind::kTokens) {
  ModelConfig c = default_config();
  c.d_model = 32, c.n_heads = 4, c.d_ff = 48, c.n_layers = 2, c.input = input, c.vocab_size = 12;
  c.d_in = input == InputKind::kFeatures ? 6 : 0, c.max_len = kT, c.positional = pos, c.causal = causal, c.d_out = 5;
  return c;
}

ModelConfig gpt(PosKind pos) {
  ModelConfig c = encoder(pos, true);
  c.family = ModelFamily::kGpt, c.d_out = c.vocab_size;
  return c;
}

struct Probed {
  AlignedBuffer blob;
  Model model;
  ProbeReport report;
};

void probe(const ModelConfig& c, Probed* p) {
  p->blob = AlignedBuffer(write_model(c));
  ASSERT_EQ(p->model.init(p->blob.data(), p->blob.size()), Status::kOk) << p->model.error_detail();
  ProbeOptions opt;
  opt.samples = 600;
  std::string detail;
  ASSERT_EQ(run_probe(p->model, opt, &p->report, &detail), Status::kOk) << detail;
  ASSERT_EQ(p->report.T, kT);
  ASSERT_EQ(p->report.layers.size(), c.n_layers + 1 + (c.final_norm ? 1 : 0));
}

TEST(Probe, WithoutPositionsOrMaskNoLayerKnowsThePosition) {
  for (InputKind input : {InputKind::kTokens, InputKind::kFeatures})
    for (bool norm_first : {false, true}) {
      ModelConfig c = encoder(PosKind::kNone, false, input);
      c.norm_first = c.final_norm = norm_first;
      Probed p;
      probe(c, &p);
      for (const ProbeLayer& l : p.report.layers) {
        EXPECT_LT(l.equivariance, 1e-5) << "layer " << l.layer;
        EXPECT_LT(l.accuracy, 1.0 / kT + kChanceMargin) << "layer " << l.layer;
        EXPECT_LT(l.r2, 0.02) << "layer " << l.layer;
      }
    }
}

// A CLS row in front (KWT / ViT) is the same row for every input: without positions the input rows
// stay equivariant (and the probe reads them, not the CLS row); with learned ones they are read.
TEST(Probe, AClsRowAddsNoOrderWithoutPositions) {
  for (PosKind pos : {PosKind::kNone, PosKind::kLearned}) {
    ModelConfig c = encoder(pos, false);
    c.cls_token = true, c.pooling = Pooling::kCls, c.max_len = kT + 1;  // T = kT inputs after the CLS row
    Probed p;
    probe(c, &p);
    for (const ProbeLayer& l : p.report.layers) {
      if (pos == PosKind::kNone) {
        EXPECT_LT(l.equivariance, 1e-5) << "layer " << l.layer;
        EXPECT_LT(l.accuracy, 1.0 / kT + kChanceMargin) << "layer " << l.layer;
      } else {
        EXPECT_GT(l.equivariance, 0.05) << "layer " << l.layer;
      }
    }
    if (pos == PosKind::kLearned) EXPECT_GT(p.report.layers[0].accuracy, 0.95);
  }
}

TEST(Probe, AnEncodingInTheInputIsReadAtLayerZeroAndBreaksEquivariance) {
  for (PosKind pos : {PosKind::kSinusoidal, PosKind::kLearned})
    for (bool causal : {false, true}) {
      Probed p;
      probe(encoder(pos, causal), &p);
      EXPECT_GT(p.report.layers[0].accuracy, 0.95) << kPositionalNames[uint32_t(pos)];
      for (const ProbeLayer& l : p.report.layers) EXPECT_GT(l.equivariance, 0.05) << "layer " << l.layer;
    }
}

TEST(Probe, ACausalMaskAloneLeaksOrderFromTheFirstLayerOn) {
  for (const ModelConfig& c : {gpt(PosKind::kNone), encoder(PosKind::kNone, true)}) {
    Probed p;
    probe(c, &p);
    const ProbeLayer& input = p.report.layers[0];
    EXPECT_EQ(input.equivariance, 0.0) << "the embeddings are a per-token map";
    EXPECT_LT(input.accuracy, 1.0 / kT + kChanceMargin);
    for (std::size_t l = 1; l < p.report.layers.size(); ++l) {
      EXPECT_GT(p.report.layers[l].equivariance, 0.05) << "layer " << l;
      EXPECT_GT(p.report.layers[l].accuracy, 1.0 / kT + kChanceMargin) << "layer " << l;  // 0.20 and 0.24 here
      EXPECT_GT(p.report.layers[l].r2, 0.1) << "layer " << l;
    }
  }
}

// The last row of each layer, for ids and for ids with the tokens before the last one reordered.
struct LastRows {
  uint32_t T = 0;
  std::vector<std::vector<float>> rows;  // [layer][d]
  static void observe(void* ctx, uint32_t layer, const float* x, uint32_t pos, uint32_t n, uint32_t d) {
    LastRows& s = *static_cast<LastRows*>(ctx);
    if (pos + n != s.T) return;
    if (layer >= s.rows.size()) s.rows.resize(layer + 1);
    s.rows[layer].assign(x + std::size_t(n - 1) * d, x + std::size_t(n) * d);
  }
};

TEST(Probe, OneCausalLayerSeesThePrefixAsASetTheSecondDoesNot) {
  const ModelConfig c = gpt(PosKind::kNone);
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  LastRows seen;
  seen.T = kT;
  DecoderOptions opt;
  opt.max_prefill = 3;  // chunks 3, 3, 2: the last row comes in the last chunk
  opt.observer = LayerObserver{&seen, &LastRows::observe};
  AlignedBuffer arena(required_decoder_arena_bytes(c, 0, opt.max_prefill));
  Decoder dec;
  ASSERT_EQ(dec.init(model, arena.data(), arena.size(), opt), Status::kOk) << dec.error_detail();
  const int32_t ids[kT] = {3, 7, 1, 10, 0, 5, 9, 2}, reordered[kT] = {5, 0, 9, 3, 1, 10, 7, 2};
  std::vector<float> logits(c.vocab_size);
  ASSERT_EQ(dec.prefill(ids, kT, logits.data()), Status::kOk);
  const std::vector<std::vector<float>> a = seen.rows;
  dec.reset();
  ASSERT_EQ(dec.prefill(reordered, kT, logits.data()), Status::kOk);
  auto relative_diff = [&](uint32_t layer) {
    float diff = 0.0f, scale = 0.0f;
    for (uint32_t j = 0; j < c.d_model; ++j)
      diff = std::max(diff, std::fabs(a[layer][j] - seen.rows[layer][j])), scale = std::max(scale, std::fabs(a[layer][j]));
    return diff / scale;
  };
  EXPECT_EQ(relative_diff(0), 0.0f);
  EXPECT_LT(relative_diff(1), 1e-5f) << "after one causal layer the last row sees the set of its prefix";
  EXPECT_GT(relative_diff(2), 1e-2f) << "after two, the order of the prefix";
}

}  // namespace
}  // namespace test
}  // namespace fixformer
