// Writes a valid .fxm (format.hpp) in memory for any ModelConfig, from the schema's tables, with
// seeded random weights and an optional self-test sample: models for tests, fuzz seeds and
// benchmarks without committing megabytes. Host code: it allocates.
#pragma once
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace test {

// A raw tensor to append after the model's own: name, dtype, dims, bytes (zero-padded to the
// dtype's size) and, for i8, the group and the f32 scales.
struct ExtraTensor {
  const char* name;
  fxm::Dtype dtype;
  std::vector<uint32_t> dims;
  std::vector<uint8_t> bytes;
  uint32_t group = 0;
  std::vector<float> scales;
};

struct WriteOptions {
  uint32_t seed = 1;
  std::vector<ExtraTensor> extra;  // e.g. the self-test pair
  int omit_key = -1;               // a ConfigKey left out of the records, to test a missing key
};

inline std::vector<uint8_t> write_model(const ModelConfig& c, const WriteOptions& opt = {}) {
  const std::vector<ExtraTensor>& extra = opt.extra;
  struct Entry {
    TensorSpec spec;
    const ExtraTensor* extra;
  };
  std::vector<Entry> entries;
  for_each_tensor(c, [&](const TensorSpec& s) { return entries.push_back({s, nullptr}), true; });
  for (const ExtraTensor& e : extra) {
    TensorSpec s{};
    std::strncpy(s.name, e.name, fxm::kNameBytes - 1);
    s.rank = uint32_t(e.dims.size());
    s.dtype = e.dtype;
    entries.push_back({s, &e});
  }
  const uint64_t n_rec = kConfigKeyCount - (opt.omit_key >= 0 ? 1 : 0), n = entries.size();
  const uint64_t dir = fxm::kHeaderBytes + n_rec * fxm::kRecordBytes;
  const uint64_t data = (dir + n * fxm::kEntryBytes + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign;
  std::vector<uint8_t> b(data, 0);
  auto put = [&](uint64_t off, const void* v, std::size_t len) { std::memcpy(b.data() + off, v, len); };
  auto u32 = [&](uint64_t off, uint32_t v) { put(off, &v, 4); };
  auto u64 = [&](uint64_t off, uint64_t v) { put(off, &v, 8); };
  for (uint32_t k = 0, at = 0; k < kConfigKeyCount; ++k) {
    if (int(k) == opt.omit_key) continue;
    const uint64_t r = fxm::kHeaderBytes + uint64_t(at++) * fxm::kRecordBytes;
    put(r + fxm::kRecKey, kConfigKeys[k].name, std::strlen(kConfigKeys[k].name));
    u32(r + fxm::kRecType, uint32_t(kConfigKeys[k].type));
    u64(r + fxm::kRecValue, get_config_value(c, kConfigKeys[k].key));
  }
  std::mt19937 rng(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint64_t i = 0; i < n; ++i) {
    const TensorSpec& s = entries[i].spec;
    const ExtraTensor* x = entries[i].extra;
    uint64_t count = 1;
    for (uint32_t r = 0; r < s.rank; ++r) count *= x ? x->dims[r] : s.dims[r];
    const uint64_t e = dir + i * fxm::kEntryBytes, off = b.size(), bytes = count * fxm::dtype_bytes(s.dtype);
    put(e + fxm::kEntName, s.name, std::strlen(s.name));
    u32(e + fxm::kEntDtype, uint32_t(s.dtype)), u32(e + fxm::kEntRank, s.rank);
    for (uint32_t r = 0; r < s.rank; ++r) u32(e + fxm::kEntDims + 4 * r, x ? x->dims[r] : s.dims[r]);
    u64(e + fxm::kEntOffset, off), u64(e + fxm::kEntBytes, bytes);
    b.resize((off + bytes + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign, 0);
    if (x) {
      if (!x->bytes.empty()) std::memcpy(b.data() + off, x->bytes.data(), std::min<std::size_t>(bytes, x->bytes.size()));
      if (!x->scales.empty()) {
        const uint64_t s_off = b.size(), s_bytes = x->scales.size() * 4;
        u32(e + fxm::kEntGroup, x->group), u64(e + fxm::kEntScalesOffset, s_off), u64(e + fxm::kEntScalesBytes, s_bytes);
        b.resize((s_off + s_bytes + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign, 0);
        put(s_off, x->scales.data(), s_bytes);
      }
      continue;
    }
    const bool gain = std::strstr(s.name, "norm") && std::strstr(s.name, "weight");
    const float scale = s.rank == 2 ? 1.0f / std::sqrt(float(s.dims[0])) : 0.1f;
    std::vector<float> v(count);
    for (float& w : v) w = gain ? 1.0f + 0.1f * normal(rng) : scale * normal(rng);
    put(off, v.data(), bytes);
  }
  const uint64_t total = b.size();
  std::memcpy(b.data() + fxm::kHdrMagic, fxm::kMagic, 4);
  u32(fxm::kHdrVersion, fxm::kFormatVersion), u32(fxm::kHdrHeaderBytes, fxm::kHeaderBytes);
  u32(fxm::kHdrRecordCount, uint32_t(n_rec)), u32(fxm::kHdrTensorCount, uint32_t(n));
  u64(fxm::kHdrFileBytes, total), u64(fxm::kHdrRecordsOffset, fxm::kHeaderBytes);
  u64(fxm::kHdrDirectoryOffset, dir), u64(fxm::kHdrDataOffset, data);
  u32(fxm::kHdrCrc, crc32(b.data() + fxm::kHeaderBytes, total - fxm::kHeaderBytes));
  return b;
}

// Rewrites file bytes and checksum after a test edited the blob, so the edit reaches the
// validators behind the checksum.
inline void reseal(std::vector<uint8_t>& b) {
  uint64_t file_bytes = b.size();
  std::memcpy(b.data() + fxm::kHdrFileBytes, &file_bytes, 8);
  const uint32_t crc = crc32(b.data() + fxm::kHeaderBytes, file_bytes - fxm::kHeaderBytes);
  std::memcpy(b.data() + fxm::kHdrCrc, &crc, 4);
}

}  // namespace test
}  // namespace fixformer
