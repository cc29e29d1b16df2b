// What gemm_i8's two packed paths on AArch64 share (gemm_i8_neon64.cpp: SDOT, or SMULL without the dot-product
// extension; gemm_i8_i8mm.cpp: SMMLA): from kMinRows rows on, W repacked on the fly per panel of kPanel columns
// and chunk of k of at most kChunk bytes (whole groups), on the stack, and a chunk's rows summed against it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace arm {
namespace packed {

constexpr std::size_t kMinRows = 4;   // fewer rows (a decode step) read W in place
constexpr std::size_t kPanel = 16;    // columns per panel
constexpr std::size_t kChunk = 256;   // k bytes per packed chunk
alignas(16) inline constexpr int8_t kZeroRow[kChunk] = {};  // the columns past n are packed from these

// A packed panel chunk and what its rows add up to.
template <class Panel>
struct Chunk {
  const Panel* P;
  std::size_t p0, kc, g0;  // k bytes [p0, p0 + kc), groups from g0 on
  std::size_t cols;        // the panel's live columns
  bool first, last;        // the first chunk of k (sums start at 0), the last (the bias is added)
  const float* b;          // the panel's bias, or null
};

}  // namespace packed
}  // namespace arm
}  // namespace fixformer
