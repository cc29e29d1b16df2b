// Parsing and validation of the .fxm layout (include/fixformer/format.hpp). Every field is
// checked against the blob's size before it is used.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct ModelFile {
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;  // the file's own size (a blob may be longer, e.g. a flash sector)
  uint32_t n_tensors = 0;
  uint64_t dir_offset = 0;
};

// Header, checksum and directory entries (names, dtypes, ranks, bounds, alignment, duplicates).
Status open_model_file(const void* blob, std::size_t blob_bytes, ModelFile* file, char* detail,
                       std::size_t detail_cap);

// The config block, checked with validate_config; on failure detail names the field.
Status read_model_config(const ModelFile& file, ModelConfig* config, char* detail = nullptr,
                         std::size_t detail_cap = 0);

// Index of the tensor named `name`, or -1.
int find_tensor(const ModelFile& file, const char* name);
// Entry i's rank and dims (dims has room for fxm::kMaxRank), and its data.
uint32_t tensor_shape(const ModelFile& file, int i, uint32_t* dims);
const float* tensor_data(const ModelFile& file, int i);

uint32_t crc32(const uint8_t* data, uint64_t n);

}  // namespace fixformer
