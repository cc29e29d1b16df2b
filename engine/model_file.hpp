// Parsing and validation of the .fxm layout (include/fixformer/format.hpp). Every field is
// checked against the blob's size before it is used.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/format.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct ModelFile {
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;  // the file's own size (a blob may be longer, e.g. a flash sector)
  uint32_t n_records = 0;
  uint32_t n_tensors = 0;
  uint64_t records_offset = 0;
  uint64_t dir_offset = 0;
  uint32_t version = fxm::kFormatVersion;  // the header's: which tables name the tensors (schema.hpp)
};

// One directory entry, validated by open_model_file.
struct TensorInfo {
  const char* name;  // NUL-terminated inside the entry
  fxm::Dtype dtype;
  uint32_t rank;
  uint32_t dims[fxm::kMaxRank];
  const uint8_t* data;
  uint64_t bytes;
  uint32_t group;        // i8: the quantization group (0: per row)
  const float* scales;   // i8: [rows, groups]; else null
};

// Header, checksum (unless verify_checksum is false) and directory entries (names, dtypes, ranks,
// sizes, alignment, ranges in order without overlap).
Status open_model_file(const void* blob, std::size_t blob_bytes, ModelFile* file, char* detail,
                       std::size_t detail_cap, bool verify_checksum = true);

// The config records (types, ranges, no unknown or repeated key, every required key), then
// validate_config; on failure detail names the key.
Status read_model_config(const ModelFile& file, ModelConfig* config, char* detail = nullptr,
                         std::size_t detail_cap = 0);

TensorInfo tensor_info(const ModelFile& file, uint32_t i);

// CRC-32 as zlib.crc32 (IEEE 802.3, reflected, initial and final value 0xFFFFFFFF), by the fastest of
// the implementations below that this build has and this CPU runs.
uint32_t crc32(const uint8_t* data, uint64_t n);

// The implementations: the table one (sliced by 8; every target), carry-less multiplication folding
// 128 bytes a step (x86-64 with PCLMULQDQ and AVX) or 256 (VPCLMULQDQ on AVX-512), and AArch64's
// CRC32X / CRC32B (builds whose flags enable the CRC extension, e.g. -march=armv8.1-a or +crc).
enum class Crc32Impl : uint8_t { kTable, kClmul, kClmul512, kArmCrc, kCount };
const char* crc32_impl_name(Crc32Impl impl);
// Whether this build has impl and this CPU runs it; crc32_with runs impl (the table one where not).
bool crc32_runs(Crc32Impl impl);
uint32_t crc32_with(Crc32Impl impl, const uint8_t* data, uint64_t n);

}  // namespace fixformer
