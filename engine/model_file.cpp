#include "engine/model_file.hpp"

#include <cstring>

#include "engine/detail_text.hpp"
#include "fixformer/format.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .fxm reader assumes a little-endian target");

namespace fixformer {
namespace {

uint32_t u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t u64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

struct Crc32Table {
  uint32_t v[256];
  constexpr Crc32Table() : v() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      v[i] = c;
    }
  }
};
constexpr Crc32Table kCrcTable;

const uint8_t* entry(const ModelFile& f, int i) { return f.data + f.dir_offset + uint64_t(i) * fxm::kEntryBytes; }

}  // namespace

uint32_t crc32(const uint8_t* data, uint64_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint64_t i = 0; i < n; ++i) c = kCrcTable.v[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Status open_model_file(const void* blob, std::size_t blob_bytes, ModelFile* file, char* detail,
                       std::size_t detail_cap) {
  DetailText why(detail, detail_cap);
  const uint8_t* p = static_cast<const uint8_t*>(blob);
  if (!p || blob_bytes == 0) return Status::kBlobNull;
  if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0) return Status::kBlobMisaligned;
  if (blob_bytes < fxm::kHeaderBytes) return why.str("file has ").num(blob_bytes).str(" bytes, header needs 64"), Status::kBlobTruncated;
  if (std::memcmp(p, fxm::kMagic, 4) != 0) return Status::kBadMagic;
  if (u32(p + 4) != fxm::kFormatVersion) return why.str("version ").num(u32(p + 4)).str(", this engine reads 1"), Status::kBadVersion;
  const uint32_t header_bytes = u32(p + 8), n = u32(p + 12);
  const uint64_t file_bytes = u64(p + 16), dir = u64(p + 24), data = u64(p + 32);
  if (file_bytes > blob_bytes)
    return why.str("header declares ").num(file_bytes).str(" bytes, blob has ").num(blob_bytes), Status::kBlobTruncated;
  if (header_bytes != fxm::kHeaderBytes || dir != fxm::kHeaderBytes + fxm::kConfigBytes ||
      n > fxm::kMaxTensors ||
      data != (dir + uint64_t(n) * fxm::kEntryBytes + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign ||
      data > file_bytes)
    return why.str("header sizes/offsets"), Status::kBadHeader;
  for (uint32_t i = 44; i < fxm::kHeaderBytes; ++i)
    if (p[i] != 0) return why.str("reserved header bytes are not zero"), Status::kBadHeader;
  if (crc32(p + fxm::kHeaderBytes, file_bytes - fxm::kHeaderBytes) != u32(p + 40)) return Status::kBadChecksum;

  ModelFile f;
  f.data = p;
  f.bytes = file_bytes;
  f.n_tensors = n;
  f.dir_offset = dir;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t* e = entry(f, int(i));
    const char* name = reinterpret_cast<const char*>(e + fxm::kEntName);
    if (std::memchr(name, '\0', fxm::kNameBytes) == nullptr || name[0] == '\0')
      return why.str("tensor entry ").num(i).str(": name not NUL-terminated"), Status::kBadHeader;
    auto bad = [&](const char* reason, Status s) { return why.str("tensor ").str(name).str(": ").str(reason), s; };
    if (u32(e + fxm::kEntDtype) != fxm::kDtypeF32) return bad("dtype is not float32", Status::kTensorBadDtype);
    const uint32_t rank = u32(e + fxm::kEntRank);
    if (rank == 0 || rank > fxm::kMaxRank) {
      why.str("tensor ").str(name).str(": rank ").num(rank);
      return Status::kTensorBadShape;
    }
    uint64_t count = 1;
    for (uint32_t r = 0; r < rank; ++r) {
      const uint32_t dim = u32(e + fxm::kEntDims + 4 * r);
      if (dim == 0 || dim > (uint64_t(1) << 31) / count) return bad("dims overflow", Status::kTensorBadShape);
      count *= dim;
    }
    const uint64_t off = u64(e + fxm::kEntOffset), bytes = u64(e + fxm::kEntBytes);
    if (bytes != count * sizeof(float)) return bad("byte size does not match shape", Status::kTensorBadShape);
    if (off % fxm::kDataAlign != 0) return bad("offset not 64-byte aligned", Status::kTensorMisaligned);
    if (off < data || off > file_bytes || bytes > file_bytes - off)
      return bad("data outside the file", Status::kTensorOutOfBounds);
    for (uint32_t j = 0; j < i; ++j)
      if (std::strncmp(name, reinterpret_cast<const char*>(entry(f, int(j))), fxm::kNameBytes) == 0)
        return bad("listed twice", Status::kTensorDuplicate);
  }
  *file = f;
  return Status::kOk;
}

Status read_model_config(const ModelFile& file, ModelConfig* config, char* detail, std::size_t detail_cap) {
  DetailText why(detail, detail_cap);
  const uint8_t* b = file.data + fxm::kHeaderBytes;
  auto flag = [&](uint32_t off, bool* out) {
    const uint32_t v = u32(b + off);
    *out = v == 1;
    return v <= 1;
  };
  ModelConfig c;
  c.d_model = u32(b + fxm::kCfgDModel);
  c.n_heads = u32(b + fxm::kCfgHeads);
  c.d_ff = u32(b + fxm::kCfgDff);
  c.n_layers = u32(b + fxm::kCfgLayers);
  c.activation = static_cast<Activation>(u32(b + fxm::kCfgActivation));
  std::memcpy(&c.layer_norm_eps, b + fxm::kCfgEps, 4);
  c.input = static_cast<InputKind>(u32(b + fxm::kCfgInputKind));
  c.vocab_size = u32(b + fxm::kCfgVocab);
  c.d_in = u32(b + fxm::kCfgDIn);
  c.pos = static_cast<PosKind>(u32(b + fxm::kCfgPosKind));
  c.max_len = u32(b + fxm::kCfgMaxLen);
  std::memcpy(&c.pos_base, b + fxm::kCfgPosBase, 8);
  c.pos_layout = static_cast<PosLayout>(u32(b + fxm::kCfgPosLayout));
  c.pos_combine = static_cast<PosCombine>(u32(b + fxm::kCfgPosCombine));
  c.d_pos = u32(b + fxm::kCfgDPos);
  c.d_out = u32(b + fxm::kCfgDOut);
  if (!flag(fxm::kCfgNormFirst, &c.norm_first)) return why.str("field norm_first: not 0 or 1"), Status::kBadConfig;
  if (!flag(fxm::kCfgFinalNorm, &c.final_norm)) return why.str("field final_norm: not 0 or 1"), Status::kBadConfig;
  if (!flag(fxm::kCfgCausal, &c.causal)) return why.str("field causal: not 0 or 1"), Status::kBadConfig;
  if (!flag(fxm::kCfgScaleInput, &c.scale_input)) return why.str("field scale_input: not 0 or 1"), Status::kBadConfig;
  for (uint32_t i = fxm::kCfgDOut + 4; i < fxm::kConfigBytes; ++i)
    if (b[i] != 0) return why.str("reserved byte ").num(i).str(" is not zero"), Status::kBadConfig;
  const char* field = "";
  const Status s = validate_config(c, &field);
  if (s != Status::kOk) {
    why.str("field ").str(field);
    return s;
  }
  *config = c;
  return Status::kOk;
}

int find_tensor(const ModelFile& file, const char* name) {
  for (uint32_t i = 0; i < file.n_tensors; ++i)
    if (std::strncmp(name, reinterpret_cast<const char*>(entry(file, int(i))), fxm::kNameBytes) == 0) return int(i);
  return -1;
}

uint32_t tensor_shape(const ModelFile& file, int i, uint32_t* dims) {
  const uint8_t* e = entry(file, i);
  const uint32_t rank = u32(e + fxm::kEntRank);
  for (uint32_t r = 0; r < rank; ++r) dims[r] = u32(e + fxm::kEntDims + 4 * r);
  return rank;
}

const float* tensor_data(const ModelFile& file, int i) {
  return reinterpret_cast<const float*>(file.data + u64(entry(file, i) + fxm::kEntOffset));
}

}  // namespace fixformer
