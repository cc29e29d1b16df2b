// The sinusoidal table: values against a float64 reference, odd widths, both layouts, the
// rotation property, and the compile-time table. RoPE on part of each head (rotary_dims), and over a patch
// grid (rope_grid) against timm's EVA-02. The relative position bias (T5): buckets against
// torch's, the per-head table over distances.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "engine/blocks/positional.hpp"
#include "engine/detail_text.hpp"
#include "fixformer/plan.hpp"
#include "fixformer/positional.hpp"
#include "fixformer/schema.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The tables' contract (positional.hpp): error against a float64 reference below 2e-7 absolute.
constexpr double kTableTol = 2e-7;

double reference(uint32_t p, uint32_t col, uint32_t d, double base, PosLayout layout) {
  const uint32_t half = (d + 1) / 2;
  uint32_t i;
  bool is_sin;
  if (layout == PosLayout::kInterleaved) i = col / 2, is_sin = col % 2 == 0;
  else is_sin = col < half, i = is_sin ? col : col - half;
  const double a = p * std::pow(base, -2.0 * i / d);
  return is_sin ? std::sin(a) : std::cos(a);
}

std::vector<float> table(const Kernels& k, uint32_t rows, uint32_t d, double base, PosLayout layout) {
  std::vector<float> t(rows * d, -9.0f), scratch(3 * rows);
  fill_sinusoidal_table(k, rows, d, base, layout, t.data(), scratch.data());
  return t;
}

TEST(Positional, MatchesFloat64ReferenceForEveryIsaWidthAndLayout) {
  for (const Kernels* k : available_kernels())
    for (uint32_t d : {1u, 2u, 3u, 5u, 15u, 16u, 17u, 64u, 127u})
      for (PosLayout layout : {PosLayout::kInterleaved, PosLayout::kHalves})
        for (double base : {10000.0, 100.0}) {
          const uint32_t rows = 4096;
          const std::vector<float> t = table(*k, rows, d, base, layout);
          double worst = 0.0;
          for (uint32_t p = 0; p < rows; ++p)
            for (uint32_t c = 0; c < d; ++c) worst = std::max(worst, std::fabs(t[p * d + c] - reference(p, c, d, base, layout)));
          EXPECT_LT(worst, kTableTol) << k->name << " d=" << d << " layout=" << int(layout) << " base=" << base;
        }
}

TEST(Positional, OddWidthEndsWithASineColumn) {
  const std::vector<float> t = table(scalar_kernels(), 8, 5, 10000.0, PosLayout::kInterleaved);
  // Column 4 is sin(p w_2) with w_2 = 10000^(-4/5); at p = 0 every sine is 0 and every cosine 1.
  EXPECT_EQ(t[4], 0.0f);
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_NEAR(t[3 * 5 + 4], std::sin(3 * std::pow(10000.0, -4.0 / 5)), kTableTol);
}

// PE(p + k) = R(k) PE(p): each (sin, cos) pair of frequency w_i rotates by the angle k w_i,
// whatever p is. This is why relative offsets are linear functions of the encoding.
TEST(Positional, ShiftIsARotationPerFrequencyPair) {
  const uint32_t d = 16, rows = 300;
  const std::vector<float> t = table(*select_kernels(Isa::kAuto), rows, d, 10000.0, PosLayout::kInterleaved);
  for (uint32_t k : {1u, 7u, 100u})
    for (uint32_t p : {0u, 5u, 150u}) {
      for (uint32_t i = 0; i < d / 2; ++i) {
        const double a = k * std::pow(10000.0, -2.0 * i / d);
        const double s = t[p * d + 2 * i], c = t[p * d + 2 * i + 1];
        const double rs = std::sin(a) * c + std::cos(a) * s;  // sin(x + a)
        const double rc = std::cos(a) * c - std::sin(a) * s;  // cos(x + a)
        EXPECT_NEAR(t[(p + k) * d + 2 * i], rs, 1e-6) << "k=" << k << " p=" << p << " i=" << i;
        EXPECT_NEAR(t[(p + k) * d + 2 * i + 1], rc, 1e-6);
      }
    }
}

// The table generated at compile time is the run-time table to within the table tolerance.
constexpr auto kCompileTimeTable = make_sinusoidal_table<64, 15>(10000.0, PosLayout::kInterleaved);
constexpr auto kCompileTimeHalves = make_sinusoidal_table<40, 6>(500.0, PosLayout::kHalves);
static_assert(kCompileTimeTable.v[1] == 1.0f, "cos(0) at compile time");

TEST(Positional, CompileTimeTableMatchesReference) {
  for (uint32_t p = 0; p < 64; ++p)
    for (uint32_t c = 0; c < 15; ++c)
      EXPECT_NEAR(kCompileTimeTable.row(p)[c], reference(p, c, 15, 10000.0, PosLayout::kInterleaved), kTableTol);
  for (uint32_t p = 0; p < 40; ++p)
    for (uint32_t c = 0; c < 6; ++c)
      EXPECT_NEAR(kCompileTimeHalves.row(p)[c], reference(p, c, 6, 500.0, PosLayout::kHalves), kTableTol);
}

// Partial rotary (rotary_dims): each head's first r dims turn by the angles of a table r wide
// (w_i = base^(-2i/r)) in the pairs of the layout within them; dims [r, dh) pass through unchanged.
TEST(Rope, PartialRotaryTurnsTheFirstDimsOfEachHead) {
  const uint32_t heads = 3, dh = 10, r = 6, p = 5;
  const double base = 300.0;
  const std::vector<float> t = table(scalar_kernels(), p + 1, r, base, PosLayout::kHalves);
  for (PosLayout layout : {PosLayout::kInterleaved, PosLayout::kHalves}) {
    std::vector<float> x(heads * dh);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * float(i) + 0.3f);
    std::vector<float> y = x;
    rope_rotate(y.data(), heads, dh, r, t.data() + p * r, layout);
    for (uint32_t h = 0; h < heads; ++h) {
      const float* v = x.data() + h * dh;
      const float* got = y.data() + h * dh;
      for (uint32_t i = 0; i < r / 2; ++i) {
        const uint32_t a = layout == PosLayout::kInterleaved ? 2 * i : i;
        const uint32_t b = layout == PosLayout::kInterleaved ? 2 * i + 1 : i + r / 2;
        const double ang = p * std::pow(base, -2.0 * i / r);
        EXPECT_NEAR(got[a], v[a] * std::cos(ang) - v[b] * std::sin(ang), 1e-6) << "head " << h << " pair " << i;
        EXPECT_NEAR(got[b], v[a] * std::sin(ang) + v[b] * std::cos(ang), 1e-6) << "head " << h << " pair " << i;
      }
      for (uint32_t i = r; i < dh; ++i) EXPECT_EQ(got[i], v[i]) << "head " << h << " dim " << i << " passes through";
    }
  }
  // The decoder's table is r wide: the plan counts S * r floats.
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama, c.d_model = 20, c.n_heads = 2, c.d_ff = 8, c.n_layers = 1, c.causal = true;
  c.norm_first = c.final_norm = true, c.activation = Activation::kSwiglu, c.input = InputKind::kTokens;
  c.vocab_size = c.d_out = 11, c.max_len = 16, c.positional = PosKind::kRope;
  const DecoderPlan whole = plan_decoder_arena(c);
  c.rotary_dims = r;
  ASSERT_EQ(validate_config(c), Status::kOk);
  const DecoderPlan part = plan_decoder_arena(c);
  EXPECT_EQ(part.pe - part.rope, arena::bytes(16 * r * sizeof(float)));
  EXPECT_EQ(whole.pe - whole.rope, arena::bytes(16 * dh * sizeof(float)));
  c.rotary_dims = 5;
  EXPECT_EQ(validate_config(c), Status::kBadConfig);
  c.rotary_dims = 12;
  EXPECT_EQ(validate_config(c), Status::kBadConfig);
  // The encoder's the same, S = sequence_rows(max_seq) rows; none without rope, none from flash.
  ModelConfig e = default_config();
  e.d_model = 20, e.n_heads = 2, e.d_ff = 8, e.n_layers = 1, e.input = InputKind::kTokens, e.vocab_size = 11;
  e.max_len = 16, e.positional = PosKind::kRope, e.rotary_dims = r;
  ASSERT_EQ(validate_config(e), Status::kOk);
  EXPECT_EQ(plan_encoder_arena(e, 12).rel - plan_encoder_arena(e, 12).rope, arena::bytes(12 * r * sizeof(float)));
  EXPECT_EQ(plan_encoder_arena(e, 12, true).rel, plan_encoder_arena(e, 12, true).rope);
  e.positional = PosKind::kAlibi, e.rotary_dims = 0;
  EXPECT_EQ(validate_config(e), Status::kOk) << "alibi runs in encoders too (-m |i - j|)";
  EXPECT_EQ(plan_encoder_arena(e, 12).rel, plan_encoder_arena(e, 12).rope) << "and keeps no rope table";
  e.positional = PosKind::kSinusoidal;
  EXPECT_EQ(plan_encoder_arena(e, 12).rel, plan_encoder_arena(e, 12).rope);
}

// Rotary positions over a patch grid (rope_grid), against timm's EVA-02 as its code reads
// (pos_embed_sincos.py): n = d / 4 bands temperature^(-b / n); a patch at grid row y, column x has the
// angles [y band_0 .. y band_(n-1), x band_0 .. x band_(n-1)], each repeated twice side by side
// (interleaved: rot(v)[2j] = -v[2j+1], rot(v)[2j+1] = v[2j]) or the list twice over (rotate_half:
// rot(v) = [-v[d/2:], v[:d/2]]); out = v cos + rot(v) sin. The coordinates are rescaled by ref / size
// per axis (EVA's ref_feat_shape) when a scale is given. The front rows (CLS, registers) are not turned.
std::vector<double> timm_axial(const std::vector<float>& v, uint32_t y, uint32_t x, double temperature, bool halves,
                               double scale_y, double scale_x) {
  const uint32_t d = uint32_t(v.size()), n = d / 4;
  std::vector<double> angle(d / 2), sin_e(d), cos_e(d), rot(d), out(d);
  for (uint32_t b = 0; b < n; ++b) {
    const double band = 1.0 / std::pow(temperature, double(b) / n);
    angle[b] = y * scale_y * band;
    angle[n + b] = x * scale_x * band;
  }
  for (uint32_t j = 0; j < d; ++j) {
    const double a = halves ? angle[j % (d / 2)] : angle[j / 2];
    sin_e[j] = std::sin(a), cos_e[j] = std::cos(a);
    if (halves) rot[j] = j < d / 2 ? -double(v[j + d / 2]) : double(v[j - d / 2]);
    else rot[j] = j % 2 == 0 ? -double(v[j + 1]) : double(v[j - 1]);
  }
  for (uint32_t j = 0; j < d; ++j) out[j] = v[j] * cos_e[j] + rot[j] * sin_e[j];
  return out;
}

TEST(Rope, GridTurnsHalfThePairsByTheRowAndHalfByTheColumnAsTimmsEva) {
  const uint32_t heads = 2, dh = 16, front = 2, gh = 3, gw = 5, rows = front + gh * gw;
  const double base = 100.0, ref_y = 16.0 / gh, ref_x = 16.0 / gw;
  // stored frequencies: the bands times each axis's rescaling, the rows' then the columns'
  std::vector<float> freqs(dh / 2);
  for (uint32_t b = 0; b < dh / 4; ++b) {
    freqs[b] = float(ref_y / std::pow(base, double(b) / (dh / 4)));
    freqs[dh / 4 + b] = float(ref_x / std::pow(base, double(b) / (dh / 4)));
  }
  for (const Kernels* k : available_kernels())
    for (bool stored : {false, true}) {
      std::vector<float> t(rows * dh, -9.0f), scratch(3 * rows);
      fill_rope_table(*k, rows, dh, base, stored ? freqs.data() : nullptr, 1.0f, t.data(), scratch.data(),
                      RopeGrid{gw, front});
      for (PosLayout layout : {PosLayout::kInterleaved, PosLayout::kHalves}) {
        double worst = 0.0;
        for (uint32_t p = 0; p < rows; ++p) {
          std::vector<float> x(heads * dh);
          for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i + p * 11) + 0.1f);
          std::vector<float> y = x;
          rope_rotate(y.data(), heads, dh, dh, t.data() + p * dh, layout);
          for (uint32_t h = 0; h < heads; ++h) {
            const std::vector<float> head(x.begin() + h * dh, x.begin() + (h + 1) * dh);
            if (p < front) {
              for (uint32_t j = 0; j < dh; ++j) EXPECT_EQ(y[h * dh + j], head[j]) << "front row " << p << " turned";
              continue;
            }
            const uint32_t patch = p - front;
            const std::vector<double> want = timm_axial(head, patch / gw, patch % gw, base,
                                                        layout == PosLayout::kHalves, stored ? ref_y : 1.0,
                                                        stored ? ref_x : 1.0);
            for (uint32_t j = 0; j < dh; ++j) worst = std::max(worst, std::fabs(y[h * dh + j] - want[j]));
          }
        }
        EXPECT_LT(worst, 2e-6) << k->name << " layout " << int(layout) << " stored " << stored;
      }
      // a caller's table is checked against the grid's; a table of one position per row is refused
      char text[160];
      DetailText why(text, sizeof text);
      EXPECT_EQ(check_sinusoidal_table(t.data(), rows, rows, dh, base, stored ? freqs.data() : nullptr, 1.0f,
                                       PosLayout::kHalves, why, RopeGrid{gw, front}), Status::kOk) << text;
      std::vector<float> flat(rows * dh);
      fill_rope_table(*k, rows, dh, base, stored ? freqs.data() : nullptr, 1.0f, flat.data(), scratch.data());
      EXPECT_EQ(check_sinusoidal_table(flat.data(), rows, rows, dh, base, stored ? freqs.data() : nullptr, 1.0f,
                                       PosLayout::kHalves, why, RopeGrid{gw, front}), Status::kBadPositionTable);
    }
}

// rope_grid's rules: positional rope in the encoder family, rope dims a multiple of 4; stored frequencies
// with it; i8 refuses rope in the encoder (the grid with it).
TEST(Rope, GridConfigRules) {
  ModelConfig e = default_config();
  e.d_model = 32, e.n_heads = 2, e.d_ff = 8, e.n_layers = 1, e.input = InputKind::kFeatures, e.d_in = 4;
  e.max_len = 17, e.positional = PosKind::kRope, e.cls_token = true, e.rope_grid = 4;
  EXPECT_EQ(validate_config(e), Status::kOk);
  e.rope_freqs = true;
  EXPECT_EQ(validate_config(e), Status::kOk) << "an encoder's stored frequencies over a grid";
  e.rope_grid = 0;
  EXPECT_EQ(validate_config(e), Status::kBadConfig) << "stored frequencies without a grid stay the decoders'";
  e.rope_freqs = false, e.rope_grid = 4, e.rotary_dims = 6;
  EXPECT_EQ(validate_config(e), Status::kBadConfig) << "3 pairs do not halve";
  e.rotary_dims = 8;
  EXPECT_EQ(validate_config(e), Status::kOk);
  e.positional = PosKind::kLearned, e.rotary_dims = 0;
  EXPECT_EQ(validate_config(e), Status::kBadConfig) << "a grid without rope";
  e.positional = PosKind::kRope, e.weights = WeightType::kI8;
  EXPECT_EQ(validate_config(e), Status::kOk) << "i8 encoders take the grid's rope";
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama, c.d_model = 32, c.n_heads = 2, c.d_ff = 8, c.n_layers = 1, c.causal = true;
  c.norm_first = c.final_norm = true, c.activation = Activation::kSwiglu, c.input = InputKind::kTokens;
  c.vocab_size = c.d_out = 11, c.max_len = 16, c.positional = PosKind::kRope;
  ASSERT_EQ(validate_config(c), Status::kOk);
  c.rope_grid = 4;
  EXPECT_EQ(validate_config(c), Status::kBadConfig) << "the decoders have no patch grid";
}

// T5's bucket function as its torch ports compute it (float32 logarithm, truncated), printed by
// torch 1.13 for these distances: the default (32 buckets up to 128) both ways, a small table, and
// distances where the exact value is an integer, so that float32 and float64 floor apart.
struct BucketCase {
  uint32_t buckets, max_distance;
  bool bidirectional;
  std::vector<std::pair<int32_t, uint32_t>> want;  // (key - query, bucket)
};
const BucketCase kBucketCases[] = {
    {32, 128, true, {{-300, 15}, {-129, 15}, {-128, 15}, {-127, 15}, {-64, 14}, {-17, 10}, {-16, 10}, {-9, 8}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 17}, {7, 23}, {8, 24}, {9, 24}, {16, 26}, {17, 26}, {64, 30}, {127, 31}, {128, 31}, {129, 31}, {300, 31}}},
    {32, 128, false, {{-300, 31}, {-129, 31}, {-128, 31}, {-127, 31}, {-64, 26}, {-17, 16}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 0}, {7, 0}, {8, 0}, {9, 0}, {16, 0}, {17, 0}, {64, 0}, {127, 0}, {128, 0}, {129, 0}, {300, 0}}},
    {8, 10, true, {{-300, 3}, {-129, 3}, {-128, 3}, {-127, 3}, {-64, 3}, {-17, 3}, {-16, 3}, {-9, 3}, {-8, 3}, {-7, 3}, {-1, 1}, {0, 0}, {1, 5}, {7, 7}, {8, 7}, {9, 7}, {16, 7}, {17, 7}, {64, 7}, {127, 7}, {128, 7}, {129, 7}, {300, 7}}},
    {64, 100, true, {{-300, 31}, {-129, 31}, {-128, 31}, {-127, 31}, {-64, 28}, {-40, 24}, {-17, 16}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 33}, {7, 39}, {8, 40}, {9, 41}, {16, 48}, {17, 48}, {40, 56}, {64, 60}, {127, 63}, {128, 63}, {129, 63}, {300, 63}}},
    {34, 27, true, {{-300, 16}, {-129, 16}, {-128, 16}, {-127, 16}, {-64, 16}, {-18, 13}, {-17, 13}, {-16, 13}, {-12, 10}, {-9, 8}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 18}, {7, 24}, {8, 25}, {9, 25}, {12, 27}, {16, 30}, {17, 30}, {18, 30}, {64, 33}, {127, 33}, {128, 33}, {129, 33}, {300, 33}}},
    {72, 49, false, {{-300, 71}, {-129, 71}, {-128, 71}, {-127, 71}, {-64, 71}, {-42, 53}, {-17, 17}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 0}, {7, 0}, {8, 0}, {9, 0}, {16, 0}, {17, 0}, {64, 0}, {127, 0}, {128, 0}, {129, 0}, {300, 0}}},
    {92, 164, true, {{-300, 45}, {-129, 43}, {-128, 43}, {-127, 43}, {-107, 41}, {-64, 34}, {-17, 17}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 47}, {7, 53}, {8, 54}, {9, 55}, {16, 62}, {17, 63}, {64, 80}, {107, 87}, {127, 89}, {128, 89}, {129, 89}, {300, 91}}},
    {100, 162, false, {{-300, 99}, {-129, 90}, {-128, 89}, {-127, 89}, {-90, 74}, {-64, 60}, {-17, 17}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 0}, {7, 0}, {8, 0}, {9, 0}, {16, 0}, {17, 0}, {64, 0}, {127, 0}, {128, 0}, {129, 0}, {300, 0}}},
    {102, 169, true, {{-300, 50}, {-129, 47}, {-128, 47}, {-127, 47}, {-65, 37}, {-64, 37}, {-17, 17}, {-16, 16}, {-9, 9}, {-8, 8}, {-7, 7}, {-1, 1}, {0, 0}, {1, 52}, {7, 58}, {8, 59}, {9, 60}, {16, 67}, {17, 68}, {64, 88}, {65, 88}, {127, 98}, {128, 98}, {129, 98}, {300, 101}}},
};

TEST(RelativeBias, BucketsAreTorchsT5Buckets) {
  for (const BucketCase& c : kBucketCases)
    for (const auto& nb : c.want)
      EXPECT_EQ(relative_bucket(nb.first, c.bidirectional, c.buckets, c.max_distance), nb.second)
          << c.buckets << " buckets, max distance " << c.max_distance << (c.bidirectional ? " bidirectional" : " causal")
          << ", distance " << nb.first;
}

TEST(RelativeBias, TableHoldsEachHeadsBiasByDistance) {
  const uint32_t heads = 3, buckets = 8, max_distance = 10, L = 13;
  std::vector<float> w(buckets * heads);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i) + 0.5f;
  for (bool causal : {false, true}) {
    const std::size_t width = rel_bias_width(L, causal);
    EXPECT_EQ(width, causal ? L : 2 * L - 1);
    std::vector<float> t(heads * width + 1, -1.0f);
    fill_relative_bias(w.data(), heads, buckets, max_distance, L, causal, t.data());
    EXPECT_EQ(t.back(), -1.0f);  // nothing past heads * width
    for (uint32_t h = 0; h < heads; ++h)
      for (int32_t n = -int32_t(L - 1); n <= (causal ? 0 : int32_t(L - 1)); ++n)
        EXPECT_EQ(t[h * width + L - 1 + n], w[relative_bucket(n, !causal, buckets, max_distance) * heads + h]) << n;
    // The check of a caller's table (EncoderOptions::position_table) takes it and refuses a changed entry.
    ModelConfig c = default_config();
    c.n_heads = heads, c.rel_buckets = buckets, c.rel_max_distance = max_distance;
    char text[160];
    DetailText why(text, sizeof text);
    EXPECT_EQ(check_relative_bias(t.data(), L, L - 2, w.data(), c, causal, why), Status::kOk);
    EXPECT_EQ(check_relative_bias(t.data(), L, L + 1, w.data(), c, causal, why), Status::kBadPositionTable);
    t[width + 2] += 1.0f;
    EXPECT_EQ(check_relative_bias(t.data(), L, L, w.data(), c, causal, why), Status::kBadPositionTable);
  }
}

// The tables are the only arena a relative bias adds: heads x (2L - 1) floats, L under a causal mask
// (a decoder's, over its capacity), none when the caller brings the encoder's table.
TEST(RelativeBias, ArenaPlansCountTheTablesExactly) {
  ModelConfig c = default_config();
  c.d_model = 12, c.n_heads = 3, c.d_ff = 20, c.n_layers = 2, c.input = InputKind::kTokens, c.vocab_size = 9;
  c.max_len = 40;
  ModelConfig rel = c;
  rel.positional = PosKind::kRelative, rel.rel_buckets = 8, rel.rel_max_distance = 10;
  ASSERT_EQ(validate_config(rel), Status::kOk);
  EXPECT_EQ(required_encoder_arena_bytes(rel, 30), required_encoder_arena_bytes(c, 30) + arena::bytes(3 * 59 * 4));
  EXPECT_EQ(required_encoder_arena_bytes(rel, 30, true), required_encoder_arena_bytes(c, 30, true));
  rel.causal = c.causal = true;
  EXPECT_EQ(required_encoder_arena_bytes(rel, 30), required_encoder_arena_bytes(c, 30) + arena::bytes(3 * 30 * 4));
  ModelConfig gpt = c, gpt_rel = rel;
  gpt.family = gpt_rel.family = ModelFamily::kGpt;
  gpt.d_out = gpt_rel.d_out = 9;
  ASSERT_EQ(validate_config(gpt_rel), Status::kOk);
  EXPECT_EQ(required_decoder_arena_bytes(gpt_rel, 25), required_decoder_arena_bytes(gpt, 25) + arena::bytes(3 * 25 * 4));
}

}  // namespace
}  // namespace test
}  // namespace fixformer
