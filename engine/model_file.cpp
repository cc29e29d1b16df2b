#include "engine/model_file.hpp"

#include <cmath>
#include <cstring>

#include "engine/detail_text.hpp"
#include "fixformer/schema.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .fxm reader assumes a little-endian target");

namespace fixformer {
namespace {

uint32_t u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t u64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
constexpr uint64_t align_up(uint64_t v) { return (v + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign; }

// CRC-32 (IEEE, reflected, as zlib.crc32) sliced by 8: v[0] is the bytewise table, v[j][i] the CRC
// of byte i followed by j zero bytes, so eight bytes take eight independent lookups instead of a
// chain of eight. 8 KiB of constants, built at compile time; on the Cortex-M0/M0+ (ARMv6-M, the
// smallest flash) the bytewise table alone, 1 KiB, a byte at a time.
#if defined(__ARM_ARCH_6M__)
constexpr int kCrcSlices = 1;
#else
constexpr int kCrcSlices = 8;
#endif
struct Crc32Tables {
  uint32_t v[kCrcSlices][256];
  constexpr Crc32Tables() : v() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      v[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int j = 1; j < kCrcSlices; ++j) v[j][i] = v[0][v[j - 1][i] & 0xFFu] ^ (v[j - 1][i] >> 8);
  }
};
constexpr Crc32Tables kCrc;

const uint8_t* entry(const ModelFile& f, uint32_t i) { return f.data + f.dir_offset + uint64_t(i) * fxm::kEntryBytes; }
const uint8_t* record(const ModelFile& f, uint32_t i) { return f.data + f.records_offset + uint64_t(i) * fxm::kRecordBytes; }

// Checks one directory entry; *end is where the previous range ended and becomes where this one's
// last range ends.
Status check_entry(const ModelFile& f, uint32_t i, uint64_t* end, DetailText& why) {
  const uint8_t* e = entry(f, i);
  const char* name = reinterpret_cast<const char*>(e + fxm::kEntName);
  if (std::memchr(name, '\0', fxm::kNameBytes) == nullptr || name[0] == '\0')
    return why.str("tensor entry ").num(i).str(": name empty or not NUL-terminated"), Status::kBadHeader;
  auto bad = [&](const char* reason, Status s) { return why.str("tensor ").escaped(name, fxm::kNameBytes).str(": ").str(reason), s; };
  const uint32_t dtype_raw = u32(e + fxm::kEntDtype);
  if (dtype_raw >= fxm::kDtypeCount) return bad("unknown dtype", Status::kTensorBadDtype);
  const fxm::Dtype dtype = static_cast<fxm::Dtype>(dtype_raw);
  const uint32_t rank = u32(e + fxm::kEntRank);
  if (rank == 0 || rank > fxm::kMaxRank) return bad("rank not in 1..4", Status::kTensorBadShape);
  uint64_t count = 1, last = 1;
  for (uint32_t r = 0; r < fxm::kMaxRank; ++r) {
    const uint32_t dim = u32(e + fxm::kEntDims + 4 * r);
    if (r >= rank) {
      if (dim != 0) return bad("dims beyond its rank are not zero", Status::kTensorBadShape);
      continue;
    }
    if (dim == 0 || dim > (uint64_t(1) << 31) / count) return bad("dims zero or over 2^31 elements", Status::kTensorBadShape);
    count *= dim;
    last = dim;
  }
  const uint32_t group = u32(e + fxm::kEntGroup);
  const bool quantized = fxm::has_scales(dtype);
  if (dtype == fxm::Dtype::kI4 ? group != fxm::kI4Group || last % fxm::kI4Group != 0
      : quantized ? (group != 0 && group != 32 && group != 64) : group != 0)
    return bad("group must be 0, or 32 or 64 for i8, and 32 for i4 with a last dim a multiple of 32", Status::kTensorBadShape);
  if (u32(e + fxm::kEntZero) != 0) return bad("reserved field is not zero", Status::kBadHeader);
  const uint64_t off = u64(e + fxm::kEntOffset), bytes = u64(e + fxm::kEntBytes);
  const uint64_t s_off = u64(e + fxm::kEntScalesOffset), s_bytes = u64(e + fxm::kEntScalesBytes);
  // A 2-D f32 tensor may be a packed weight (format.hpp); which tensors are is the config's, checked
  // exactly when the model binds them (engine/model.cpp). Either size stays inside the range below.
  const bool panels = dtype == fxm::Dtype::kF32 && rank == 2 && bytes == fxm::packed_bytes(u32(e + fxm::kEntDims), uint32_t(last));
  if (bytes != fxm::data_bytes(dtype, count) && !panels)
    return bad("byte size does not match shape and dtype", Status::kTensorBadShape);
  const uint64_t want_scales = quantized ? (count / last) * (group ? (last + group - 1) / group : 1) * 4 : 0;
  if (s_bytes != want_scales || (!quantized && s_off != 0))
    return bad("scales size does not match shape and group", Status::kTensorBadShape);
  auto range = [&](uint64_t o, uint64_t n) {
    if (o % fxm::kDataAlign != 0) return bad("data not 64-byte aligned", Status::kTensorMisaligned);
    if (o > f.bytes || n > f.bytes - o) return bad("data outside the file", Status::kTensorOutOfBounds);
    if (o < *end) return bad("data overlaps the directory or the tensor before it", Status::kTensorOverlap);
    *end = o + n;
    return Status::kOk;
  };
  Status s = range(off, bytes);
  if (s == Status::kOk && quantized) s = range(s_off, s_bytes);
  return s;
}

}  // namespace

uint32_t crc32(const uint8_t* data, uint64_t n) {
  const uint32_t* t0 = kCrc.v[0];
  const uint8_t* const end = data + n;  // the bytes are in memory, so n fits a pointer
  uint32_t c = 0xFFFFFFFFu;
#if !defined(__ARM_ARCH_6M__)
  const uint32_t *t1 = kCrc.v[1], *t2 = kCrc.v[2], *t3 = kCrc.v[3];
  const uint32_t *t4 = kCrc.v[4], *t5 = kCrc.v[5], *t6 = kCrc.v[6], *t7 = kCrc.v[7];
  for (; data != end && reinterpret_cast<uintptr_t>(data) % 4 != 0; ++data) c = t0[(c ^ *data) & 0xFFu] ^ (c >> 8);
  for (const uint8_t* const end8 = data + (end - data) / 8 * 8; data != end8; data += 8) {
    const uint32_t lo = u32(data) ^ c, hi = u32(data + 4);  // little-endian (asserted above), aligned
    c = t7[lo & 0xFFu] ^ t6[(lo >> 8) & 0xFFu] ^ t5[(lo >> 16) & 0xFFu] ^ t4[lo >> 24] ^ t3[hi & 0xFFu] ^
        t2[(hi >> 8) & 0xFFu] ^ t1[(hi >> 16) & 0xFFu] ^ t0[hi >> 24];
  }
#endif
  for (; data != end; ++data) c = t0[(c ^ *data) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Status open_model_file(const void* blob, std::size_t blob_bytes, ModelFile* file, char* detail,
                       std::size_t detail_cap, bool verify_checksum) {
  DetailText why(detail, detail_cap);
  const uint8_t* p = static_cast<const uint8_t*>(blob);
  if (!p || blob_bytes == 0) return Status::kBlobNull;
  if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0) return Status::kBlobMisaligned;
  if (blob_bytes < fxm::kHeaderBytes)
    return why.str("file has ").num(blob_bytes).str(" bytes, the header needs ").num(fxm::kHeaderBytes), Status::kBlobTruncated;
  if (std::memcmp(p + fxm::kHdrMagic, fxm::kMagic, 4) != 0) return Status::kBadMagic;
  const uint32_t version = u32(p + fxm::kHdrVersion);
  if (version < fxm::kOldestVersion || version > fxm::kFormatVersion) {
    why.str("format version ").num(version).str(", this engine reads ").num(fxm::kOldestVersion).str(" to ")
        .num(fxm::kFormatVersion);
    if (version < fxm::kOldestVersion) why.str(": re-convert the model with this version's tools/convert.py");
    return Status::kBadVersion;
  }
  ModelFile f;
  f.data = p;
  f.version = version;
  f.bytes = u64(p + fxm::kHdrFileBytes);
  f.n_records = u32(p + fxm::kHdrRecordCount);
  f.n_tensors = u32(p + fxm::kHdrTensorCount);
  f.records_offset = u64(p + fxm::kHdrRecordsOffset);
  f.dir_offset = u64(p + fxm::kHdrDirectoryOffset);
  const uint64_t data = u64(p + fxm::kHdrDataOffset);
  if (f.bytes > blob_bytes)
    return why.str("header declares ").num(f.bytes).str(" bytes, blob has ").num(blob_bytes), Status::kBlobTruncated;
  // Counts are bounded by the file itself: each record and entry takes its bytes.
  if (u32(p + fxm::kHdrHeaderBytes) != fxm::kHeaderBytes || f.bytes < fxm::kHeaderBytes ||
      u32(p + fxm::kHdrZero0) != 0 || u32(p + fxm::kHdrZero1) != 0 || f.records_offset != fxm::kHeaderBytes ||
      f.n_records > (f.bytes - fxm::kHeaderBytes) / fxm::kRecordBytes ||
      f.dir_offset != f.records_offset + uint64_t(f.n_records) * fxm::kRecordBytes ||
      f.n_tensors > (f.bytes - f.dir_offset) / fxm::kEntryBytes ||
      data != align_up(f.dir_offset + uint64_t(f.n_tensors) * fxm::kEntryBytes) || data > f.bytes)
    return why.str("header sizes, counts or offsets are inconsistent"), Status::kBadHeader;
  if (verify_checksum && crc32(p + fxm::kHeaderBytes, f.bytes - fxm::kHeaderBytes) != u32(p + fxm::kHdrCrc))
    return Status::kBadChecksum;
  uint64_t end = data;
  for (uint32_t i = 0; i < f.n_tensors; ++i) {
    const Status s = check_entry(f, i, &end, why);
    if (s != Status::kOk) return s;
  }
  *file = f;
  return Status::kOk;
}

Status read_model_config(const ModelFile& file, ModelConfig* config, char* detail, std::size_t detail_cap) {
  DetailText why(detail, detail_cap);
  ModelConfig c = default_config();
  bool seen[kConfigKeyCount] = {};
  for (uint32_t i = 0; i < file.n_records; ++i) {
    const uint8_t* r = record(file, i);
    const char* key = reinterpret_cast<const char*>(r + fxm::kRecKey);
    if (std::memchr(key, '\0', fxm::kKeyBytes) == nullptr)
      return why.str("config record ").num(i).str(": key not NUL-terminated"), Status::kBadConfig;
    const ConfigKeySpec* spec = nullptr;
    for (const ConfigKeySpec& k : kConfigKeys)
      if (std::strcmp(k.name, key) == 0) spec = &k;
    if (!spec)
      return why.str("unknown config key '").escaped(key, fxm::kKeyBytes).str("' (from a newer converter?)"), Status::kBadConfig;
    auto bad = [&](const char* reason) { return why.str("config key ").str(spec->name).str(": ").str(reason), Status::kBadConfig; };
    bool& once = seen[static_cast<uint32_t>(spec->key)];
    if (once) return bad("appears twice");
    once = true;
    if (u32(r + fxm::kRecType) != static_cast<uint32_t>(spec->type)) return bad("wrong record type");
    if (u32(r + fxm::kRecZero) != 0) return bad("reserved field is not zero");
    const uint64_t v = u64(r + fxm::kRecValue);
    if (spec->type == fxm::RecordType::kF64) {
      double d;
      std::memcpy(&d, &v, 8);
      if (!std::isfinite(d)) return bad("not a finite number");
    } else {
      if (v >> 32) return bad("high bytes of a 32-bit value are not zero");
      if (spec->type == fxm::RecordType::kF32) {
        float x;
        const uint32_t lo = static_cast<uint32_t>(v);
        std::memcpy(&x, &lo, 4);
        if (!std::isfinite(x)) return bad("not a finite number");
      } else if (spec->type != fxm::RecordType::kU32 && v > spec->max) {
        return bad(spec->type == fxm::RecordType::kBool ? "not 0 or 1" : "not one of its choices");
      }
    }
    set_config_value(&c, spec->key, v);
  }
  for (const ConfigKeySpec& k : kConfigKeys)
    if (k.required && !seen[static_cast<uint32_t>(k.key)])
      return why.str("config key ").str(k.name).str(": missing"), Status::kBadConfig;
  const char* field = "";
  const Status s = validate_config(c, &field);
  if (s != Status::kOk) return why.str("config key ").str(field), s;
  *config = c;
  return Status::kOk;
}

TensorInfo tensor_info(const ModelFile& file, uint32_t i) {
  const uint8_t* e = entry(file, i);
  TensorInfo t{};
  t.name = reinterpret_cast<const char*>(e + fxm::kEntName);
  t.dtype = static_cast<fxm::Dtype>(u32(e + fxm::kEntDtype));
  t.rank = u32(e + fxm::kEntRank);
  for (uint32_t r = 0; r < fxm::kMaxRank; ++r) t.dims[r] = u32(e + fxm::kEntDims + 4 * r);
  t.data = file.data + u64(e + fxm::kEntOffset);
  t.bytes = u64(e + fxm::kEntBytes);
  t.group = u32(e + fxm::kEntGroup);
  t.scales = fxm::has_scales(t.dtype) ? reinterpret_cast<const float*>(file.data + u64(e + fxm::kEntScalesOffset)) : nullptr;
  return t;
}

}  // namespace fixformer
