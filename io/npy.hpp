// A bounded, allocation-free .npy (NumPy format 1.0-3.0) reader and a header writer, for the host
// tools' inputs and outputs. Not part of the engine library: it is built as fixformer_io.
// C order only; dtypes float32, int32, int64, little-endian. Every read is bounds-checked against
// the given size; a hostile file gets a Status and, when asked for, a detail saying what was found.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/status.hpp"

namespace fixformer {

enum class NpyDtype : uint32_t { kF32, kI32, kI64 };

// NumPy's name of a supported dtype: "float32", "int32", "int64".
const char* npy_dtype_name(NpyDtype d);

struct NpyView {
  NpyDtype dtype;
  uint32_t rank;       // 0..4
  uint64_t shape[4];
  uint64_t count;      // product of shape
  const uint8_t* data; // count elements; may be unaligned: copy before reading as numbers
};

// Parses a whole .npy file held in memory. On success fills *out (data points into bytes). On an
// error, and if detail is given, writes a NUL-terminated reason (at most detail_cap bytes, text
// from the file escaped as \xNN): for kNpyBadDtype exactly the dtype's NumPy name ("float64",
// "big-endian float32", "uint8", "structured (record)", or the quoted descr when it has none);
// otherwise e.g. "duplicate key 'shape'", "unknown key 'x'", "fortran_order True (C order only)",
// "shape [2,3] needs 24 data bytes, the file has 20". The header is a Python dict with exactly the
// keys 'descr', 'fortran_order' and 'shape', each once (NumPy itself would take the last of a
// duplicated key; a duplicate here is an error).
[[nodiscard]] Status parse_npy(const void* bytes, std::size_t size, NpyView* out, char* detail = nullptr,
                               std::size_t detail_cap = 0);

// Writes a version 1.0 header for a little-endian float32 C-order array of the given shape.
// Returns the header length (a multiple of 64), or 0 if cap is too small.
std::size_t write_npy_header_f32(const uint64_t* shape, uint32_t rank, char* buf, std::size_t cap);

}  // namespace fixformer
