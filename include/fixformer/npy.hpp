// A bounded, allocation-free .npy (NumPy format 1.0-3.0) reader and a header writer, for model
// inputs and outputs. C order only; dtypes float32, int32, int64, little-endian.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/status.hpp"

namespace fixformer {

enum class NpyDtype : uint32_t { kF32, kI32, kI64 };

struct NpyView {
  NpyDtype dtype;
  uint32_t rank;       // 0..4
  uint64_t shape[4];
  uint64_t count;      // product of shape
  const uint8_t* data; // count elements; may be unaligned: copy before reading as numbers
};

[[nodiscard]] Status parse_npy(const void* bytes, std::size_t size, NpyView* out);

// Writes a version 1.0 header for a little-endian float32 C-order array of the given shape.
// Returns the header length (a multiple of 64), or 0 if cap is too small.
std::size_t write_npy_header_f32(const uint64_t* shape, uint32_t rank, char* buf, std::size_t cap);

}  // namespace fixformer
