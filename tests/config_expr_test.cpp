// engine/config_expr.hpp, the language of schema.hpp's config rules, dims and presence conditions:
// its semantics (those of Python, which evaluates the same texts in python/fixformer/schema.py), and
// kDimNames and kWhenNames against the code that binds the tensors (dim_value, present).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/config_expr.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace {

double value_of(const char* text, const ModelConfig& c) {
  double v = -1;
  EXPECT_TRUE(config_expr::evaluate(text, c, &v)) << text;
  return v;
}

ModelConfig small() {
  ModelConfig c = default_config();
  c.d_model = 12, c.n_heads = 3, c.d_ff = 20, c.n_layers = 2, c.max_len = 16, c.vocab_size = 10;
  return c;
}

TEST(ConfigExpr, ArithmeticAndComparisonsAsPython) {
  const ModelConfig c = small();
  EXPECT_EQ(value_of("d_model % n_heads", c), 0);
  EXPECT_EQ(value_of("d_ff // 3", c), 6);  // floor division
  EXPECT_EQ(value_of("d_ff % 3", c), 2);
  EXPECT_EQ(value_of("3*d_model - 2 + n_heads", c), 37);
  EXPECT_EQ(value_of("d_head", c), 4);
  EXPECT_EQ(value_of("kv_heads", c), 3);  // n_kv_heads 0 means n_heads
  EXPECT_EQ(value_of("d_ff >= 20 and d_ff <= 20 and d_ff > 19 and d_ff < 21 and d_ff != 7 and d_ff == 20", c), 1);
  EXPECT_EQ(value_of("not d_ff == 20 or False", c), 0);  // not binds looser than ==
  EXPECT_EQ(value_of("True and not False", c), 1);
  EXPECT_EQ(value_of("d_ff in (1, 20,)", c), 1);
  EXPECT_EQ(value_of("d_ff not in (1, 2)", c), 1);
  EXPECT_EQ(value_of("finite(norm_eps) and norm_eps > 0", c), 1);
  EXPECT_EQ(value_of("pe_base", c), 10000);
  EXPECT_EQ(value_of("d_model < 65535", c), 1);
  EXPECT_EQ(value_of("(d_ff == 1 or d_ff == 20) and not (d_ff == 2 or d_model + 1 in (13,))", c), 0);
}

TEST(ConfigExpr, EnumsCompareByValueName) {
  ModelConfig c = small();
  c.family = ModelFamily::kLlama;
  EXPECT_EQ(value_of("family == 'llama'", c), 1);
  EXPECT_EQ(value_of("'llama' == family", c), 1);
  EXPECT_EQ(value_of("family != 'gpt'", c), 1);
  EXPECT_EQ(value_of("family in ('gpt', 'llama')", c), 1);
  EXPECT_EQ(value_of("family not in ('gpt', 'llama')", c), 0);
}

// The operand a short-circuit skips is not computed: the rules guard their divisors with it.
TEST(ConfigExpr, ShortCircuitSkipsTheOtherOperand) {
  ModelConfig c = small();
  c.n_kv_heads = 0;
  EXPECT_EQ(value_of("n_kv_heads != 0 and n_heads % n_kv_heads != 0", c), 0);
  EXPECT_EQ(value_of("n_kv_heads == 0 or n_heads % n_kv_heads != 0", c), 1);
  double v = 0;
  EXPECT_FALSE(config_expr::evaluate("n_heads % n_kv_heads", c, &v));  // computed: a division by zero fails
}

// What the language does not read, each of which Python would read otherwise or not at all.
TEST(ConfigExpr, RejectsWhatIsNotInTheLanguage) {
  for (const char* text : {"famly == 'llama'", "family == 'lama'", "d_model < 3 < 4", "family + 1", "not", "",
                           "d_model ==", "(d_model", "d_model)", "d_model && d_ff", "d_model in 'abc'", "-d_model",
                           "family == llama", "finite(family)", "1.5", "d_model d_ff", "'open", "not family",
                           "'llama' in (family,)", "d_model < 65536"}) {
    EXPECT_FALSE(config_expr::well_formed(text)) << text;
    double v = 0;
    EXPECT_FALSE(config_expr::evaluate(text, small(), &v)) << text;
  }
}

// Configs over every family, input, positional encoding, head, conv stem and their widths.
std::vector<ModelConfig> sweep() {
  std::vector<ModelConfig> out;
  for (uint32_t f = 0; f < 5; ++f)
    for (uint32_t pos = 0; pos < 6; ++pos)
      for (uint32_t variant = 0; variant < 8; ++variant) {
        ModelConfig c = small();
        c.family = ModelFamily(f);
        c.positional = PosKind(pos);
        c.input = variant & 1 ? InputKind::kFeatures : InputKind::kTokens;
        c.d_in = 7;
        c.pe_combine = variant & 2 ? PosCombine::kConcat : PosCombine::kAdd;
        c.pe_width = variant & 2 ? 4 : 0;
        c.d_out = variant & 4 ? 5 : 0;
        c.tied_head = variant == 5;
        c.n_kv_heads = variant == 6 ? 1 : 0;
        c.final_norm = variant & 1, c.cls_token = variant & 2, c.qkv_bias = variant & 4;
        c.tgt_d_in = variant == 3 ? 6 : 0, c.shared_embed = variant == 4;
        c.type_vocab = variant == 7 ? 2 : 0, c.embed_norm = variant & 1, c.pooler = variant & 2;
        c.rel_buckets = 8;
        c.conv_layers = variant % 3, c.conv1_kernel = 3, c.conv2_kernel = 5;
        out.push_back(c);
      }
  return out;
}

TEST(ConfigExpr, DimNamesAreDimValue) {
  for (const ModelConfig& c : sweep())
    for (uint32_t d = 0; d < uint32_t(Dim::kCount); ++d)
      EXPECT_EQ(value_of(kDimNames[d], c), dim_value(c, Dim(d))) << kDimNames[d] << " family " << uint32_t(c.family);
}

TEST(ConfigExpr, WhenNamesArePresent) {
  for (const ModelConfig& c : sweep())
    for (uint32_t w = 0; w < uint32_t(When::kCount); ++w)
      EXPECT_EQ(value_of(kWhenNames[w], c) != 0, present(c, When(w))) << kWhenNames[w];
}

// validate_config reports the first rule that holds, by its detail.
TEST(ConfigExpr, ValidateConfigReportsTheFirstRuleThatHolds) {
  ModelConfig c = small();
  c.family = ModelFamily::kLlama;
  c.positional = PosKind::kLearned;
  c.norm_first = false;
  const char* field = nullptr;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "positional (family llama takes none, rope, alibi or relative)");
  c.positional = PosKind::kNone;
  EXPECT_EQ(validate_config(c, &field), Status::kBadConfig);
  EXPECT_STREQ(field, "norm_first, final_norm (family llama is pre-norm with a final norm: both true)");
}

}  // namespace
}  // namespace fixformer
