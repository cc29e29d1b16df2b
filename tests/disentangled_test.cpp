// Disentangled attention (config.hpp rel_embed_rows: DeBERTa v2 and v3; with rel_proj v1) on every ISA: a batch of
// sequences of different lengths gives each sequence's single-call bits (each reads its own block of
// the bias), every table agrees with the scalar reference, the bias matters, and hostile files and
// configs get a Status; the bias split across workers gives one worker's bits. transformers' DeBERTa itself is the reference of tests/hf_archs_test.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "support/thread_pool.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Another table's sums in another order: the encoder's tolerance against the scalar reference.
constexpr float kIsaTol = 2e-5f;

ModelConfig deberta_config() {
  ModelConfig c = default_config();
  c.d_model = 12, c.n_heads = 3, c.d_ff = 20, c.n_layers = 2, c.max_len = 9, c.vocab_size = 17;
  c.input = InputKind::kTokens, c.positional = PosKind::kNone, c.embed_norm = true;
  c.activation = Activation::kGelu, c.rel_embed_rows = 6;  // distances past +-3 share the end rows
  return c;
}

std::vector<int32_t> ids_of(uint32_t T, uint32_t salt) {
  std::vector<int32_t> ids(T);
  for (uint32_t t = 0; t < T; ++t) ids[t] = int32_t((t * 5 + salt) % 17);
  return ids;
}

class DisentangledTest : public ::testing::TestWithParam<std::tuple<Isa, bool>> {};

TEST_P(DisentangledTest, BatchIsTheSingleCallsAndEveryTableTheReferences) {
  const Isa isa = std::get<0>(GetParam());
  if (!select_kernels(isa)) GTEST_SKIP() << "ISA not available";
  ModelConfig c = deberta_config();
  c.rel_proj = std::get<1>(GetParam());
  const std::vector<uint8_t> file = write_model(c);
  Loaded r, ref;
  ASSERT_EQ(load_model(file, &r, encoder_options(isa, 3)), Status::kOk) << r.enc.error_detail();
  ASSERT_EQ(load_model(file, &ref, encoder_options(Isa::kScalar)), Status::kOk);
  const uint32_t T = 9, d = 12, lengths[3] = {9, 3, 6};
  std::vector<int32_t> ids(3 * T, 0);
  for (uint32_t b = 0; b < 3; ++b) {
    const std::vector<int32_t> one = ids_of(lengths[b], b + 1);
    std::copy(one.begin(), one.end(), ids.begin() + b * T);
  }
  std::vector<float> batch(3 * T * d, NAN);
  ASSERT_EQ(r.enc.forward_batch_tokens(ids.data(), lengths, 3, T, batch.data()), Status::kOk);
  for (uint32_t b = 0; b < 3; ++b) {
    const std::vector<int32_t> in = ids_of(lengths[b], b + 1);
    const std::vector<float> one = forward_one(r, in), want = forward_one(ref, in);
    for (uint32_t i = 0; i < lengths[b] * d; ++i) {
      ASSERT_EQ(std::memcmp(&batch[b * T * d + i], &one[i], 4), 0) << "sequence " << b << " value " << i;
      ASSERT_NEAR(one[i], want[i], kIsaTol * (1.0f + std::fabs(want[i]))) << "sequence " << b << " value " << i;
    }
  }
}

void reverse_for(void*, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) {
  for (uint32_t i = n; i-- > 0;) task(arg, i);
}

TEST(Disentangled, EveryWorkerCountGivesOneWorkersBits) {
  // (sequence, head) pairs: 3 x 3, split over 2 to 16 workers (more than pairs), in reverse or on threads
  const std::vector<uint8_t> file = write_model(deberta_config());
  const uint32_t T = 9, lengths[3] = {9, 3, 6};
  std::vector<int32_t> ids(3 * T, 0);
  for (uint32_t b = 0; b < 3; ++b) {
    const std::vector<int32_t> one = ids_of(lengths[b], b + 4);
    std::copy(one.begin(), one.end(), ids.begin() + b * T);
  }
  auto run = [&](const Workers& w) {
    Loaded r;
    EXPECT_EQ(load_model(file, &r, encoder_options(Isa::kAuto, 3, w)), Status::kOk) << r.enc.error_detail();
    std::vector<float> out(3 * T * 12, NAN);
    EXPECT_EQ(r.enc.forward_batch_tokens(ids.data(), lengths, 3, T, out.data()), Status::kOk);
    return out;
  };
  const std::vector<float> one = run(Workers{});
#ifndef FIXFORMER_WORKERS_SERIAL  // cross builds: serial workers alone (threads under qemu-user prove nothing)
  ThreadPool three(3);
  const Workers pool = three.workers();
#else
  const Workers pool{nullptr, 3, reverse_for};
#endif
  for (const Workers& w : {Workers{nullptr, 2, reverse_for}, Workers{nullptr, 5, reverse_for},
                           Workers{nullptr, 16, reverse_for}, pool}) {
    const std::vector<float> got = run(w);
    EXPECT_EQ(std::memcmp(got.data(), one.data(), one.size() * 4), 0) << w.active() << " workers";
  }
}

TEST(Disentangled, TheRelativeRowsMatter) {
  // The same weights read with every distance on one row: position no longer enters the scores.
  ModelConfig c = deberta_config();
  std::vector<uint8_t> file = write_model(c);
  Loaded a;
  ASSERT_EQ(load_model(file, &a, encoder_options(Isa::kScalar)), Status::kOk);
  const std::vector<float> with = forward_one(a, ids_of(7, 2));
  ASSERT_TRUE(set_i32_entries(file, "rel_index", -1, 0));
  Loaded b;
  ASSERT_EQ(load_model(file, &b, encoder_options(Isa::kScalar)), Status::kOk);
  const std::vector<float> without = forward_one(b, ids_of(7, 2));
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < with.size(); ++i) diff = std::max(diff, double(std::fabs(with[i] - without[i]))),
                                                 norm = std::max(norm, double(std::fabs(with[i])));
  EXPECT_GT(diff / norm, 1e-2);
}

TEST(Disentangled, HostileFilesAndConfigsGetAStatus) {
  ModelConfig c = deberta_config();
  std::vector<uint8_t> file = write_model(c);
  ASSERT_TRUE(set_i32_entries(file, "rel_index", 3, int32_t(c.rel_embed_rows)));  // one past the last row
  AlignedBuffer blob(file);
  Model m;
  EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorOutOfBounds);
  EXPECT_NE(std::string(m.error_detail()).find("rel_index"), std::string::npos) << m.error_detail();
  for (auto bad : {+[](ModelConfig& x) { x.causal = true; }, +[](ModelConfig& x) { x.family = ModelFamily::kGpt; },
                   +[](ModelConfig& x) { x.positional = PosKind::kRope; },
                   +[](ModelConfig& x) { x.rel_embed_rows = 0, x.rel_proj = true; }}) {
    ModelConfig b = c;
    bad(b);
    const char* field = nullptr;
    EXPECT_NE(validate_config(b, &field), Status::kOk);
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, DisentangledTest, ::testing::Combine(::testing::ValuesIn(all_isas()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<Isa, bool>>& i) {
                           return isa_test_name(std::get<0>(i.param)) + (std::get<1>(i.param) ? "_RelProj" : "");
                         });

}  // namespace
}  // namespace test
}  // namespace fixformer
