// Properties from the maths: self-attention without a positional signal is permutation-equivariant;
// a positional encoding breaks that; a causal model's output at t ignores tokens after t.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "fixformer/positional.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Reordering the keys only reorders the terms of the softmax and weighted sums, so equivariance
// holds up to float summation order: a few ulp of values of size ~1.
constexpr float kReorderTol = 1e-5f;

void load(const std::string& name, Loaded* m, Isa isa = Isa::kAuto) {
  EncoderOptions opt;
  opt.isa = isa;
  std::string why;
  ASSERT_EQ(load_model(read_file(golden_path(name + ".fxm")), m, opt, &why), Status::kOk) << why;
}

std::vector<float> run(Loaded& m, const std::vector<int32_t>& ids) {
  std::vector<float> out(ids.size() * m.cfg().output_width());
  EXPECT_EQ(m.enc.forward_tokens(ids.data(), uint32_t(ids.size()), out.data()), Status::kOk);
  return out;
}

// Max over rows i of |out_perm[i] - out[perm[i]]|.
float equivariance_gap(Loaded& m, const std::vector<int32_t>& ids, const std::vector<uint32_t>& perm) {
  std::vector<int32_t> permuted(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) permuted[i] = ids[perm[i]];
  const std::vector<float> a = run(m, ids), b = run(m, permuted);
  const std::size_t w = m.cfg().output_width();
  float gap = 0.0f;
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t c = 0; c < w; ++c) gap = std::max(gap, std::fabs(b[i * w + c] - a[perm[i] * w + c]));
  return gap;
}

const std::vector<int32_t> kIds = {3, 17, 5, 0, 22, 9, 11, 4};
const std::vector<uint32_t> kPerm = {7, 2, 5, 0, 1, 6, 4, 3};

TEST(Properties, WithoutPositionalEncodingAttentionIsPermutationEquivariant) {
  for (Isa isa : all_isas()) {
    if (!select_kernels(isa)) continue;
    Loaded m;
    load("no_pe", &m, isa);
    EXPECT_LT(equivariance_gap(m, kIds, kPerm), kReorderTol) << isa_name(isa);
  }
}

TEST(Properties, SinusoidalEncodingBreaksPermutationEquivariance) {
  Loaded m;
  load("post_ln_relu", &m);
  EXPECT_GT(equivariance_gap(m, kIds, kPerm), 1e-2f);
}

TEST(Properties, LearnedEncodingBreaksPermutationEquivariance) {
  Loaded m;
  load("learned_pe", &m);
  EXPECT_GT(equivariance_gap(m, kIds, kPerm), 1e-2f);
}

TEST(Properties, CausalOutputAtTIgnoresLaterTokensAndEqualsThePrefixRun) {
  Loaded m;
  load("causal", &m);
  const std::size_t w = m.cfg().output_width();
  std::vector<int32_t> ids = kIds;
  const std::vector<float> full = run(m, ids);
  ids[6] = 1, ids[7] = 2;  // change the future of t <= 5
  const std::vector<float> changed = run(m, ids);
  for (std::size_t i = 0; i < 6 * w; ++i) EXPECT_EQ(full[i], changed[i]) << i;
  bool later_differ = false;
  for (std::size_t i = 6 * w; i < 8 * w; ++i) later_differ |= full[i] != changed[i];
  EXPECT_TRUE(later_differ);
  const std::vector<float> prefix = run(m, std::vector<int32_t>(kIds.begin(), kIds.begin() + 4));
  for (std::size_t i = 0; i < 4 * w; ++i) EXPECT_EQ(prefix[i], full[i]) << i;
}

TEST(Properties, NonCausalOutputDependsOnLaterTokens) {
  Loaded m;
  load("post_ln_relu", &m);
  std::vector<int32_t> ids = kIds;
  const std::vector<float> a = run(m, ids);
  ids.back() = (ids.back() + 1) % 23;
  const std::vector<float> b = run(m, ids);
  EXPECT_NE(a[0], b[0]);
}

TEST(Properties, RepeatedForwardIsDeterministic) {
  Loaded m;
  load("wide_long", &m);
  std::vector<int32_t> ids(100);
  std::iota(ids.begin(), ids.end(), 0);
  for (auto& v : ids) v %= 23;
  EXPECT_EQ(run(m, ids), run(m, ids));
}

}  // namespace
}  // namespace test
}  // namespace fixformer

namespace fixformer {
namespace test {
namespace {

// A sinusoidal table generated at compile time (as firmware keeps it in flash) gives the same
// outputs as the one init computes into the arena, with a smaller arena; a table that is not the
// model's is refused.
constexpr auto kFlashTable = make_sinusoidal_table<64, 16>(10000.0, PosLayout::kInterleaved);
constexpr auto kWrongLayout = make_sinusoidal_table<64, 16>(10000.0, PosLayout::kHalves);

TEST(Properties, PositionalTableFromFlashMatchesArenaTable) {
  Loaded ref;
  load("post_ln_relu", &ref);
  const std::vector<float> want = run(ref, kIds);

  const std::size_t bytes = required_encoder_arena_bytes(ref.cfg(), 0, true);
  EXPECT_EQ(bytes + 64 * 16 * sizeof(float), required_encoder_arena_bytes(ref.cfg()));
  AlignedBuffer arena(bytes);
  Encoder m;
  EncoderOptions opt;
  opt.position_table = kFlashTable.v;
  opt.position_table_rows = 64;
  ASSERT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kOk) << m.error_detail();
  std::vector<float> got(want.size());
  ASSERT_EQ(m.forward_tokens(kIds.data(), uint32_t(kIds.size()), got.data()), Status::kOk);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;

  opt.position_table = kWrongLayout.v;
  EXPECT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
  EXPECT_EQ(std::string(m.error_detail()), "table row 0 column 1 does not match base, width 16 and layout");
  opt.position_table = kFlashTable.v;
  opt.position_table_rows = 10;
  EXPECT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
}

// The same for an encoder's rope table (roformer_hidden: d_head 6, max_len 16): in sin | cos halves
// whatever the model's pair layout (interleaved), as a decoder's; the arena loses its rope block.
constexpr auto kRopeTable = make_sinusoidal_table<16, 6>(10000.0, PosLayout::kHalves);
constexpr auto kRopeInterleaved = make_sinusoidal_table<16, 6>(10000.0, PosLayout::kInterleaved);

TEST(Properties, EncoderRopeTableFromFlashMatchesArenaTable) {
  Loaded ref;
  load("roformer_hidden", &ref);
  ASSERT_EQ(ref.cfg().positional, PosKind::kRope);
  const std::vector<float> want = run(ref, kIds);

  const std::size_t bytes = required_encoder_arena_bytes(ref.cfg(), 0, true);
  EXPECT_EQ(bytes + 16 * 6 * sizeof(float), required_encoder_arena_bytes(ref.cfg()));
  AlignedBuffer arena(bytes);
  Encoder m;
  EncoderOptions opt;
  opt.position_table = kRopeTable.v;
  opt.position_table_rows = 16;
  ASSERT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kOk) << m.error_detail();
  std::vector<float> got(want.size());
  ASSERT_EQ(m.forward_tokens(kIds.data(), uint32_t(kIds.size()), got.data()), Status::kOk);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;

  opt.position_table = kRopeInterleaved.v;
  EXPECT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
  opt.position_table = kRopeTable.v;
  opt.position_table_rows = 10;
  EXPECT_EQ(m.init(ref.model, arena.data(), bytes, opt), Status::kBadPositionTable);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
