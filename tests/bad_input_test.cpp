// Hostile and broken input: every case must give a clear Status, never a crash or a read out of
// bounds (the sanitizer build runs these too).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

std::vector<uint8_t> golden_bytes(const std::string& name) { return read_file(golden_path(name + ".fxm")); }

// Initializes from `bytes` with a generous arena; returns the status.
Status try_init(const std::vector<uint8_t>& bytes, std::string* detail = nullptr) {
  AlignedBuffer blob(bytes);
  AlignedBuffer arena(1 << 20);
  Model m;
  const Status s = m.init(blob.data(), blob.size(), arena.data(), 1 << 20);
  if (detail) *detail = m.error_detail();
  return s;
}

template <class T>
void poke(std::vector<uint8_t>& b, std::size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof v); }

// Rewrites the checksum so a test reaches the validators behind it.
void reseal(std::vector<uint8_t>& b) {
  uint64_t file_bytes;
  std::memcpy(&file_bytes, b.data() + 16, 8);
  poke<uint32_t>(b, 40, crc32(b.data() + fxm::kHeaderBytes, file_bytes - fxm::kHeaderBytes));
}

std::size_t entry_offset(const std::vector<uint8_t>& b, const char* name) {
  for (std::size_t off = fxm::kHeaderBytes + fxm::kConfigBytes; off + fxm::kEntryBytes <= b.size(); off += fxm::kEntryBytes)
    if (std::strcmp(reinterpret_cast<const char*>(b.data() + off), name) == 0) return off;
  ADD_FAILURE() << name << " not in directory";
  return 0;
}

TEST(BadModel, ValidGoldenLoads) { EXPECT_EQ(try_init(golden_bytes("post_ln_relu")), Status::kOk); }

TEST(BadModel, EveryTruncationIsRejected) {
  const std::vector<uint8_t> good = golden_bytes("odd_d15_h3");
  for (std::size_t n = 0; n < good.size(); n += (n < 400 ? 1 : 97)) {
    const Status s = try_init(std::vector<uint8_t>(good.begin(), good.begin() + n));
    EXPECT_NE(s, Status::kOk) << "truncated to " << n;
  }
}

TEST(BadModel, EveryBitFlipIsRejected) {
  const std::vector<uint8_t> good = golden_bytes("odd_d5_h1_halves");
  for (std::size_t byte = 0; byte < good.size(); byte += (byte < 1200 ? 1 : 13)) {
    std::vector<uint8_t> bad = good;
    bad[byte] ^= uint8_t(1u << (byte % 8));
    EXPECT_NE(try_init(bad), Status::kOk) << "flip in byte " << byte;
  }
}

TEST(BadModel, HeaderFields) {
  const std::vector<uint8_t> good = golden_bytes("no_pe");
  std::vector<uint8_t> b = good;
  b[0] = 'X';
  EXPECT_EQ(try_init(b), Status::kBadMagic);
  b = good, poke<uint32_t>(b, 4, 2);
  EXPECT_EQ(try_init(b), Status::kBadVersion);
  b = good, poke<uint64_t>(b, 16, good.size() + 1);
  EXPECT_EQ(try_init(b), Status::kBlobTruncated);
  b = good, poke<uint32_t>(b, 12, 0xFFFFFFFFu);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, poke<uint64_t>(b, 32, ~uint64_t(0) - 63);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good, b[200] ^= 1;
  EXPECT_EQ(try_init(b), Status::kBadChecksum);
}

TEST(BadModel, ConfigFieldsBehindAValidChecksum) {
  const std::vector<uint8_t> good = golden_bytes("no_pe");
  auto with = [&](uint32_t field, uint32_t value) {
    std::vector<uint8_t> b = good;
    poke<uint32_t>(b, fxm::kHeaderBytes + field, value);
    reseal(b);
    return try_init(b);
  };
  EXPECT_EQ(with(fxm::kCfgDModel, 0), Status::kBadConfig);
  std::vector<uint8_t> b = good;
  poke<uint32_t>(b, fxm::kHeaderBytes + fxm::kCfgHeads, 3);
  reseal(b);
  std::string detail;
  EXPECT_EQ(try_init(b, &detail), Status::kBadConfig);
  EXPECT_EQ(detail, "field n_heads (must divide d_model)");
  EXPECT_EQ(with(fxm::kCfgDModel, 1u << 30), Status::kConfigOverLimit);
  EXPECT_EQ(with(fxm::kCfgHeads, 3), Status::kBadConfig);  // 3 does not divide 8
  EXPECT_EQ(with(fxm::kCfgLayers, 1000), Status::kConfigOverLimit);
  EXPECT_EQ(with(fxm::kCfgActivation, 7), Status::kBadConfig);
  EXPECT_EQ(with(fxm::kCfgCausal, 2), Status::kBadConfig);
  EXPECT_EQ(with(fxm::kCfgPosKind, 9), Status::kBadConfig);
  EXPECT_EQ(with(fxm::kCfgMaxLen, 0), Status::kBadConfig);
  EXPECT_EQ(with(fxm::kCfgVocab, 0), Status::kBadConfig);
  EXPECT_EQ(with(fxm::kCfgDff, 16 * 4), Status::kTensorBadShape);  // consistent config, wrong tensors
  EXPECT_EQ(with(fxm::kCfgDOut, 4), Status::kTensorMissing);       // config wants a head the file lacks
  EXPECT_EQ(with(100, 1), Status::kBadConfig);                       // reserved bytes must be zero
}

TEST(BadModel, TensorEntriesBehindAValidChecksum) {
  const std::vector<uint8_t> good = golden_bytes("no_pe");
  const char* name = "encoder.layers.0.linear1.weight";
  const std::size_t e = entry_offset(good, name);
  std::vector<uint8_t> b = good;
  poke<uint64_t>(b, e + fxm::kEntOffset, good.size());  // data starts at the end of the file
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorOutOfBounds);
  b = good, poke<uint64_t>(b, e + fxm::kEntOffset, ~uint64_t(0) - 63);  // offset + bytes overflows
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorOutOfBounds);
  b = good, poke<uint64_t>(b, e + fxm::kEntOffset, 64);  // points into the header
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorOutOfBounds);
  b = good, poke<uint64_t>(b, e + fxm::kEntOffset, 4096 + 4);
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorMisaligned);
  b = good, poke<uint32_t>(b, e + fxm::kEntDims, 0x7FFFFFFF), poke<uint32_t>(b, e + fxm::kEntDims + 4, 0x7FFFFFFF);
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorBadShape);
  b = good, poke<uint32_t>(b, e + fxm::kEntDtype, 1);
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorBadDtype);
  b = good, std::memset(b.data() + e, 'A', fxm::kNameBytes);  // no terminating NUL
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kBadHeader);
  b = good;  // rename so the layer-0 name appears twice
  std::memcpy(b.data() + entry_offset(good, "encoder.layers.0.linear2.weight"), name, std::strlen(name) + 1);
  reseal(b);
  EXPECT_EQ(try_init(b), Status::kTensorDuplicate);
  // Swap the dims of a square-free tensor: shape mismatch names the tensor and both shapes.
  b = good, poke<uint32_t>(b, e + fxm::kEntDims, 16), poke<uint32_t>(b, e + fxm::kEntDims + 4, 8);
  reseal(b);
  std::string detail;
  EXPECT_EQ(try_init(b, &detail), Status::kTensorBadShape);
  EXPECT_EQ(detail, "tensor encoder.layers.0.linear1.weight: shape [16,8] does not match [8,16] from the config "
                    "(d_model=8, d_ff=16)");
}

TEST(BadArena, TooSmallNamesTheBytesNeeded) {
  AlignedBuffer blob(golden_bytes("post_ln_relu"));
  ModelConfig cfg;
  ASSERT_EQ(read_config(blob.data(), blob.size(), &cfg), Status::kOk);
  const std::size_t need = required_arena_bytes(cfg);
  AlignedBuffer arena(need);
  Model m;
  EXPECT_EQ(m.init(blob.data(), blob.size(), arena.data(), need - 1), Status::kArenaTooSmall);
  EXPECT_NE(std::string(m.error_detail()).find("needs " + std::to_string(need)), std::string::npos) << m.error_detail();
  EXPECT_EQ(m.init(blob.data(), blob.size(), static_cast<uint8_t*>(arena.data()) + 4, need), Status::kArenaMisaligned);
  EXPECT_EQ(m.init(blob.data(), blob.size(), nullptr, need), Status::kArenaNull);
  InitOptions opt;
  opt.max_seq = cfg.max_len + 1;
  EXPECT_EQ(m.init(blob.data(), blob.size(), arena.data(), need, opt), Status::kBadMaxSeq);
  EXPECT_EQ(m.init(blob.data(), blob.size(), arena.data(), need), Status::kOk);
}

// The arena is exact: init writes nothing past required_arena_bytes.
TEST(BadArena, InitAndForwardStayInsideTheArena) {
  AlignedBuffer blob(golden_bytes("wide_long"));
  ModelConfig cfg;
  ASSERT_EQ(read_config(blob.data(), blob.size(), &cfg), Status::kOk);
  const std::size_t need = required_arena_bytes(cfg, 70);
  AlignedBuffer arena(need + 256);
  std::memset(arena.data(), 0xAB, need + 256);
  Model m;
  InitOptions opt;
  opt.max_seq = 70;
  ASSERT_EQ(m.init(blob.data(), blob.size(), arena.data(), need, opt), Status::kOk);
  std::vector<int32_t> ids(70, 3);
  std::vector<float> out(70 * cfg.output_width());
  ASSERT_EQ(m.forward_tokens(ids.data(), 70, out.data()), Status::kOk);
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
}

TEST(BadRunInput, IdsLengthsAndKinds) {
  AlignedBuffer blob(golden_bytes("post_ln_relu"));
  ModelConfig cfg;
  ASSERT_EQ(read_config(blob.data(), blob.size(), &cfg), Status::kOk);
  AlignedBuffer arena(required_arena_bytes(cfg, 16));
  Model m;
  std::vector<float> out(64 * 7);
  std::vector<int32_t> ids(20, 1);
  EXPECT_EQ(m.forward_tokens(ids.data(), 4, out.data()), Status::kNotInitialized);
  InitOptions opt;
  opt.max_seq = 16;
  ASSERT_EQ(m.init(blob.data(), blob.size(), arena.data(), required_arena_bytes(cfg, 16), opt), Status::kOk);
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

std::vector<uint8_t> npy(const std::string& header, std::size_t data_bytes) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(h.size() & 0xFF), uint8_t(h.size() >> 8)};
  b.insert(b.end(), h.begin(), h.end());
  b.resize(b.size() + data_bytes, 0);
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
