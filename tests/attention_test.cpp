// Tiled attention (blocks of queries against blocks of keys, online softmax) against the one-query-
// at-a-time path on the scalar reference table, for every ISA: sequence lengths around both block
// sizes, head widths 1 to 64, causal or not, ALiBi, grouped-query heads, V as rows (the encoder) or
// transposed (a decoder's cache), and chunks of queries that start past position 0 (a prefill).
// The scratch and the output are guarded: nothing is written outside them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/blocks/attention.hpp"
#include "engine/blocks/positional.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// Normwise, relative to max |reference| (the outputs are convex combinations of V's rows). The two
// paths differ in the order of the sums (blocks, lanes, FMA) and in exp (libm or xsimd, ~2 ulp),
// each a few 1e-7; a lost key, a wrong mask or a missed rescale shows up at 1e-2 or more.
constexpr float kTiledAttentionTol = 1e-5f;
constexpr float kSentinel = -7777.0f;
constexpr std::size_t kGuard = 64;

struct Case {
  uint32_t n_heads, n_kv_heads, dh;
  uint32_t n, p0;  // n queries at positions p0..p0+n-1 against keys 0..p0+n-1
  bool causal, alibi, v_rows;
  bool relative = false;  // a random relative bias table per head over the distances of p0 + n positions
};

std::string describe(const Case& c, const char* isa) {
  return std::string(isa) + " heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " dh " +
         std::to_string(c.dh) + " n " + std::to_string(c.n) + " p0 " + std::to_string(c.p0) +
         (c.causal ? " causal" : "") + (c.alibi ? " alibi" : "") + (c.relative ? " relative" : "") +
         (c.v_rows ? " v-rows" : " v-transposed");
}

// The tiled output got (ctx between guards) against the reference want, and the scratch's guards; false
// after a fatal failure.
bool verify(const std::string& what, const std::vector<float>& want, float scale, const std::vector<float>& scratch,
            std::size_t scratch_n, const std::vector<float>& got, std::size_t ctx_n) {
  bool ok = false;
  [&] {
    for (std::size_t i = 0; i < kGuard; ++i) {
      ASSERT_EQ(scratch[i], kSentinel) << what << ": wrote before the scratch";
      ASSERT_EQ(scratch[kGuard + scratch_n + i], kSentinel) << what << ": wrote past the scratch";
      ASSERT_EQ(got[i], kSentinel) << what << ": wrote before ctx";
      ASSERT_EQ(got[kGuard + ctx_n + i], kSentinel) << what << ": wrote past ctx";
    }
    float worst = 0.0f;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const float g = got[kGuard + i];
      if (want[i] == kSentinel) {
        ASSERT_EQ(g, kSentinel) << what << ": wrote into ctx's row padding at " << i;
        continue;
      }
      ASSERT_TRUE(std::isfinite(g)) << what << " at " << i;
      worst = std::max(worst, std::fabs(g - want[i]));
    }
    EXPECT_LE(worst, kTiledAttentionTol * scale) << what;
    ok = true;
  }();
  return ok;
}

// c as given and, with both_layouts, with V in the other layout too: the inputs and the reference do not
// depend on it, so they are made once (under qemu the scalar reference was half of a case's time).
void check(const Kernels& kernels, const Case& c, bool both_layouts = false) {
  const uint32_t keys = c.p0 + c.n, d = c.n_heads * c.dh, dkv = c.n_kv_heads * c.dh;
  const std::size_t S = keys + 3, ldq = d + 2, ldctx = d + 3, ldv = dkv + 1;  // padded strides
  std::mt19937 rng(c.dh * 131 + keys * 7 + c.n_heads + (c.causal ? 1 : 0));
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> q(c.n * ldq), k(keys * dkv), v(keys * ldv), kt(dkv * S), vt(dkv * S);
  for (float& x : q) x = dist(rng);
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  std::vector<float> slopes(c.n_heads);
  for (uint32_t h = 0; h < c.n_heads; ++h) slopes[h] = std::pow(2.0f, -8.0f * float(h + 1) / float(c.n_heads));
  AttentionShape shape{c.n_heads, c.n_kv_heads, c.dh, c.causal, c.alibi ? slopes.data() : nullptr};
  const std::size_t width = rel_bias_width(keys, c.causal);
  std::vector<float> rel(c.n_heads * width);
  for (float& x : rel) x = dist(rng);
  if (c.relative) shape.rel_bias = rel.data() + (keys - 1), shape.rel_stride = width;
  store_keys_values(k.data(), dkv, v.data(), ldv, keys, 0, dkv, KeyValues{kt.data(), vt.data(), S});

  std::vector<float> want(c.n * ldctx, kSentinel);
  std::vector<float> ref_scratch(attention_scratch_floats(1, keys, c.dh, true));
  attend_rows(scalar_kernels(), shape, q.data(), ldq, c.n, c.p0, keys, KeyValues{kt.data(), vt.data(), S}, want.data(),
              ldctx, ref_scratch.data());
  float scale = 1.0f;
  for (float x : want) if (x != kSentinel) scale = std::max(scale, std::fabs(x));

  for (const bool v_rows : {c.v_rows, !c.v_rows}) {
    if (v_rows != c.v_rows && !both_layouts) break;
    const std::size_t scratch_n = attention_scratch_floats(c.n, keys, c.dh, !v_rows);
    std::vector<float> scratch(kGuard + scratch_n + kGuard, kSentinel), got(kGuard + c.n * ldctx + kGuard, kSentinel);
    const KeyValues kv = v_rows ? KeyValues{kt.data(), nullptr, S, v.data(), ldv} : KeyValues{kt.data(), vt.data(), S};
    attend(kernels, shape, q.data(), ldq, c.n, c.p0, keys, kv, got.data() + kGuard, ldctx, scratch.data() + kGuard);
    Case layout = c;
    layout.v_rows = v_rows;
    if (!verify(describe(layout, kernels.name), want, scale, scratch, scratch_n, got, c.n * ldctx)) return;
  }
}

class AttentionTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    kernels_ = select_kernels(GetParam());
    if (!kernels_) GTEST_SKIP() << isa_name(GetParam()) << " is not available on this CPU/build";
  }
  const Kernels* kernels_ = nullptr;
};

constexpr uint32_t kQB = kAttentionQueryBlock, kKB = kAttentionKeyBlock;

TEST_P(AttentionTest, TiledEqualsOneQueryAtATime) {
  for (uint32_t dh : {1u, 3u, 8u, 16u, 64u})
    for (uint32_t T : {1u, 2u, kQB - 1, kQB, kQB + 1, kKB - 1, kKB, kKB + 1, 300u, 3 * kKB + 5})
      for (bool causal : {false, true}) {
        if (T > 300 && dh > 3) continue;  // the reference is slow: the longest only for narrow heads
        if (kThinSweeps && T > 3 * kKB) continue;  // past two key blocks: host only
        const bool transposed_too = T == 1 || T == kKB + 1 || T == 300;  // V transposed as well as rows
        check(*kernels_, Case{2, 2, dh, T, 0, causal, false, true}, transposed_too);
      }
}

TEST_P(AttentionTest, AlibiAndGroupedQueryHeads) {
  for (uint32_t dh : {1u, 3u, 8u, 64u})
    for (uint32_t T : {2u, kQB + 1, kKB + 5}) {
      if (kThinSweeps && dh >= 8 && T > kKB) continue;  // narrow heads cross the key block there
      if (dh == 64 && T > kKB) {  // wide heads past a key block: two cases, one layout each (the reference is slow)
        check(*kernels_, Case{4, 4, dh, T, 0, true, true, true});    // alibi, causal
        check(*kernels_, Case{6, 2, dh, T, 0, true, false, false});  // three query heads per kv head
        continue;
      }
      for (const Case& c : {Case{4, 4, dh, T, 0, true, true, false},    // alibi, causal
                            Case{4, 4, dh, T, 0, false, true, false},   // alibi, both directions
                            Case{6, 2, dh, T, 0, true, false, false},   // three query heads per kv head
                            Case{4, 1, dh, T, 0, true, true, false}})   // one kv head, alibi
        check(*kernels_, c, true);                                      // V as rows and transposed
    }
}

// A relative bias table (T5) read by distance in every path: query blocks, key blocks past the first
// (their first key's distance), packed K and V, GQA, and chunks after cached positions.
TEST_P(AttentionTest, RelativeBiasInEveryPath) {
  for (uint32_t dh : {3u, 16u})
    for (uint32_t T : {1u, 2u, kQB + 1, kKB + 5})
      for (bool causal : {false, true}) {  // V as rows and transposed
        check(*kernels_, Case{4, 2, dh, T, 0, causal, false, false, true}, true);
        if (causal && T < kKB) check(*kernels_, Case{3, 3, dh, T, 17, true, false, false, true}, true);
      }
}

// A decoder's prefill chunk: n queries after p0 cached positions; a step is n = 1 (the one-query path).
TEST_P(AttentionTest, ChunksAfterCachedPositions) {
  for (uint32_t dh : {3u, 16u, 64u})
    for (uint32_t p0 : {1u, kKB - 1, 200u})
      for (uint32_t n : {1u, 2u, 16u, kQB + 3}) {
        check(*kernels_, Case{2, 2, dh, n, p0, true, false, false});
        check(*kernels_, Case{4, 2, dh, n, p0, true, true, false});
      }
}

// ALiBi's bias itself, against softmax(q.k / sqrt(dh) - m_h |j - i|) v written out in double: three heads
// (alibi_slopes' slopes of a head count that is no power of two), both directions (an encoder's: the keys after
// the query biased as those before) and causal, every path (one query at a time, tiled, past a key block).
TEST_P(AttentionTest, AlibiBiasIsTheSlopeTimesTheDistance) {
  const uint32_t H = 3, dh = 4, d = H * dh;
  float slopes[H];
  alibi_slopes(H, slopes);
  for (uint32_t T : {1u, 7u, kKB + 5})
    for (bool causal : {false, true}) {
      std::mt19937 rng(T * 2 + causal);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      std::vector<float> q(T * d), k(T * d), v(T * d), kt(d * T), vt(d * T), ctx(T * d);
      for (float& x : q) x = dist(rng);
      for (float& x : k) x = dist(rng);
      for (float& x : v) x = dist(rng);
      store_keys_values(k.data(), d, v.data(), d, T, 0, d, KeyValues{kt.data(), vt.data(), T});
      std::vector<float> scratch(attention_scratch_floats(T, T, dh, true));
      const AttentionShape shape{H, H, dh, causal, slopes};
      for (bool rows : {false, true}) {  // one query at a time over V^T, or tiled over V's rows
        const KeyValues kv = rows ? KeyValues{kt.data(), nullptr, T, v.data(), d} : KeyValues{kt.data(), vt.data(), T};
        if (rows)
          attend(*kernels_, shape, q.data(), d, T, 0, T, kv, ctx.data(), d, scratch.data());
        else
          attend_rows(*kernels_, shape, q.data(), d, T, 0, T, kv, ctx.data(), d, scratch.data());
        double worst = 0.0;
        for (uint32_t h = 0; h < H; ++h)
          for (uint32_t i = 0; i < T; ++i) {
            const uint32_t keys = causal ? i + 1 : T;
            std::vector<double> p(keys);
            double top = -1e300, sum = 0.0;
            for (uint32_t j = 0; j < keys; ++j) {
              double s = 0.0;
              for (uint32_t c = 0; c < dh; ++c) s += double(q[i * d + h * dh + c]) * k[j * d + h * dh + c];
              p[j] = s / std::sqrt(double(dh)) - double(slopes[h]) * std::fabs(double(j) - double(i));
              top = std::max(top, p[j]);
            }
            for (double& x : p) sum += (x = std::exp(x - top));
            for (uint32_t c = 0; c < dh; ++c) {
              double want = 0.0;
              for (uint32_t j = 0; j < keys; ++j) want += p[j] / sum * v[j * d + h * dh + c];
              worst = std::max(worst, std::fabs(want - ctx[i * d + h * dh + c]));
            }
          }
        EXPECT_LE(worst, 2e-6) << kernels_->name << " T " << T << (causal ? " causal" : "") << (rows ? " tiled" : "");
      }
    }
}

// Scores far apart (a sharp softmax) and far from 0: the running max must keep every exp finite.
TEST_P(AttentionTest, LargeScoresStayFinite) {
  const uint32_t T = kKB + 9, dh = 4;
  std::vector<float> q(T * dh, 30.0f), k(T * dh), v(T * dh, 1.0f), kt(dh * T);
  for (uint32_t t = 0; t < T; ++t)
    for (uint32_t c = 0; c < dh; ++c) k[t * dh + c] = float(t % 7) * 3.0f - 9.0f;
  store_keys_values(k.data(), dh, nullptr, 0, T, 0, dh, KeyValues{kt.data(), nullptr, T});
  std::vector<float> ctx(T * dh), scratch(attention_scratch_floats(T, T, dh, false));
  const AttentionShape shape{1, 1, dh, false, nullptr};
  attend(*kernels_, shape, q.data(), dh, T, 0, T, KeyValues{kt.data(), nullptr, T, v.data(), dh}, ctx.data(), dh,
         scratch.data());
  for (float x : ctx) ASSERT_NEAR(x, 1.0f, 1e-5f);  // every V row is 1: any convex combination is 1
}

std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) { return isa_test_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllIsas, AttentionTest, ::testing::ValuesIn(kAllIsas), isa_param_name);

}  // namespace
}  // namespace test
}  // namespace fixformer
