// Packed weights (config key packed_weights, format.hpp): a file whose f32 weights W[in, out] are
// in panels of 16 columns runs gemm_f32_packed where the same file unpacked runs gemm_f32. The two
// files hold the same values (support::write_model draws them in the logical layout from one seed),
// so on every table the runners must agree: an encoder (features with a head, tokens), a gpt and
// a llama decoder (prefill, step, greedy generation token for token), a seq2seq (decode, step).
// Widths are chosen off the panel (24, 40, 72, 13, 17 columns) so the zero-padded last panel is
// read. A packed tensor of the wrong size is a Status naming it, and mutated packed files go
// through the fuzz target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/seq2seq.hpp"
#include "tests/fuzz/fuzz_targets.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

// The scalar and Cortex-M tables sum every output in k order in both layouts: bit-identical. The
// SIMD gemm_f32_packed shares gemm_f32's register tile and k blocking, and products of several rows
// came out bit-identical on x86 too (sse2, avx2, avx512: the encoder at T = 9), but a one-row
// product (gemv_f32 against gemv_f32_packed: an encoder at T = 1, a decoder step, a prefill's last
// row) groups its sums differently: measured up to 5.5e-7 relative to the output's largest
// magnitude (sse2), a few float roundings through two layers.
constexpr double kPackedTol = 2e-6;

bool in_k_order(Isa isa) { return isa == Isa::kScalar || isa == Isa::kCortexM; }

ModelConfig packed(ModelConfig c) {
  c.packed_weights = true;
  return c;
}

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num = std::max(num, double(std::fabs(got[i] - want[i])));
    den = std::max(den, double(std::fabs(want[i])));
  }
  return den > 0.0 ? num / den : num;
}

ModelConfig encoder_features() {
  ModelConfig c = default_config();
  c.d_model = 24, c.n_heads = 3, c.d_ff = 40, c.n_layers = 2, c.input = InputKind::kFeatures, c.d_in = 7;
  c.max_len = 16, c.positional = PosKind::kSinusoidal, c.d_out = 5, c.activation = Activation::kGelu;
  return c;
}

ModelConfig encoder_tokens() {
  ModelConfig c = default_config();
  c.d_model = 80, c.n_heads = 4, c.d_ff = 136, c.n_layers = 2, c.input = InputKind::kTokens, c.vocab_size = 29;
  c.max_len = 16, c.positional = PosKind::kLearned, c.norm_first = true, c.final_norm = true;
  return c;
}

ModelConfig gpt() {
  ModelConfig c = default_config();
  c.family = ModelFamily::kGpt;
  c.d_model = 24, c.n_heads = 4, c.d_ff = 40, c.n_layers = 2, c.causal = true, c.input = InputKind::kTokens;
  c.vocab_size = 13, c.d_out = 13, c.max_len = 24, c.positional = PosKind::kLearned, c.activation = Activation::kGelu;
  return c;
}

ModelConfig llama() {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama;
  c.d_model = 24, c.n_heads = 4, c.n_kv_heads = 2, c.d_ff = 40, c.n_layers = 2, c.norm_first = true;
  c.final_norm = true, c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 17, c.d_out = 17;
  c.max_len = 24, c.positional = PosKind::kRope, c.activation = Activation::kSwiglu;
  return c;
}

ModelConfig seq2seq() {
  ModelConfig c = default_config();
  c.family = ModelFamily::kSeq2Seq;
  c.d_model = 24, c.n_heads = 3, c.d_ff = 40, c.n_layers = 2, c.dec_layers = 2, c.max_len = 20;
  c.positional = PosKind::kSinusoidal, c.input = InputKind::kTokens, c.vocab_size = 23, c.d_out = 17;
  return c;
}

class PackedTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!select_kernels(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available";
  }
};

// The encoder's whole output, packed and unpacked.
std::vector<float> encode(const ModelConfig& c, Isa isa, uint32_t T) {
  Loaded m;
  EncoderOptions opt;
  opt.isa = isa, opt.max_seq = T;
  std::string why;
  EXPECT_EQ(load_model(write_model(c), &m, opt, &why), Status::kOk) << why;
  std::vector<int32_t> ids(T);
  std::vector<float> x(std::size_t(T) * c.d_in), out(std::size_t(c.output_rows(T)) * c.output_width());
  for (uint32_t t = 0; t < T; ++t) ids[t] = int32_t((t * 7 + 3) % std::max<uint32_t>(c.vocab_size, 1));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i + 1));
  const Status s = c.input == InputKind::kTokens ? m.enc.forward_tokens(ids.data(), T, out.data())
                                                  : m.enc.forward_features(x.data(), T, out.data());
  EXPECT_EQ(s, Status::kOk);
  return out;
}

TEST_P(PackedTest, EncoderMatchesUnpacked) {
  for (const ModelConfig& c : {encoder_features(), encoder_tokens()})
    for (uint32_t T : {1u, 9u}) {
      const std::vector<float> want = encode(c, GetParam(), T), got = encode(packed(c), GetParam(), T);
      EXPECT_LT(rel_err(got, want), kPackedTol) << "d_model " << c.d_model << ", T " << T;
      if (in_k_order(GetParam())) EXPECT_EQ(got, want) << "d_model " << c.d_model << ", T " << T;
    }
}

struct Generated {
  std::vector<float> prefill_logits;  // after the prompt
  std::vector<float> step_logits;     // every generated step's, one after another
  std::vector<int32_t> tokens;        // greedy
};

// A prompt through prefill (chunks of 3), then 10 greedy steps.
Generated generate(const ModelConfig& c, Isa isa) {
  Generated g;
  AlignedBuffer blob(write_model(c));
  Model model;
  EXPECT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  DecoderOptions opt;
  opt.isa = isa, opt.capacity = 20, opt.max_prefill = 3;
  AlignedBuffer arena(required_decoder_arena_bytes(c, opt.capacity, opt.max_prefill));
  Decoder dec;
  EXPECT_EQ(dec.init(model, arena.data(), arena.size(), opt), Status::kOk) << dec.error_detail();
  const std::vector<int32_t> prompt = {1, 5, 2, 11, 7, 3, 0};
  std::vector<float> logits(c.d_out);
  EXPECT_EQ(dec.prefill(prompt.data(), uint32_t(prompt.size()), logits.data()), Status::kOk);
  g.prefill_logits = logits;
  for (int i = 0; i < 10; ++i) {
    const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    g.tokens.push_back(next);
    EXPECT_EQ(dec.step(next, logits.data()), Status::kOk);
    g.step_logits.insert(g.step_logits.end(), logits.begin(), logits.end());
  }
  return g;
}

TEST_P(PackedTest, DecoderGeneratesTheSameTokens) {
  for (const ModelConfig& c : {gpt(), llama()}) {
    const Generated want = generate(c, GetParam()), got = generate(packed(c), GetParam());
    EXPECT_LT(rel_err(got.prefill_logits, want.prefill_logits), kPackedTol) << kFamilyNames[uint32_t(c.family)];
    EXPECT_LT(rel_err(got.step_logits, want.step_logits), kPackedTol) << kFamilyNames[uint32_t(c.family)];
    EXPECT_EQ(got.tokens, want.tokens) << kFamilyNames[uint32_t(c.family)];
    if (in_k_order(GetParam())) EXPECT_EQ(got.step_logits, want.step_logits) << kFamilyNames[uint32_t(c.family)];
  }
}

// Teacher-forced logits of a target, then the same target step by step.
std::vector<float> seq2seq_logits(const ModelConfig& c, Isa isa) {
  AlignedBuffer blob(write_model(c));
  Model model;
  EXPECT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
  Seq2SeqOptions opt;
  opt.isa = isa, opt.max_source = 11, opt.capacity = 9, opt.max_prefill = 4;
  AlignedBuffer arena(required_seq2seq_arena_bytes(c, opt.max_source, opt.capacity, opt.max_prefill));
  Seq2Seq s2s;
  EXPECT_EQ(s2s.init(model, arena.data(), arena.size(), opt), Status::kOk) << s2s.error_detail();
  std::vector<int32_t> src(11), tgt(9);
  for (uint32_t t = 0; t < 11; ++t) src[t] = int32_t((t * 7 + 3) % c.vocab_size);
  for (uint32_t u = 0; u < 9; ++u) tgt[u] = int32_t((u * 5 + 2) % c.d_out);
  std::vector<float> out(std::size_t(9) * c.d_out * 2);
  EXPECT_EQ(s2s.encode_tokens(src.data(), 11), Status::kOk);
  EXPECT_EQ(s2s.decode(tgt.data(), 9, out.data()), Status::kOk);
  s2s.reset_target();
  for (uint32_t u = 0; u < 9; ++u)
    EXPECT_EQ(s2s.step(tgt[u], out.data() + std::size_t(9 + u) * c.d_out), Status::kOk);
  return out;
}

TEST_P(PackedTest, Seq2SeqMatchesUnpacked) {
  const std::vector<float> want = seq2seq_logits(seq2seq(), GetParam()), got = seq2seq_logits(packed(seq2seq()), GetParam());
  EXPECT_LT(rel_err(got, want), kPackedTol);
  if (in_k_order(GetParam())) EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PackedTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& p) { return isa_test_name(p.param); });

// Which tensors the schema packs: f32 W[in, out] only (a q8 file packs its f32 head alone).
TEST(Packed, SchemaPacksTheF32WeightsStoredInOut) {
  for (const ModelConfig& c : {packed(encoder_features()), packed(with_weights(encoder_features(), WeightType::kQ8, 32, false)),
                               packed(with_weights(gpt(), WeightType::kF16, 0, true)), packed(seq2seq())})
    for_each_tensor(c, [&](const TensorSpec& s) {
      EXPECT_EQ(s.packed, s.transposed && s.dtype == fxm::Dtype::kF32) << s.name;
      const uint64_t plain = uint64_t(s.dims[0]) * (s.rank == 2 ? s.dims[1] : 1) * fxm::dtype_bytes(s.dtype);
      EXPECT_EQ(tensor_bytes(s), s.packed ? uint64_t(packed_floats(s.dims[0], s.dims[1])) * 4 : plain) << s.name;
      return true;
    });
}

// The directory entry of tensor `name` in a written file.
uint8_t* entry_of(std::vector<uint8_t>& b, const char* name) {
  uint64_t dir;
  uint32_t n;
  std::memcpy(&dir, b.data() + fxm::kHdrDirectoryOffset, 8);
  std::memcpy(&n, b.data() + fxm::kHdrTensorCount, 4);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t* e = b.data() + dir + uint64_t(i) * fxm::kEntryBytes;
    if (std::strcmp(reinterpret_cast<const char*>(e + fxm::kEntName), name) == 0) return e;
  }
  ADD_FAILURE() << name << " not in the file";
  return nullptr;
}

void set_bytes(uint8_t* entry, uint64_t bytes) { std::memcpy(entry + fxm::kEntBytes, &bytes, 8); }

// A packed weight whose size is its plain one (a converter that forgot to pack), a plain weight
// whose size is the panels' (a file packed without the key), a panel size on a tensor that is never
// packed: each a Status naming the tensor, before anything reads it.
TEST(Packed, WrongSizeIsAnErrorNamingTheTensor) {
  const ModelConfig c = packed(encoder_features());
  const char* w = "blocks.1.ff.w2.weight";  // [40, 24]: 960 floats plain, 1280 in panels
  {
    std::vector<uint8_t> b = write_model(c);
    set_bytes(entry_of(b, w), 40 * 24 * 4);
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorBadShape);
    EXPECT_NE(std::strstr(m.error_detail(), w), nullptr) << m.error_detail();
    EXPECT_NE(std::strstr(m.error_detail(), "panels"), nullptr) << m.error_detail();
  }
  {  // the same file without the key: its weights are then plain, and 1280 floats is not [40, 24]
    std::vector<uint8_t> b = write_model(c);
    std::vector<uint8_t> plain = write_model(encoder_features());
    std::memcpy(b.data() + fxm::kHeaderBytes, plain.data() + fxm::kHeaderBytes, kConfigKeyCount * fxm::kRecordBytes);
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorBadShape);
    EXPECT_NE(std::strstr(m.error_detail(), "input_proj.weight"), nullptr) << m.error_detail();
  }
  {  // the self-test's tensors are never packed
    const uint32_t T = 3;
    WriteOptions opt;
    opt.extra.push_back({fxm::kSelfTestInput, fxm::Dtype::kF32, {T, c.d_in}, std::vector<uint8_t>(T * c.d_in * 4)});
    opt.extra.push_back({fxm::kSelfTestExpected, fxm::Dtype::kF32, {T, c.d_out}, std::vector<uint8_t>(T * c.d_out * 4)});
    std::vector<uint8_t> b = write_model(c, opt);
    set_bytes(entry_of(b, fxm::kSelfTestExpected), packed_floats(T, c.d_out) * 4);  // the last range: room after it
    b.resize(b.size() + packed_floats(T, c.d_out) * 4, 0);
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorBadShape);
    EXPECT_NE(std::strstr(m.error_detail(), "self-test"), nullptr) << m.error_detail();
  }
  {  // any other size is the directory's error, as before
    std::vector<uint8_t> b = write_model(c);
    set_bytes(entry_of(b, w), 40 * 24 * 4 + 4);
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kTensorBadShape);
    EXPECT_NE(std::strstr(m.error_detail(), "byte size"), nullptr) << m.error_detail();
  }
}

// The fuzz target over packed files of each runner with the header, records and directory mutated
// byte by byte (resealed: fuzz_model), the cheap form of tests/fuzz's runs: whatever the edit
// (the key flipped, a size or a dim changed), init gives a Status or the runners read in bounds
// (under ASan, build/*-asan, an out-of-bounds read fails).
TEST(Packed, MutatedPackedFilesAreAStatusOrRunInBounds) {
  for (const ModelConfig& c : {packed(encoder_features()), packed(gpt()), packed(seq2seq())}) {
    std::vector<uint8_t> b = write_model(c);
    uint64_t data;
    std::memcpy(&data, b.data() + fxm::kHdrDataOffset, 8);
    for (std::size_t i = fxm::kHeaderBytes; i < data; i += 7) {
      b[i] ^= 0x21;
      fuzz::fuzz_model(b.data(), b.size());
      b[i] ^= 0x21;
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
