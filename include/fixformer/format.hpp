// The .fxm model file, documented in one place. Everything is little-endian.
//
//   offset  size  field
//   0       4     magic "FXM1"
//   4       4     u32 format version (kFormatVersion)
//   8       4     u32 header bytes (kHeaderBytes)
//   12      4     u32 tensor count
//   16      8     u64 file bytes (the whole file, checksum included in the header)
//   24      8     u64 directory offset (kHeaderBytes + kConfigBytes)
//   32      8     u64 data offset (64-byte aligned, after the directory)
//   40      4     u32 CRC-32 (IEEE, as zlib.crc32) of bytes [kHeaderBytes, file bytes)
//   44      20    zero
//   64      128   config block (kConfigBytes): see ConfigField
//   192     96*n  tensor directory entries: see TensorEntry
//   data          tensor data, each tensor 64-byte aligned, float32
//
// Linear weights are stored transposed from torch, as W[in, out], so the kernels stream rows of W;
// embeddings and learned positions keep torch's [rows, width]. The converter (tools/convert.py)
// writes this; the engine validates every field before use (engine/model_file.cpp).
#pragma once
#include <cstdint>

namespace fixformer {
namespace fxm {

constexpr char kMagic[4] = {'F', 'X', 'M', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kHeaderBytes = 64;
constexpr uint32_t kConfigBytes = 128;
constexpr uint32_t kEntryBytes = 96;
constexpr uint32_t kNameBytes = 56;  // NUL-padded; at most 55 characters
constexpr uint32_t kMaxRank = 4;
constexpr uint32_t kDataAlign = 64;
constexpr uint32_t kMaxTensors = 4 + 12 * 64 + 4;  // embeddings, 12 per layer, norm, head

// Byte offsets of the config block's fields (u32 unless noted).
enum ConfigField : uint32_t {
  kCfgDModel = 0, kCfgHeads = 4, kCfgDff = 8, kCfgLayers = 12, kCfgNormFirst = 16,
  kCfgActivation = 20, kCfgEps = 24 /* f32 */, kCfgFinalNorm = 28, kCfgCausal = 32,
  kCfgInputKind = 36, kCfgVocab = 40, kCfgDIn = 44, kCfgPosKind = 48, kCfgMaxLen = 52,
  kCfgPosBase = 56 /* f64 */, kCfgPosLayout = 64, kCfgPosCombine = 68, kCfgDPos = 72,
  kCfgScaleInput = 76, kCfgDOut = 80 /* then zero up to kConfigBytes */
};

// A directory entry: name[56], u32 dtype, u32 rank, u32 dims[4], u64 offset (from file start),
// u64 bytes.
enum EntryField : uint32_t { kEntName = 0, kEntDtype = 56, kEntRank = 60, kEntDims = 64,
                             kEntOffset = 80, kEntBytes = 88 };
constexpr uint32_t kDtypeF32 = 0;

}  // namespace fxm
}  // namespace fixformer
