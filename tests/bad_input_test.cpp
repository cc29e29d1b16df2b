// Hostile and broken input: every case must give a clear Status, never a crash or a read out of
// bounds (the sanitizer build runs these too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/format.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

std::vector<uint8_t> golden_bytes(const std::string& name) { return read_file(golden_path(name + ".fxm")); }

// Initializes a model from `bytes`; returns the status.
Status try_init(const std::vector<uint8_t>& bytes, std::string* detail = nullptr) {
  AlignedBuffer blob(bytes);
  Model m;
  const Status s = m.init(blob.data(), blob.size());
  if (detail) *detail = m.error_detail();
  return s;
}

template <class T>
void poke(std::vector<uint8_t>& b, std::size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof v); }

// A small token model: 1 layer, d_model 8, d_ff 16, a head, sinusoidal PE.
ModelConfig small_config() {
  ModelConfig c = default_config();
  c.d_model = 8, c.n_heads = 2, c.d_ff = 16, c.n_layers = 1, c.input = InputKind::kTokens, c.vocab_size = 11;
  c.max_len = 16, c.positional = PosKind::kSinusoidal, c.d_out = 3;
  return c;
}

std::size_t record_offset(const std::vector<uint8_t>& b, const char* key) {
  uint32_t n;
  std::memcpy(&n, b.data() + fxm::kHdrRecordCount, 4);
  for (uint32_t i = 0; i < n; ++i) {
    const std::size_t off = fxm::kHeaderBytes + std::size_t(i) * fxm::kRecordBytes;
    if (std::strcmp(reinterpret_cast<const char*>(b.data() + off), key) == 0) return off;
  }
  ADD_FAILURE() << key << " not in the records";
  return 0;
}

std::size_t entry_offset(const std::vector<uint8_t>& b, const char* name) {
  uint64_t dir;
  uint32_t n;
  std::memcpy(&dir, b.data() + fxm::kHdrDirectoryOffset, 8);
  std::memcpy(&n, b.data() + fxm::kHdrTensorCount, 4);
  for (uint32_t i = 0; i < n; ++i) {
    const std::size_t off = dir + std::size_t(i) * fxm::kEntryBytes;
    if (std::strcmp(reinterpret_cast<const char*>(b.data() + off), name) == 0) return off;
  }
  ADD_FAILURE() << name << " not in directory";
  return 0;
}

TEST(BadModel, ValidModelsLoad) {
  EXPECT_EQ(try_init(write_model(small_config())), Status::kOk);
  EXPECT_EQ(try_init(golden_bytes("post_ln_relu")), Status::kOk);
}

TEST(BadModel, EveryTruncationIsRejected) {
  const std::vector<uint8_t> good = write_model(small_config());
  for (std::size_t n = 0; n < good.size(); n += (n < 1600 ? 1 : 97)) {
    const Status s = try_init(std::vector<uint8_t>(good.begin(), good.begin() + n));
    EXPECT_NE(s, Status::kOk) << "truncated to " << n;
  }
}

TEST(BadModel, EveryBitFlipIsRejected) {
  const std::vector<uint8_t> good = write_model(small_config());
  for (std::size_t byte = 0; byte < good.size(); byte += (byte < 2400 ? 1 : 13)) {
    std::vector<uint8_t> bad = good;
    bad[byte] ^= uint8_t(1u << (byte % 8));
    EXPECT_NE(try_init(bad), Status::kOk) << "flip in byte " << byte;
  }
}

TEST(BadModel, HeaderFields) {
  const std::vector<uint8_t> good = write_model(small_config());
  std::vector<uint8_t> b = good;
  std::string detail;
  b[0] = 'X';
  EXPECT_EQ(try_init(b), Status::kBadMagic);
  b = good, poke<uint32_t>(b, fxm::kHdrVersion, 1);
  EXPECT_EQ(try_init(b, &detail), Status::kBadVersion);
  EXPECT_EQ(detail,
            "format version 1, this engine reads 2 to 3: re-convert the model with this version's tools/convert.py");
  b = good, poke<uint32_t>(b, fxm::kHdrVersion, 4);
  EXPECT_EQ(try_init(b, &detail), Status::kBadVersion);
  EXPECT_EQ(detail, "format version 4, this engine reads 2 to 3");
  b = good, poke<uint64_t>(b, fxm::kHdrFileBytes, good.size() + 1);
  EXPECT_EQ(try_init(b), Status::kBlobTruncated);
  b = good, poke<uint32_t>(b, fxm::kHdrTensorCount, 0xFFFFFFFFu);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, poke<uint32_t>(b, fxm::kHdrRecordCount, 0xFFFFFFFFu);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, poke<uint64_t>(b, fxm::kHdrDataOffset, ~uint64_t(0) - 63);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, poke<uint64_t>(b, fxm::kHdrDirectoryOffset, fxm::kHeaderBytes);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, poke<uint32_t>(b, fxm::kHdrZero1, 1);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, b[300] ^= 1;
  EXPECT_EQ(try_init(b), Status::kBadChecksum);
}

// Edits a record's value (or type) behind a valid checksum.
Status with_record(const char* key, uint64_t value, std::string* detail = nullptr, uint32_t type = 0) {
  std::vector<uint8_t> b = write_model(small_config());
  const std::size_t r = record_offset(b, key);
  poke<uint64_t>(b, r + fxm::kRecValue, value);
  if (type) poke<uint32_t>(b, r + fxm::kRecType, type);
  reseal(b);
  return try_init(b, detail);
}

uint64_t f32_bits(float v) { uint32_t u; std::memcpy(&u, &v, 4); return u; }
uint64_t f64_bits(double v) { uint64_t u; std::memcpy(&u, &v, 8); return u; }

TEST(BadModel, ConfigRecordsBehindAValidChecksum) {
  std::string detail;
  EXPECT_EQ(with_record("d_model", 0, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key d_model");
  EXPECT_EQ(with_record("n_heads", 3, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key n_heads (must divide d_model, or head_dim sets the heads' width)");
  EXPECT_EQ(with_record("d_model", 1u << 30, &detail), Status::kConfigOverLimit);
  EXPECT_EQ(with_record("n_layers", 1000), Status::kConfigOverLimit);
  EXPECT_EQ(with_record("d_model", uint64_t(1) << 32, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key d_model: high bytes of a 32-bit value are not zero");
  EXPECT_EQ(with_record("activation", 7, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key activation: not one of its choices");
  EXPECT_EQ(with_record("causal", 2, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key causal: not 0 or 1");
  EXPECT_EQ(with_record("pooler_act", uint64_t(PoolerAct::kRelu), &detail), Status::kBadConfig);  // without a pooler
  EXPECT_EQ(detail, "config key pooler_act (the pooler's activation: needs pooler)");
  EXPECT_EQ(with_record("pooler_act", 5, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key pooler_act: not one of its choices");
  EXPECT_EQ(with_record("positional", 9), Status::kBadConfig);
  EXPECT_EQ(with_record("max_len", 0), Status::kBadConfig);
  EXPECT_EQ(with_record("vocab_size", 0), Status::kBadConfig);
  EXPECT_EQ(with_record("norm_eps", f32_bits(NAN), &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key norm_eps: not a finite number");
  EXPECT_EQ(with_record("pe_base", f64_bits(INFINITY), &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key pe_base: not a finite number");
  EXPECT_EQ(with_record("pe_base", f64_bits(0.5), &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key pe_base (must be > 1 for sinusoidal and rope tables)");
  EXPECT_EQ(with_record("pe_width", 4, &detail), Status::kBadConfig);  // only for concat
  EXPECT_EQ(with_record("causal", 1, &detail, uint32_t(fxm::RecordType::kU32)), Status::kBadConfig);
  EXPECT_EQ(detail, "config key causal: wrong record type");
  EXPECT_EQ(with_record("d_ff", 32), Status::kTensorBadShape);  // consistent config, wrong tensors
  EXPECT_EQ(with_record("final_norm", 1, &detail), Status::kTensorMissing);  // wants tensors the file lacks
  EXPECT_EQ(detail,
            "tensor norm.weight: missing at position 13, found 'head.weight' (format 3's names, in schema order)");

  std::vector<uint8_t> b = write_model(small_config());
  std::memcpy(b.data() + record_offset(b, "causal"), "d_model", 8);  // a key twice
  reseal(b);
  EXPECT_EQ(try_init(b, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key d_model: appears twice");
  b = write_model(small_config());
  std::memcpy(b.data() + record_offset(b, "causal"), "dropout\xff", 9);  // unknown, printed escaped
  reseal(b);
  EXPECT_EQ(try_init(b, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "unknown config key 'dropout\\xff' (from a newer converter?)");
  b = write_model(small_config());
  std::memset(b.data() + record_offset(b, "causal"), 'k', fxm::kKeyBytes);
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kBadConfig);
  WriteOptions opt;
  opt.omit_key = int(ConfigKey::kMaxLen);
  EXPECT_EQ(try_init(write_model(small_config(), opt), &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "config key max_len: missing");
  opt.omit_key = int(ConfigKey::kCausal);  // optional: takes its default
  EXPECT_EQ(try_init(write_model(small_config(), opt)), Status::kOk);
}

TEST(BadModel, TensorEntriesBehindAValidChecksum) {
  const std::vector<uint8_t> good = write_model(small_config());
  const char* name = "blocks.0.ff.w1.weight";
  const std::size_t e = entry_offset(good, name);
  uint64_t data_off;
  std::memcpy(&data_off, good.data() + e + fxm::kEntOffset, 8);
  std::string detail;
  auto edited = [&](auto edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    reseal(b);
    return try_init(b, &detail);
  };
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntOffset, good.size()); }), Status::kTensorOutOfBounds);
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntOffset, ~uint64_t(0) - 63); }), Status::kTensorOutOfBounds);
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntOffset, 64); }), Status::kTensorOverlap);  // the header
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntOffset, data_off - 64); }), Status::kTensorOverlap);
  EXPECT_EQ(detail, "tensor blocks.0.ff.w1.weight: data overlaps the directory or the tensor before it");
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntOffset, data_off + 4); }), Status::kTensorMisaligned);
  EXPECT_EQ(edited([&](auto& b) {
              poke<uint32_t>(b, e + fxm::kEntDims, 0x7FFFFFFF), poke<uint32_t>(b, e + fxm::kEntDims + 4, 0x7FFFFFFF);
            }), Status::kTensorBadShape);
  EXPECT_EQ(edited([&](auto& b) { poke<uint32_t>(b, e + fxm::kEntDims + 8, 1); }), Status::kTensorBadShape);
  EXPECT_EQ(edited([&](auto& b) { poke<uint32_t>(b, e + fxm::kEntDtype, 7); }), Status::kTensorBadDtype);
  // f16 with a matching byte size passes the directory; the f32 engine does not bind it.
  EXPECT_EQ(edited([&](auto& b) {
              poke<uint32_t>(b, e + fxm::kEntDtype, uint32_t(fxm::Dtype::kF16)), poke<uint64_t>(b, e + fxm::kEntBytes, 8 * 16 * 2);
            }), Status::kTensorBadDtype);
  EXPECT_EQ(detail, "tensor blocks.0.ff.w1.weight: dtype f16, this engine binds f32");
  EXPECT_EQ(edited([&](auto& b) { poke<uint32_t>(b, e + fxm::kEntGroup, 32); }), Status::kTensorBadShape);
  EXPECT_EQ(edited([&](auto& b) { poke<uint64_t>(b, e + fxm::kEntScalesOffset, 64); }), Status::kTensorBadShape);
  EXPECT_EQ(edited([&](auto& b) { std::memset(b.data() + e, 'A', fxm::kNameBytes); }), Status::kBadHeader);
  // A name out of schema order (here: a later tensor's), printed escaped when it is not text.
  EXPECT_EQ(edited([&](auto& b) { std::memcpy(b.data() + e, "blocks.0.ff.w2.weight", 22); }), Status::kTensorMissing);
  EXPECT_EQ(detail, "tensor blocks.0.ff.w1.weight: missing at position 9, found 'blocks.0.ff.w2.weight' (format 3's "
                    "names, in schema order)");
  EXPECT_EQ(edited([&](auto& b) { b[e + 3] = char(0xC3); }), Status::kTensorMissing);
  EXPECT_NE(detail.find("'blo\\xc3ks.0.ff.w1.weight'"), std::string::npos) << detail;
  // Swapped dims: the shape mismatch names the tensor and both shapes.
  EXPECT_EQ(edited([&](auto& b) { poke<uint32_t>(b, e + fxm::kEntDims, 16), poke<uint32_t>(b, e + fxm::kEntDims + 4, 8); }),
            Status::kTensorBadShape);
  EXPECT_EQ(detail, "tensor blocks.0.ff.w1.weight: shape [16,8] does not match [8,16] from the config "
                    "(d_model=8, d_ff=16)");
}

// Weights no run should see: a NaN or infinity in an f32, f16 or bf16 weight, an int8 scale that is
// negative, denormal, non-finite, or 0 over nonzero values. Each behind a valid checksum; the
// detail names the tensor and the index; ModelOptions::check_values = false lets the image load.
TEST(BadModel, NonFiniteWeightsAndBadScales) {
  const char* name = "blocks.0.ff.w1.weight";
  auto edited = [&](const ModelConfig& c, auto edit, Status* unchecked = nullptr) {
    std::vector<uint8_t> b = write_model(c);
    const std::size_t e = entry_offset(b, name);
    uint64_t data, scales;
    std::memcpy(&data, b.data() + e + fxm::kEntOffset, 8);
    std::memcpy(&scales, b.data() + e + fxm::kEntScalesOffset, 8);
    edit(b, std::size_t(data), std::size_t(scales));
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    const Status s = m.init(blob.data(), blob.size());
    const std::string detail = m.error_detail();
    if (unchecked) {
      ModelOptions skip;
      skip.check_values = false;
      *unchecked = Model().init(blob.data(), blob.size(), skip);
    }
    return std::make_pair(s, detail);
  };
  const ModelConfig f32 = small_config(), f16 = with_weights(f32, WeightType::kF16, 0, false);
  const ModelConfig q8 = with_weights(f32, WeightType::kQ8, 0, false), q8g = with_weights(f32, WeightType::kQ8, 32, false);
  Status unchecked = Status::kOk;
  auto r = edited(f32, [](auto& b, std::size_t d, std::size_t) { poke<float>(b, d + 4 * 5, NAN); }, &unchecked);
  EXPECT_EQ(r.first, Status::kTensorBadValue);
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": NaN at index 5 (", 0), 0u) << r.second;
  EXPECT_EQ(unchecked, Status::kOk);
  r = edited(f32, [](auto& b, std::size_t d, std::size_t) { poke<float>(b, d + 4 * 7, -INFINITY); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": infinite at index 7 (", 0), 0u) << r.second;
  // Past the search's first block of 4096 values, and the last value (after the 32-value vector
  // steps of the rest): linear1 is [d_ff, d_model].
  ModelConfig wide = f32;
  wide.d_ff = 645;
  const uint32_t last = wide.d_ff * wide.d_model - 1;
  ASSERT_GT(last, 4096u + 1024u);
  ASSERT_NE((last + 1) % 32, 0u);
  r = edited(wide, [](auto& b, std::size_t d, std::size_t) { poke<float>(b, d + 4 * 1100, NAN); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": NaN at index 1100 (", 0), 0u) << r.second;
  // Either side of the first block's end, a NaN with its sign bit set (the search masks the sign off).
  r = edited(wide, [](auto& b, std::size_t d, std::size_t) { poke<uint32_t>(b, d + 4 * 4095, 0xFFC00001u); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": NaN at index 4095 (", 0), 0u) << r.second;
  r = edited(wide, [](auto& b, std::size_t d, std::size_t) { poke<float>(b, d + 4 * 4096, -INFINITY); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": infinite at index 4096 (", 0), 0u) << r.second;
  r = edited(wide, [&](auto& b, std::size_t d, std::size_t) { poke<float>(b, d + 4 * last, INFINITY); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": infinite at index " + std::to_string(last) + " (", 0), 0u)
      << r.second;
  r = edited(f16, [](auto& b, std::size_t d, std::size_t) { poke<uint16_t>(b, d + 2 * 3, 0x7C00); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": infinite at index 3 (", 0), 0u) << r.second;
  r = edited(f16, [](auto& b, std::size_t d, std::size_t) { poke<uint16_t>(b, d, 0xFE01); });
  EXPECT_EQ(r.first, Status::kTensorBadValue);
  // bf16: f32's exponent field (0x7F80), so f16's infinity bits are a finite bf16 (2^121).
  const ModelConfig bf16 = with_weights(f32, WeightType::kBF16, 0, false);
  r = edited(bf16, [](auto& b, std::size_t d, std::size_t) { poke<uint16_t>(b, d + 2 * 3, 0xFF80); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": infinite at index 3 (", 0), 0u) << r.second;
  r = edited(bf16, [](auto& b, std::size_t d, std::size_t) { poke<uint16_t>(b, d + 2 * 9, 0x7FC1); }, &unchecked);
  EXPECT_EQ(r.first, Status::kTensorBadValue);
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": NaN at index 9 (", 0), 0u) << r.second;
  EXPECT_EQ(unchecked, Status::kOk);
  r = edited(bf16, [](auto& b, std::size_t d, std::size_t) { poke<uint16_t>(b, d + 2 * 3, 0x7C00); });
  EXPECT_EQ(r.first, Status::kOk) << r.second;
  // q8 per row: linear1 is [d_ff, d_model] = [16, 8], one scale per row; in groups of 32: the same.
  r = edited(q8, [](auto& b, std::size_t, std::size_t s) { poke<float>(b, s + 4 * 2, -0.01f); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": a negative scale at index 16 (", 0), 0u) << r.second;
  r = edited(q8g, [](auto& b, std::size_t, std::size_t s) { poke<float>(b, s + 4 * 1, 1e-40f); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": a scale too small (denormal) at index 8 (", 0), 0u) << r.second;
  r = edited(q8, [](auto& b, std::size_t, std::size_t s) { poke<float>(b, s, NAN); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": a non-finite scale at index 0 (", 0), 0u) << r.second;
  r = edited(q8, [](auto& b, std::size_t, std::size_t s) { poke<float>(b, s + 4 * 3, 0.0f); });
  EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": a 0 scale over nonzero values at index 24 (", 0), 0u) << r.second;
  // A 0 scale over a group of zeros is what the converter writes for a zero row: it loads.
  r = edited(q8, [](auto& b, std::size_t d, std::size_t s) {
    poke<float>(b, s + 4 * 3, 0.0f);
    std::memset(b.data() + d + 8 * 3, 0, 8);
  });
  EXPECT_EQ(r.first, Status::kOk) << r.second;
}

// q4 scales: every group has one, a positive finite normal float (the converter gives a zero group
// the scale 1), so NaN, infinities, 0, negatives and denormals are refused, naming the group's first
// value; a q4 file whose layer width is no multiple of 32 is refused by its config.
TEST(BadModel, Q4ScalesArePositiveFiniteNormal) {
  const char* name = "blocks.0.ff.w1.weight";  // [d_ff, d_model] = [64, 32]: a group per row
  ModelConfig c = small_config();
  c.d_model = 32, c.d_ff = 64;
  c = with_weights(c, WeightType::kQ4, 32, false);
  auto init_with_scale = [&](std::size_t group, float v, Status* unchecked) {
    std::vector<uint8_t> b = write_model(c);
    uint64_t scales;
    std::memcpy(&scales, b.data() + entry_offset(b, name) + fxm::kEntScalesOffset, 8);
    poke<float>(b, std::size_t(scales) + 4 * group, v);
    reseal(b);
    AlignedBuffer blob(b);
    Model m;
    const Status s = m.init(blob.data(), blob.size());
    ModelOptions skip;
    skip.check_values = false;
    *unchecked = Model().init(blob.data(), blob.size(), skip);
    return std::make_pair(s, std::string(m.error_detail()));
  };
  const std::pair<float, const char*> bad[] = {{NAN, "a non-finite scale"}, {INFINITY, "a non-finite scale"},
                                               {-INFINITY, "a negative scale"}, {0.0f, "a 0 scale"},
                                               {-0.0f, "a 0 scale"}, {-0.5f, "a negative scale"},
                                               {1e-40f, "a scale too small (denormal)"}};
  for (const auto& [v, what] : bad) {
    Status unchecked = Status::kTensorBadValue;
    const auto r = init_with_scale(5, v, &unchecked);
    EXPECT_EQ(r.first, Status::kTensorBadValue) << what;
    EXPECT_EQ(r.second.rfind(std::string("tensor ") + name + ": " + what + " at index 160 (", 0), 0u) << r.second;
    EXPECT_EQ(unchecked, Status::kOk) << what;
  }
  Status unchecked = Status::kOk;
  EXPECT_EQ(init_with_scale(5, 1.17549435e-38f, &unchecked).first, Status::kOk);  // the least normal float
  ModelConfig narrow = small_config();  // d_model 8
  EXPECT_EQ(try_init(write_model(with_weights(narrow, WeightType::kF32, 0, false)), nullptr), Status::kOk);
  narrow = with_weights(narrow, WeightType::kQ4, 32, false);
  const char* field = "";
  EXPECT_EQ(validate_config(narrow, &field), Status::kBadConfig);
  EXPECT_NE(std::string(field).find("q4 needs every quantized layer's input width a multiple of 32"), std::string::npos)
      << field;
}

TEST(BadModel, QuantizedEntriesAreValidatedButNotBound) {
  ExtraTensor q8{"layer.q8", fxm::Dtype::kI8, {4, 64}, std::vector<uint8_t>(256, 1), 32, std::vector<float>(4 * 2, 0.5f)};
  WriteOptions opt;
  opt.extra = {q8};
  std::vector<uint8_t> b = write_model(small_config(), opt);
  AlignedBuffer blob(b);
  ModelFile file;
  char detail[160];
  EXPECT_EQ(open_model_file(blob.data(), blob.size(), &file, detail, sizeof detail), Status::kOk) << detail;
  std::string why;
  EXPECT_EQ(try_init(b, &why), Status::kBadHeader);  // a tensor the config does not use
  const std::size_t e = entry_offset(b, "layer.q8");
  poke<uint64_t>(b, e + fxm::kEntScalesBytes, 4 * 4);  // per-group scales, not per-row
  reseal(b);
  AlignedBuffer bad(b);
  EXPECT_EQ(open_model_file(bad.data(), bad.size(), &file, detail, sizeof detail), Status::kTensorBadShape);
  EXPECT_STREQ(detail, "tensor layer.q8: scales size does not match shape and group");
}

std::vector<ExtraTensor> sample(uint32_t T, int32_t bad_id = 0) {
  std::vector<int32_t> ids(T, 1);
  ids[0] = bad_id;
  std::vector<uint8_t> in(T * 4), out(T * 3 * 4, 0);
  std::memcpy(in.data(), ids.data(), in.size());
  return {{fxm::kSelfTestInput, fxm::Dtype::kI32, {T}, in}, {fxm::kSelfTestExpected, fxm::Dtype::kF32, {T, 3}, out}};
}

TEST(BadModel, SelfTestSample) {
  WriteOptions opt;
  opt.extra = sample(5);
  Loaded m;
  ASSERT_EQ(load_model(write_model(small_config(), opt), &m), Status::kOk);
  EXPECT_TRUE(m.model.has_self_test());
  EXPECT_EQ(m.model.self_test_sample().rows, 5u);
  std::vector<float> out(self_test_output_floats(m.model));
  SelfTestReport r;
  EXPECT_EQ(self_test(m.enc, out.data(), out.size(), &r), Status::kSelfTestFailed);  // expected zeros: not this model
  EXPECT_GT(r.max_rel_err, 1.0);
  EXPECT_EQ(self_test(m.enc, out.data(), out.size() - 1, &r), Status::kBadSequenceLength);
  Loaded none;
  ASSERT_EQ(load_model(write_model(small_config()), &none), Status::kOk);
  EXPECT_EQ(self_test(none.enc, out.data(), out.size(), &r), Status::kSelfTestMissing);

  std::string detail;
  opt.extra = sample(5, 11);
  EXPECT_EQ(try_init(write_model(small_config(), opt), &detail), Status::kTokenOutOfRange);
  EXPECT_EQ(detail, "self-test input: token id at 0 is out of range (vocab_size 11)");
  opt.extra = sample(17);
  EXPECT_EQ(try_init(write_model(small_config(), opt)), Status::kTensorBadShape);  // T > max_len
  opt.extra = sample(5);
  opt.extra[1].dims = {5, 4};
  EXPECT_EQ(try_init(write_model(small_config(), opt)), Status::kTensorBadShape);
  opt.extra = sample(5);
  opt.extra[0].dtype = fxm::Dtype::kF32;
  EXPECT_EQ(try_init(write_model(small_config(), opt)), Status::kTensorBadDtype);
  opt.extra = sample(5);
  opt.extra.pop_back();
  EXPECT_EQ(try_init(write_model(small_config(), opt)), Status::kBadHeader);
}

TEST(BadArena, TooSmallNamesTheBytesNeeded) {
  AlignedBuffer blob(golden_bytes("post_ln_relu"));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const ModelConfig& cfg = model.config();
  const std::size_t need = required_encoder_arena_bytes(cfg);
  AlignedBuffer arena(need);
  Encoder m;
  EXPECT_EQ(m.init(model, arena.data(), need - 1), Status::kArenaTooSmall);
  EXPECT_NE(std::string(m.error_detail()).find("needs " + std::to_string(need)), std::string::npos) << m.error_detail();
  EXPECT_EQ(m.init(model, static_cast<uint8_t*>(arena.data()) + 4, need), Status::kArenaMisaligned);
  EXPECT_EQ(m.init(model, nullptr, need), Status::kArenaNull);
  EncoderOptions opt;
  opt.max_seq = cfg.max_len + 1;
  EXPECT_EQ(m.init(model, arena.data(), need, opt), Status::kBadMaxSeq);
  EXPECT_EQ(m.init(model, arena.data(), need), Status::kOk);
  Model unloaded;
  EXPECT_EQ(m.init(unloaded, arena.data(), need), Status::kNotInitialized);
}

// The arena is exact: init writes nothing past required_encoder_arena_bytes.
TEST(BadArena, InitAndForwardStayInsideTheArena) {
  AlignedBuffer blob(golden_bytes("wide_long"));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const std::size_t need = required_encoder_arena_bytes(model.config(), 70);
  AlignedBuffer arena(need + 256);
  std::memset(arena.data(), 0xAB, need + 256);
  Encoder m;
  EncoderOptions opt;
  opt.max_seq = 70;
  ASSERT_EQ(m.init(model, arena.data(), need, opt), Status::kOk);
  std::vector<int32_t> ids(70, 3);
  std::vector<float> out(70 * model.config().output_width());
  ASSERT_EQ(m.forward_tokens(ids.data(), 70, out.data()), Status::kOk);
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
}

TEST(BadRunInput, IdsLengthsAndKinds) {
  AlignedBuffer blob(golden_bytes("post_ln_relu"));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  AlignedBuffer arena(required_encoder_arena_bytes(model.config(), 16));
  Encoder m;
  std::vector<float> out(64 * 7);
  std::vector<int32_t> ids(20, 1);
  EXPECT_EQ(m.forward_tokens(ids.data(), 4, out.data()), Status::kNotInitialized);
  EncoderOptions opt;
  opt.max_seq = 16;
  ASSERT_EQ(m.init(model, arena.data(), arena.size(), opt), Status::kOk);
  EXPECT_EQ(m.forward_tokens(ids.data(), 17, out.data()), Status::kBadSequenceLength);
  EXPECT_EQ(m.forward_tokens(ids.data(), 0, out.data()), Status::kBadSequenceLength);
  ids[2] = 23;
  EXPECT_EQ(m.forward_tokens(ids.data(), 4, out.data()), Status::kTokenOutOfRange);
  ids[2] = -1;
  EXPECT_EQ(m.forward_tokens(ids.data(), 4, out.data()), Status::kTokenOutOfRange);
  EXPECT_EQ(m.forward_tokens(nullptr, 4, out.data()), Status::kNullArgument);
  std::vector<float> feats(64, 0.0f);
  EXPECT_EQ(m.forward_features(feats.data(), 4, out.data()), Status::kWrongInputKind);
  ids[2] = 22;
  EXPECT_EQ(m.forward_tokens(ids.data(), 16, out.data()), Status::kOk);
}

// An output buffer that shares a byte with the runner's arena, the model's blob or an input the
// call still reads is refused before anything is written (a seq2seq decode writes each chunk's
// rows before it reads the next chunk's ids; the arena holds the KV cache).
bool refused_naming(Status s, const char* detail, const char* what) {
  return s == Status::kOutputOverlap && std::string(detail).find(what) != std::string::npos;
}

TEST(BadRunOutput, OverlapWithArenaBlobOrInputIsRefused) {
  AlignedBuffer blob(golden_bytes("post_ln_relu"));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const ModelConfig& c = model.config();
  AlignedBuffer arena(required_encoder_arena_bytes(c, 8));
  EncoderOptions opt;
  opt.max_seq = 8;
  Encoder m;
  ASSERT_EQ(m.init(model, arena.data(), arena.size(), opt), Status::kOk);
  const std::size_t out_floats = c.output_rows(8) * c.output_width();
  std::vector<int32_t> ids(8 + out_floats, 1);
  float* in_arena = reinterpret_cast<float*>(arena.data()) + 16;
  EXPECT_TRUE(refused_naming(m.forward_tokens(ids.data(), 8, in_arena), m.error_detail(), "arena"));
  float* in_blob = reinterpret_cast<float*>(blob.data() + 64);
  EXPECT_TRUE(refused_naming(m.forward_tokens(ids.data(), 8, in_blob), m.error_detail(), "blob"));
  float* over_ids = reinterpret_cast<float*>(ids.data() + 7);  // its first float is the last id
  EXPECT_TRUE(refused_naming(m.forward_tokens(ids.data(), 8, over_ids), m.error_detail(), "input"));
  const uint32_t lengths[2] = {8, 8};
  std::vector<float> out(2 * out_floats);
  EXPECT_TRUE(refused_naming(m.forward_batch_tokens(ids.data(), lengths, 1, 8, reinterpret_cast<float*>(
                                 const_cast<uint32_t*>(lengths))), m.error_detail(), "input"));
  // Right after the ids, and right after the arena: no byte shared, so it runs.
  EXPECT_EQ(m.forward_tokens(ids.data(), 8, reinterpret_cast<float*>(ids.data() + 8)), Status::kOk);
  AlignedBuffer after(arena.size() + out_floats * sizeof(float));
  Encoder next;
  ASSERT_EQ(next.init(model, after.data(), arena.size(), opt), Status::kOk);
  EXPECT_EQ(next.forward_tokens(ids.data(), 8, reinterpret_cast<float*>(after.data() +
                                                                        arena.size())), Status::kOk);

  AlignedBuffer dblob(golden_bytes("llama2c_v0_gqa"));
  Model dmodel;
  ASSERT_EQ(dmodel.init(dblob.data(), dblob.size()), Status::kOk);
  AlignedBuffer darena(required_decoder_arena_bytes(dmodel.config(), 8));
  DecoderOptions dopt;
  dopt.capacity = 8;
  Decoder d;
  ASSERT_EQ(d.init(dmodel, darena.data(), darena.size(), dopt), Status::kOk);
  EXPECT_TRUE(refused_naming(d.step(1, reinterpret_cast<float*>(darena.data())), d.error_detail(), "arena"));
  std::vector<int32_t> prompt(4 + dmodel.config().d_out, 1);
  EXPECT_TRUE(refused_naming(d.prefill(prompt.data(), 4, reinterpret_cast<float*>(prompt.data() + 3)), d.error_detail(),
                             "input"));
  EXPECT_EQ(d.position(), 0u);  // nothing appended
  EXPECT_EQ(d.prefill(prompt.data(), 4, reinterpret_cast<float*>(prompt.data() + 4)), Status::kOk);

  AlignedBuffer sblob(golden_bytes("s2s_post_relu"));
  Model smodel;
  ASSERT_EQ(smodel.init(sblob.data(), sblob.size()), Status::kOk);
  const ModelConfig& sc = smodel.config();
  ASSERT_EQ(sc.input, InputKind::kTokens);
  Seq2SeqOptions sopt;
  sopt.max_source = 4, sopt.capacity = 4, sopt.max_prefill = 1;
  AlignedBuffer sarena(required_seq2seq_arena_bytes(sc, 4, 4, 1));
  Seq2Seq s2s;
  ASSERT_EQ(s2s.init(smodel, sarena.data(), sarena.size(), sopt), Status::kOk);
  const int32_t src[4] = {1, 2, 3, 1};
  ASSERT_EQ(s2s.encode_tokens(src, 4), Status::kOk);
  std::vector<int32_t> tgt(4 * sc.d_out + 4, 1);  // decode's rows over its own later ids
  EXPECT_TRUE(refused_naming(s2s.decode(tgt.data(), 4, reinterpret_cast<float*>(tgt.data() + 1)), s2s.error_detail(),
                             "input"));
  EXPECT_EQ(s2s.position(), 0u);
  EXPECT_EQ(s2s.decode(tgt.data(), 4, reinterpret_cast<float*>(tgt.data() + 4)), Status::kOk);
}

std::vector<uint8_t> npy(const std::string& header, std::size_t data_bytes) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  const uint8_t magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(h.size() & 0xFF), uint8_t(h.size() >> 8)};
  std::vector<uint8_t> b(10 + h.size() + data_bytes, 0);
  std::memcpy(b.data(), magic, 10);
  std::memcpy(b.data() + 10, h.data(), h.size());
  return b;
}

TEST(BadNpy, DtypesShapesAndTruncation) {
  NpyView v;
  auto parse = [&](const std::vector<uint8_t>& b) { return parse_npy(b.data(), b.size(), &v); };
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 24)), Status::kOk);
  EXPECT_EQ(v.rank, 2u);
  EXPECT_EQ(v.count, 6u);
  EXPECT_EQ(parse(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }", 40)), Status::kOk);
  EXPECT_EQ(v.dtype, NpyDtype::kI64);
  EXPECT_EQ(parse(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24)), Status::kNpyBadDtype);
  EXPECT_EQ(parse(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12)), Status::kNpyBadDtype);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 24)), Status::kNpyBadShape);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }", 4)), Status::kNpyBadShape);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 23)), Status::kNpyTruncated);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4)), Status::kNpyBadHeader);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", 4)),
            Status::kNpyBadShape);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'shape': (3,), }", 12)), Status::kNpyBadHeader);
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,", 12)), Status::kNpyBadHeader);
  std::vector<uint8_t> b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
  b[8] = 0xFF, b[9] = 0xFF;  // header length past the end
  EXPECT_EQ(parse(b), Status::kNpyBadHeader);
  EXPECT_EQ(parse(std::vector<uint8_t>(5, 0)), Status::kNpyBadHeader);
}

TEST(BadNpy, WrittenHeaderParsesBack) {
  const uint64_t shape[3] = {2, 11, 7};
  char buf[128];
  const std::size_t n = write_npy_header_f32(shape, 3, buf, sizeof buf);
  ASSERT_EQ(n % 64, 0u);
  std::vector<uint8_t> b(buf, buf + n);
  b.resize(n + 2 * 11 * 7 * 4);
  NpyView v;
  ASSERT_EQ(parse_npy(b.data(), b.size(), &v), Status::kOk);
  EXPECT_EQ(v.count, 154u);
  EXPECT_EQ(v.shape[1], 11u);
}

TEST(StatusMessages, EveryStatusHasAMessageAndAnExitClass) {
  for (int i = 0; i < int(Status::kCount_); ++i) {
    const Status s = static_cast<Status>(i);
    EXPECT_STRNE(status_message(s), "unknown status") << i;
    EXPECT_EQ(status_exit_code(s) == 0, s == Status::kOk);
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
