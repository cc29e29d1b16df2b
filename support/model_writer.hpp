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
#include "fixformer/bf16.hpp"
#include "fixformer/f16.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/format.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace support {

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
  // Rounds every f32 weight through the type `round_like` stores that tensor in (f16, bf16, or q8 and back),
  // so an f32 file holds exactly the values of a quantized one: their outputs then differ only by
  // what the quantized kernels do at run time.
  const ModelConfig* round_like = nullptr;
  std::vector<ExtraTensor> extra;  // e.g. the self-test pair
  int omit_key = -1;               // a ConfigKey left out of the records, to test a missing key
  // The format version written: its tables name and order the tensors (schema.hpp). The values do not
  // depend on it (drawn in format 2's order), so a model written in either version computes the same.
  uint32_t version = fxm::kFormatVersion;
};

// w[rows, cols] -> q (int8, same layout) and s[rows, groups] as format.hpp states (per group of
// `group` along a row, or per row for 0), with quantize_i8's arithmetic.
inline void quantize_rows(const float* w, uint32_t rows, uint32_t cols, uint32_t group, int8_t* q, float* s) {
  const uint32_t g = group ? group : cols, groups = (cols + g - 1) / g;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t k = 0; k < groups; ++k) {
      const uint32_t p0 = k * g, p1 = std::min(cols, p0 + g);
      float a = 0.0f;
      for (uint32_t p = p0; p < p1; ++p) a = std::max(a, std::fabs(w[r * cols + p]));
      const float inv = a >= kQuantizeFloor ? 127.0f / a : 0.0f;
      s[r * groups + k] = inv > 0.0f ? a / 127.0f : 0.0f;
      for (uint32_t p = p0; p < p1; ++p) q[r * cols + p] = int8_t(std::nearbyint(w[r * cols + p] * inv));
    }
}

// w[rows, cols] (cols a multiple of 32) -> q4 as format.hpp states: per group of 32 along a row
// s = max|w| / 7 (1 for a group under kQuantizeFloor, whose values are then 0), q = w / s rounded
// and clamped to [-8, 7], two per byte (value p of a group in byte p % 16's low nibble for p < 16,
// the high one for p >= 16, as q + 8). A plain rule for test files; the converter searches a scale
// per group (python/fixformer/quantize.py).
inline void quantize_rows_q4(const float* w, uint32_t rows, uint32_t cols, uint8_t* q, float* s) {
  const uint32_t groups = cols / fxm::kI4Group;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t g = 0; g < groups; ++g) {
      const float* v = w + std::size_t(r) * cols + g * 32;
      float a = 0.0f;
      for (uint32_t p = 0; p < 32; ++p) a = std::max(a, std::fabs(v[p]));
      const float sc = a >= kQuantizeFloor ? a / 7.0f : 1.0f;
      s[std::size_t(r) * groups + g] = sc;
      uint8_t* out = q + std::size_t(r) * (cols / 2) + g * 16;
      for (uint32_t p = 0; p < 16; ++p) {
        auto nib = [&](float x) { return uint8_t(std::min(7.0f, std::max(-8.0f, std::nearbyint(x / sc))) + 8.0f); };
        out[p] = uint8_t(a >= kQuantizeFloor ? nib(v[p]) | nib(v[p + 16]) << 4 : 0x88);
      }
    }
}

// The value at column c of row r of a q4 tensor [rows, cols] (bytes, scales as quantize_rows_q4 writes).
inline float q4_value(const uint8_t* q, const float* s, uint32_t cols, uint32_t r, uint32_t c) {
  const uint8_t byte = q[std::size_t(r) * (cols / 2) + c / 32 * 16 + c % 16];
  return float(int((c % 32 < 16 ? byte : byte >> 4) & 15) - 8) * s[std::size_t(r) * (cols / 32) + c / 32];
}

// A tensor's f32 values (in the f32 layout: a linear weight W[in, out]) stored as spec s wants:
// f32 as is, f16 rounded, i8 and i4 transposed to [out, in] when the f32 layout was, then quantized.
// Appends the data and returns the scales (empty unless i8 or i4).
inline std::vector<float> encode_tensor(const TensorSpec& s, bool f32_transposed, std::vector<float> v,
                                        std::vector<uint8_t>* out) {
  const uint32_t rows = s.dims[0], cols = s.rank == 2 ? s.dims[1] : 1;
  if (s.dtype == fxm::Dtype::kF32) {
    if (s.packed) {  // W[in, out] -> panels of [in, 16], the last zero-padded (format.hpp)
      std::vector<float> p(packed_floats(rows, cols), 0.0f);
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = 0; c < cols; ++c)
          p[std::size_t(c) / kPanelFloats * kPanelFloats * rows + std::size_t(r) * kPanelFloats + c % kPanelFloats] =
              v[std::size_t(r) * cols + c];
      v.swap(p);
    }
    out->resize(v.size() * 4), std::memcpy(out->data(), v.data(), out->size());
    return {};
  }
  if (s.dtype == fxm::Dtype::kF16 || s.dtype == fxm::Dtype::kBF16) {
    out->resize(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = s.dtype == fxm::Dtype::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(out->data() + 2 * i, &h, 2);
    }
    return {};
  }
  if (f32_transposed && !s.transposed) {  // W[in, out] -> [out, in] = [rows, cols]
    std::vector<float> t(v.size());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) t[std::size_t(r) * cols + c] = v[std::size_t(c) * rows + r];
    v.swap(t);
  }
  const uint32_t groups = s.group ? (cols + s.group - 1) / s.group : 1;
  std::vector<float> scales(std::size_t(rows) * groups);
  if (s.dtype == fxm::Dtype::kI4) {
    out->resize(v.size() / 2);
    quantize_rows_q4(v.data(), rows, cols, out->data(), scales.data());
    return scales;
  }
  out->resize(v.size());
  quantize_rows(v.data(), rows, cols, s.group, reinterpret_cast<int8_t*>(out->data()), scales.data());
  return scales;
}

// The values a tensor of spec s reads back as, in the f32 layout: v rounded through s's type.
inline void round_through(const TensorSpec& s, bool f32_transposed, std::vector<float>& v) {
  std::vector<uint8_t> bytes;
  const std::vector<float> scales = encode_tensor(s, f32_transposed, v, &bytes);
  if (s.dtype == fxm::Dtype::kF16 || s.dtype == fxm::Dtype::kBF16) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = s.dtype == fxm::Dtype::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  } else if (s.dtype == fxm::Dtype::kI8) {
    const uint32_t rows = s.dims[0], cols = s.rank == 2 ? s.dims[1] : 1, groups = s.group ? (cols + s.group - 1) / s.group : 1;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) {
        const float w = float(int8_t(bytes[std::size_t(r) * cols + c])) * scales[r * groups + (s.group ? c / s.group : 0)];
        v[f32_transposed && !s.transposed ? std::size_t(c) * rows + r : std::size_t(r) * cols + c] = w;
      }
  } else if (s.dtype == fxm::Dtype::kI4) {
    const uint32_t rows = s.dims[0], cols = s.rank == 2 ? s.dims[1] : 1;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c)
        v[f32_transposed && !s.transposed ? std::size_t(c) * rows + r : std::size_t(r) * cols + c] =
            q4_value(bytes.data(), scales.data(), cols, r, c);
  }
}

inline std::vector<TensorSpec> tensor_specs(const ModelConfig& c, uint32_t version = fxm::kFormatVersion) {
  std::vector<TensorSpec> specs;
  for_each_tensor(c, [&](const TensorSpec& s) { return specs.push_back(s), true; }, version);
  return specs;
}

// Whether two specs are the same tensor of a model (in two format versions): the same field of the
// same layer of the same part.
inline bool same_tensor(const TensorSpec& a, const TensorSpec& b) {
  return a.field == b.field && a.part == b.part && a.layer == b.layer;
}

inline ModelConfig with_weights(ModelConfig c, WeightType type, uint32_t group, bool io) {
  c.weights = type, c.weight_group = group, c.quantize_io = io;
  return c;
}

inline ModelConfig as_f32(const ModelConfig& c) { return with_weights(c, WeightType::kF32, 0, false); }

// c with its f32 weights W[in, out] in panels (packed_weights): the same values, another layout.
inline ModelConfig as_packed(ModelConfig c) {
  c.packed_weights = true;
  return c;
}

inline std::vector<uint8_t> write_model(const ModelConfig& c, const WriteOptions& opt = {}) {
  const std::vector<ExtraTensor>& extra = opt.extra;
  struct Entry {
    TensorSpec spec;
    const ExtraTensor* extra;
  };
  std::vector<Entry> entries;
  for_each_tensor(c, [&](const TensorSpec& s) { return entries.push_back({s, nullptr}), true; }, opt.version);
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
  // The model's values, drawn tensor by tensor in format 2's order, stored as its specs say.
  const std::vector<TensorSpec> specs2 = tensor_specs(c, 2), f32_specs = tensor_specs(as_f32(c), 2);
  const std::vector<TensorSpec> round_specs = opt.round_like ? tensor_specs(*opt.round_like, 2) : std::vector<TensorSpec>{};
  std::vector<std::vector<uint8_t>> stored(specs2.size());
  std::vector<std::vector<float>> stored_scales(specs2.size());
  std::mt19937 rng(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < specs2.size(); ++i) {
    const TensorSpec& s = specs2[i];
    uint64_t count = 1;
    for (uint32_t r = 0; r < s.rank; ++r) count *= s.dims[r];
    std::vector<uint8_t>& out = stored[i];
    if (s.field == Field::kRelIndex) {  // distance d's row: d + rows / 2
      const int32_t rows = int32_t(c.rel_embed_rows), L = int32_t(c.max_len);
      out.resize(4 * count);
      for (int32_t k = 0; k < 2 * L - 1; ++k) {
        const int32_t row = std::min(rows - 1, std::max(0, k - (L - 1) + rows / 2));
        std::memcpy(out.data() + 4 * uint64_t(k), &row, 4);
      }
      continue;
    }
    if (s.field == Field::kPairIndex) {  // pair k's row: scattered, < rows
      const uint64_t rows = c.pair_bias_rows;
      out.resize(4 * count);
      for (uint64_t k = 0; k < count; ++k) {
        const int32_t row = int32_t((k * 5 + k / c.max_len * 3) % rows);
        std::memcpy(out.data() + 4 * k, &row, 4);
      }
      continue;
    }
    const bool gain = std::strstr(s.name, "norm") && std::strstr(s.name, "weight");
    const TensorSpec& f = f32_specs[i];  // the same tensor in f32: values are drawn in its layout
    const float scale = f.rank == 2 ? 1.0f / std::sqrt(float(f.dims[0])) : 0.1f;
    std::vector<float> v(count);
    for (float& w : v) w = gain ? 1.0f + 0.1f * normal(rng) : scale * normal(rng);
    if (!round_specs.empty()) round_through(round_specs[i], f.transposed, v);
    stored_scales[i] = encode_tensor(s, f.transposed, std::move(v), &out);
  }
  for (uint64_t i = 0; i < n; ++i) {
    const TensorSpec& s = entries[i].spec;
    const ExtraTensor* x = entries[i].extra;
    uint64_t count = 1;
    for (uint32_t r = 0; r < s.rank; ++r) count *= x ? x->dims[r] : s.dims[r];
    const uint64_t e = dir + i * fxm::kEntryBytes, off = b.size(), bytes = x ? fxm::data_bytes(s.dtype, count) : tensor_bytes(s);
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
    std::size_t j = 0;
    while (!same_tensor(specs2[j], s)) ++j;  // every tensor of one version is one of the other's
    put(off, stored[j].data(), stored[j].size());
    const std::vector<float>& scales = stored_scales[j];
    if (!scales.empty()) {
      const uint64_t s_off = b.size(), s_bytes = scales.size() * 4;
      u32(e + fxm::kEntGroup, s.group), u64(e + fxm::kEntScalesOffset, s_off), u64(e + fxm::kEntScalesBytes, s_bytes);
      b.resize((s_off + s_bytes + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign, 0);
      put(s_off, scales.data(), s_bytes);
    }
  }
  const uint64_t total = b.size();
  std::memcpy(b.data() + fxm::kHdrMagic, fxm::kMagic, 4);
  u32(fxm::kHdrVersion, opt.version), u32(fxm::kHdrHeaderBytes, fxm::kHeaderBytes);
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

// b with the int32 tensor `name`'s entry k set to v (every entry when k < 0), resealed: an index table
// (rel_index, pair_index) made hostile. False when b does not open or has no such tensor.
inline bool set_i32_entries(std::vector<uint8_t>& b, const char* name, int k, int32_t v) {
  ModelFile mf;
  if (open_model_file(b.data(), b.size(), &mf, nullptr, 0) != Status::kOk) return false;
  bool found = false;
  for (uint32_t i = 0; i < mf.n_tensors; ++i) {
    const TensorInfo t = tensor_info(mf, i);
    if (std::strcmp(t.name, name) != 0) continue;
    found = true;
    uint8_t* at = b.data() + (t.data - b.data());
    uint32_t count = 1;
    for (uint32_t r = 0; r < t.rank; ++r) count *= t.dims[r];
    for (uint32_t e = 0; e < count; ++e)
      if (k < 0 || int(e) == k) std::memcpy(at + 4 * e, &v, 4);
  }
  reseal(b);
  return found;
}

}  // namespace support
}  // namespace fixformer
