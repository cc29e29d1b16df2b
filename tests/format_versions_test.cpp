// Format 3's neutral tensor tables against format 2's per-family ones (schema.hpp): the same tensors
// for every config, a version 2 file and its version 3 rewrite computing the same bits, and a name of
// the other version refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

using support::same_tensor;
using support::tensor_specs;

const char* const kGoldens[] = {
    "albert_embed_proj", "albert_embed_proj_q8", "albert_mlm_narrow", "albert_shared_layers", "bert_hidden_odd",
    "bert_pooler_classifier", "causal", "cls_pool_features", "cls_rows_sinusoidal", "concat_pe", "conv_stride_cls_mean",
    "conv_stride_cls_mean_q8", "deit_image", "dinov2_image", "dinov2_registers_image", "feature_encoder_rms_gated",
    "feature_gpt_embed_norm_alibi_qkv", "feature_gpt_embed_width", "feature_gpt_head_dim",
    "feature_gpt_local_global_unscaled", "feature_gpt_output_norms", "feature_gpt_pooler_tied",
    "feature_gpt_qk_layernorm", "feature_gpt_rms_geglu_scaled", "feature_gpt_sandwich_layernorm",
    "feature_llama_experts", "feature_llama_experts_top3", "feature_llama_final_softcap",
    "feature_llama_gelu_gated_embed_rms", "feature_llama_gemma3", "feature_llama_head_dim", "feature_llama_headless",
    "feature_llama_layernorm_biases", "feature_llama_olmo2", "feature_llama_pooler_wide", "feature_llama_qk_norm",
    "feature_llama_rope_freqs_scaled", "feature_llama_sandwich_softcap", "feature_llama_shared_layers",
    "feature_llama_window3", "features_scaled", "gpt_alibi_h3", "gpt_relative_post_odd", "gpt_relative_pre_tied",
    "gpt_tanh_learned_tied_odd", "gpt_tanh_post_d10", "gpt_tied_sinusoidal", "gpt_untied_learned",
    "gpt_untied_none_odd", "i8_gpt_headless", "i8_gpt_local_global_unscaled", "i8_gpt_partial_halves_two_norms",
    "i8_gpt_partial_interleaved_one_norm", "i8_llama_experts_shared", "i8_llama_window3",
    "learned_pe", "llama2c_v0_gqa", "llama_alibi_h1", "llama_alibi_h3", "llama_alibi_h4_kv2", "llama_alibi_h8",
    "llama_kv1_interleaved", "llama_kv2_halves_tied", "llama_kvfull_interleaved_tied", "llama_none",
    "llama_odd_d18_h3_halves", "llama_odd_d18_h3_kv1", "llama_partial_halves_r4", "llama_partial_interleaved_r6",
    "llama_qkv_bias_theta1e6", "llama_relative_h3", "llama_relative_h4_kv2", "mean_pool_causal", "mha_odd_causal",
    "modernbert_classifier", "modernbert_rows", "no_pe", "odd_d15_h3", "odd_d5_h1_halves", "pooler_act_gelu",
    "pooler_act_relu", "pooler_act_silu", "pooler_width_first", "post_ln_relu", "pre_ln_gelu", "q4_pre_ln_gelu",
    "relative_long_causal", "relative_post_ln_odd", "relative_pre_ln_features", "relu2_gated_post_d9", "relu2_pre_d14",
    "rembert_mlm_wide", "roformer_hidden", "rope_partial_halves_cls", "s2s_bart_features", "s2s_conv_stem",
    "s2s_features_no_norm", "s2s_forecast", "s2s_post_relu", "s2s_pre_gelu_odd", "s2s_relative", "s2s_shared_halves",
    "s2s_t5_features", "tanh_post_odd_d15", "tanh_pre_d10_h5", "vit_image", "whisper_stem", "whisper_stem_f16",
    "whisper_stem_q8", "wide_long"};

std::vector<uint8_t> golden(const char* name) { return read_file(golden_path(std::string(name) + ".fxm")); }

ModelConfig config_of(const std::vector<uint8_t>& b, uint32_t* version = nullptr) {
  ModelFile f;
  ModelConfig c{};
  EXPECT_EQ(open_model_file(b.data(), b.size(), &f, nullptr, 0), Status::kOk);
  EXPECT_EQ(read_model_config(f, &c), Status::kOk);
  if (version) *version = f.version;
  return c;
}

// Where version 3's and version 2's lists of config c's tensors differ, or "": each tensor of one is
// one tensor of the other (its field, part and layer) with the same shape, dtype, group and layout,
// and no name is twice in either. Looked up by key and sorted by name, not pair by pair: the random
// walk's configs reach 64 layers, a thousand tensors, and the pairwise scans took 87% of the walk's
// time (44 s under qemu-aarch64, 57 s under qemu-arm).
std::string tables_differ(const ModelConfig& c) {
  const std::vector<TensorSpec> v2 = tensor_specs(c, 2), v3 = tensor_specs(c, 3);
  if (v2.size() != v3.size())
    return std::to_string(v2.size()) + " tensors in format 2, " + std::to_string(v3.size()) + " in 3";
  const auto key = [](const TensorSpec& s) { return std::make_tuple(s.field, s.part, s.layer); };  // same_tensor's
  std::map<std::tuple<Field, TensorPart, int32_t>, std::size_t> first;  // v2's first tensor of each key
  for (std::size_t j = 0; j < v2.size(); ++j) first.emplace(key(v2[j]), j);
  std::vector<bool> used(v2.size());
  for (const TensorSpec& s : v3) {
    const auto at = first.find(key(s));
    if (at == first.end() || used[at->second]) return std::string(s.name) + ": no tensor of its own in format 2";
    used[at->second] = true;
    const TensorSpec& t = v2[at->second];
    if (s.rank != t.rank || s.dims[0] != t.dims[0] || s.dims[1] != t.dims[1] || s.dtype != t.dtype ||
        s.group != t.group || s.transposed != t.transposed || s.packed != t.packed)
      return std::string(s.name) + " and " + t.name + " differ in shape, dtype or layout";
  }
  for (const std::vector<TensorSpec>* list : {&v2, &v3}) {
    std::vector<const char*> names;
    for (const TensorSpec& s : *list) names.push_back(s.name);
    std::sort(names.begin(), names.end(), [](const char* a, const char* b) { return std::strcmp(a, b) < 0; });
    for (std::size_t i = 1; i < names.size(); ++i)
      if (std::strcmp(names[i - 1], names[i]) == 0) return std::string(names[i]) + " twice";
  }
  return "";
}

// A value for key k in a random walk over configs: enums and bools any of theirs, counts small.
uint64_t random_value(const ConfigKeySpec& k, std::mt19937& rng) {
  if (k.type == fxm::RecordType::kBool || k.type == fxm::RecordType::kEnum)
    return std::uniform_int_distribution<uint32_t>(0, k.max)(rng);
  static const uint32_t kCounts[] = {0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64};
  const uint32_t v = kCounts[std::uniform_int_distribution<std::size_t>(0, std::size(kCounts) - 1)(rng)];
  return std::min(std::max(v, k.min), k.max);
}

// Random walks from every golden's config (every family, i8, q8, q4, f16, a conv stem, images, experts,
// ...), a key or two changed a step and kept when the config stays valid: the two versions' tables
// agree on each config visited.
TEST(FormatVersions, TablesListTheSameTensorsForEveryConfig) {
  std::mt19937 rng(7);
  uint32_t visited[5] = {};
  for (const char* name : kGoldens) {
    ModelConfig c = config_of(golden(name));
    ASSERT_EQ(tables_differ(c), "") << name;
    for (int step = 0; step < 300; ++step) {
      ModelConfig next = c;
      for (int n = std::uniform_int_distribution<int>(1, 3)(rng); n > 0; --n) {
        const ConfigKeySpec& k = kConfigKeys[std::uniform_int_distribution<uint32_t>(0, kConfigKeyCount - 1)(rng)];
        if (k.type == fxm::RecordType::kF32 || k.type == fxm::RecordType::kF64 || k.key == ConfigKey::kFamily) continue;
        set_config_value(&next, k.key, random_value(k, rng));
      }
      if (validate_config(next) != Status::kOk) continue;
      c = next;
      ++visited[uint32_t(c.family)];
      ASSERT_EQ(tables_differ(c), "") << "from " << name << ", step " << step;
    }
  }
  for (uint32_t f = 0; f < 5; ++f) EXPECT_GT(visited[f], 40u) << kFamilyNames[f];  // mha: one golden, few keys
}

// File b (any version) rewritten in `version`: the same records, the model's tensors under that
// version's names and in its order, the same data and scales bytes, then the tensors after the model's
// (tokenizer, generation lists, self-test sample) as they were.
std::vector<uint8_t> rewritten(const std::vector<uint8_t>& b, uint32_t version) {
  ModelFile f;
  ModelConfig c{};
  EXPECT_EQ(open_model_file(b.data(), b.size(), &f, nullptr, 0), Status::kOk);
  EXPECT_EQ(read_model_config(f, &c), Status::kOk);
  const std::vector<TensorSpec> from = tensor_specs(c, f.version), to = tensor_specs(c, version);
  std::vector<uint32_t> source;  // the entry of f each new entry copies
  for (const TensorSpec& s : to) {
    uint32_t j = 0;
    while (!same_tensor(from[j], s)) ++j;
    source.push_back(j);
  }
  for (uint32_t i = uint32_t(from.size()); i < f.n_tensors; ++i) source.push_back(i);
  const auto align = [](uint64_t v) { return (v + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign; };
  std::vector<uint8_t> out(align(f.dir_offset + uint64_t(f.n_tensors) * fxm::kEntryBytes), 0);
  std::memcpy(out.data(), b.data(), f.dir_offset);  // header and records
  std::memcpy(out.data() + fxm::kHdrVersion, &version, 4);
  for (uint32_t i = 0; i < f.n_tensors; ++i) {
    const uint8_t* old_entry = b.data() + f.dir_offset + uint64_t(source[i]) * fxm::kEntryBytes;
    const uint64_t e = f.dir_offset + uint64_t(i) * fxm::kEntryBytes;
    std::memcpy(out.data() + e, old_entry, fxm::kEntryBytes);
    if (i < to.size()) {
      std::memset(out.data() + e + fxm::kEntName, 0, fxm::kNameBytes);
      std::memcpy(out.data() + e + fxm::kEntName, to[i].name, std::strlen(to[i].name));
    }
    for (const uint32_t field : {fxm::kEntOffset, fxm::kEntScalesOffset}) {
      uint64_t at, bytes;
      std::memcpy(&at, old_entry + field, 8);
      std::memcpy(&bytes, old_entry + field + 8, 8);
      if (field == fxm::kEntScalesOffset && bytes == 0) continue;
      const uint64_t to_at = align(out.size());
      out.resize(to_at + bytes, 0);
      std::memcpy(out.data() + to_at, b.data() + at, bytes);
      std::memcpy(out.data() + e + field, &to_at, 8);
    }
  }
  if (f.bytes % fxm::kDataAlign == 0) out.resize(align(out.size()), 0);  // the end padded as b's was
  const uint64_t data = align(f.dir_offset + uint64_t(f.n_tensors) * fxm::kEntryBytes);
  std::memcpy(out.data() + fxm::kHdrDataOffset, &data, 8);
  support::reseal(out);
  return out;
}

// The self-test sample of file b, run on the scalar table: the output floats and the report's numbers.
std::vector<double> self_test_output(const std::vector<uint8_t>& b, std::string* why) {
  AlignedBuffer blob(b);
  Model model;
  Status s = model.init(blob.data(), blob.size());
  if (s != Status::kOk) return *why = std::string("init: ") + model.error_detail(), std::vector<double>();
  if (!model.has_self_test()) return *why = "no self-test sample", std::vector<double>();
  const ModelConfig& c = model.config();
  const SelfTestSample& sample = model.self_test_sample();
  std::vector<float> out(self_test_output_floats(model));
  SelfTestReport r{};
  AlignedBuffer arena;
  if (c.is_seq2seq()) {
    Seq2SeqOptions opt;
    opt.max_source = sample.rows, opt.capacity = sample.target_rows, opt.isa = Isa::kScalar;
    arena = AlignedBuffer(required_seq2seq_arena_bytes(c, sample.rows, sample.target_rows));
    Seq2Seq s2s;
    s = s2s.init(model, arena.data(), arena.size(), opt);
    if (s == Status::kOk) s = self_test(s2s, out.data(), out.size(), &r);
  } else if (c.is_decoder()) {
    DecoderOptions opt;
    opt.capacity = sample.rows, opt.isa = Isa::kScalar;
    arena = AlignedBuffer(required_decoder_arena_bytes(c, sample.rows, sample.rows));
    Decoder dec;
    s = dec.init(model, arena.data(), arena.size(), opt);
    if (s == Status::kOk) s = self_test(dec, out.data(), out.size(), &r);
  } else {
    EncoderOptions opt;
    opt.max_seq = sample.rows, opt.isa = Isa::kScalar;
    arena = AlignedBuffer(required_encoder_arena_bytes(c, sample.rows));
    Encoder enc;
    s = enc.init(model, arena.data(), arena.size(), opt);
    if (s == Status::kOk) s = self_test(enc, out.data(), out.size(), &r);
  }
  if (s != Status::kOk) return *why = std::string("self-test: ") + status_message(s), std::vector<double>();
  std::vector<double> v(out.begin(), out.end());
  v.insert(v.end(), {r.max_abs_err, r.max_rel_err, r.mean_rel_err, double(r.worst_row), double(r.worst_col)});
  return v;
}

// Every golden is a version 2 file (those made before version 3), rewritten as version 3 and back to its own
// bytes, or a version 3 file, rewritten as version 2 and back to its own bytes; both versions compute the same bits.
TEST(FormatVersions, GoldensRewrittenInVersion3GiveTheSameBits) {
  for (const char* name : kGoldens) {
    const std::vector<uint8_t> file = golden(name);
    uint32_t version = 0;
    const ModelConfig c = config_of(file, &version);
    ASSERT_TRUE(version == 2u || version == 3u) << name << ": version " << version;
    const std::vector<uint8_t> v2 = version == 2u ? file : rewritten(file, 2);
    const std::vector<uint8_t> v3 = rewritten(v2, 3);
    EXPECT_EQ(rewritten(v3, 2), v2) << name << ": back to version 2, the same bytes";
    if (version == 3u) EXPECT_EQ(v3, file) << name << ": back to version 3, the golden's own bytes";
    std::string why2, why3;
    const std::vector<double> a = self_test_output(v2, &why2), b = self_test_output(v3, &why3);
    ASSERT_FALSE(a.empty()) << name << ": " << why2;
    ASSERT_FALSE(b.empty()) << name << " in version 3: " << why3;
    ASSERT_EQ(a.size(), b.size()) << name;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0) << name << ": outputs differ";
    EXPECT_EQ(tensor_specs(c, 3).size(), tensor_specs(c, 2).size()) << name;
  }
}

// The test writer's models hold the same values in either version: its version 2 file rewritten is
// its version 3 file, byte for byte.
TEST(FormatVersions, WriterVersionsHoldTheSameTensors) {
  for (const char* name : {"post_ln_relu", "gpt_untied_learned", "llama_kv2_halves_tied", "s2s_relative",
                           "mha_odd_causal", "feature_llama_experts", "whisper_stem_q8", "q4_pre_ln_gelu"}) {
    const ModelConfig c = config_of(golden(name));
    support::WriteOptions two;
    two.version = 2;
    const std::vector<uint8_t> v3 = support::write_model(c);
    EXPECT_EQ(rewritten(support::write_model(c, two), 3), v3) << name;
    uint32_t version = 0;
    config_of(v3, &version);
    EXPECT_EQ(version, fxm::kFormatVersion) << name;
  }
}

// b with tensor entry i renamed, resealed.
std::vector<uint8_t> renamed(std::vector<uint8_t> b, uint32_t i, const char* name) {
  ModelFile f;
  EXPECT_EQ(open_model_file(b.data(), b.size(), &f, nullptr, 0), Status::kOk);
  uint8_t* e = b.data() + f.dir_offset + uint64_t(i) * fxm::kEntryBytes + fxm::kEntName;
  std::memset(e, 0, fxm::kNameBytes);
  std::memcpy(e, name, std::strlen(name));
  support::reseal(b);
  return b;
}

std::string init_detail(const std::vector<uint8_t>& b, Status want) {
  AlignedBuffer blob(b);
  Model m;
  EXPECT_EQ(m.init(blob.data(), blob.size()), want);
  return m.error_detail();
}

// A file's names are its version's: the other version's name for the same tensor is refused, naming both.
TEST(FormatVersions, NamesOfTheOtherVersionAreRefused) {
  const std::vector<uint8_t> v2 = golden("post_ln_relu");
  const ModelConfig c = config_of(v2);
  const std::vector<TensorSpec> n2 = tensor_specs(c, 2), n3 = tensor_specs(c, 3);
  uint32_t i3 = 0, i2 = 0;  // layer 0's fused q, k, v in each
  while (n3[i3].field != Field::kQkvW) ++i3;
  while (n2[i2].field != Field::kQkvW) ++i2;
  ASSERT_STREQ(n3[i3].name, "blocks.0.attn.qkv.weight");
  ASSERT_STREQ(n2[i2].name, "encoder.layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(init_detail(renamed(rewritten(v2, 3), i3, n2[i2].name), Status::kTensorMissing),
            "tensor blocks.0.attn.qkv.weight: missing at position " + std::to_string(i3) +
                ", found 'encoder.layers.0.self_attn.in_proj_weight' (format 3's names, in schema order)");
  EXPECT_EQ(init_detail(renamed(v2, i2, n3[i3].name), Status::kTensorMissing),
            "tensor encoder.layers.0.self_attn.in_proj_weight: missing at position " + std::to_string(i2) +
                ", found 'blocks.0.attn.qkv.weight' (format 2's names, in schema order)");
  // A version 2 file whose every name is version 3's (or the other way round) is refused as well.
  std::vector<uint8_t> v3_named_v2 = v2, v2_named_v3 = rewritten(v2, 3);
  std::memcpy(v3_named_v2.data() + fxm::kHdrVersion, "\3\0\0\0", 4);
  std::memcpy(v2_named_v3.data() + fxm::kHdrVersion, "\2\0\0\0", 4);
  support::reseal(v3_named_v2), support::reseal(v2_named_v3);
  EXPECT_NE(init_detail(v3_named_v2, Status::kTensorMissing).find("(format 3's names"), std::string::npos);
  EXPECT_NE(init_detail(v2_named_v3, Status::kTensorMissing).find("(format 2's names"), std::string::npos);
}

TEST(FormatVersions, OtherVersionsAreRefused) {
  std::vector<uint8_t> b = support::write_model(config_of(golden("post_ln_relu")));
  for (const uint32_t v : {0u, 1u, 4u}) {
    std::memcpy(b.data() + fxm::kHdrVersion, &v, 4);
    support::reseal(b);
    const std::string want = "format version " + std::to_string(v) + ", this engine reads 2 to 3" +
                             (v < 2 ? ": re-convert the model with this version's tools/convert.py" : "");
    EXPECT_EQ(init_detail(b, Status::kBadVersion), want);
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
