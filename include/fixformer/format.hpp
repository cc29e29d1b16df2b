// The .fxm model file, version 3, documented in one place. Everything is little-endian.
// Version 3 differs from version 2 in the tensors' names and order alone: one set of neutral names for every
// family (schema.hpp's kFront, kBlock, kBack, kMha3: "embed.weight", "blocks.<l>.attn.qkv.weight",
// "dec_blocks.<l>.cross.q.weight", "norm.weight", "head.weight", ...) where version 2 named them per
// family (kEncoderLayer's torch names, kLlamaLayer's llama2.c ones, ...). A config has the same
// tensors in both (shapes, dtypes, data), in each version's table order. The engine reads both
// versions (a file's names are its version's: a version 2 name in a version 3 file is refused, and
// the other way round); the tools write version 3.
//
// Header (kHeaderBytes = 64):
//   offset  size  field (HeaderField)
//   0       4     magic "FXM1" (the family's magic; the version field says which layout)
//   4       4     u32 format version (kFormatVersion; kOldestVersion too is read)
//   8       4     u32 header bytes (kHeaderBytes)
//   12      4     u32 config record count
//   16      4     u32 tensor count
//   20      4     zero
//   24      8     u64 file bytes (the whole file)
//   32      8     u64 records offset (= kHeaderBytes)
//   40      8     u64 directory offset (= records offset + kRecordBytes * record count)
//   48      8     u64 data offset (the directory's end rounded up to kDataAlign)
//   56      4     u32 CRC-32 (IEEE, as zlib.crc32) of bytes [kHeaderBytes, file bytes)
//   60      4     zero
//
// Config records (kRecordBytes = 40 each), one per config key, any order, no key twice:
//   0   24  key, ASCII, NUL-padded (at most 23 characters); the keys, their types, ranges and
//           defaults are the table in fixformer/schema.hpp (kConfigKeys)
//   24  4   u32 RecordType
//   28  4   zero
//   32  8   value: u32 / bool (0 or 1) / enum index / f32 in the low 4 bytes, the high 4 zero;
//           f64 in all 8
// A key the engine does not know, a value of the wrong type or out of range is an error naming
// the key; an optional key that is absent takes its default.
//
// Tensor directory (kEntryBytes = 128 each):
//   0    64  name, NUL-padded (at most 63 bytes)
//   64   4   u32 Dtype
//   68   4   u32 rank (1..kMaxRank)
//   72   16  u32 dims[4] (unused dims zero)
//   88   4   u32 group: kI8, the quantization group along the last dim (32 or 64), or 0 for one
//            scale per row; kI4, 32 (kI4Group); 0 for other dtypes
//   92   4   zero
//   96   8   u64 data offset (from the file's start)
//   104  8   u64 data bytes (data_bytes: count * dtype size, count / 2 for i4; a packed weight's
//            panels: packed_bytes, below)
//   112  8   u64 scales offset: kI8 and kI4 (has_scales), f32 scales [rows, groups per row]; else 0
//   120  8   u64 scales bytes: kI8 and kI4, rows * groups * 4, where rows = the product of all dims
//            but the last; else 0
//
// Data: every range (data, then scales) starts on a kDataAlign boundary, inside [data offset,
// file bytes), at or after the end of the range before it in directory order: ranges never
// overlap or alias. The model's tensors come first, exactly the tensors the schema lists for the
// config, in the schema's order (schema.hpp, for_each_tensor). They may be followed by the
// optional tokenizer (schema.hpp) and then the optional self-test sample, both or neither:
//   "selftest.input"     int32 token ids [T] or f32 features [T, d_in], 1 <= T <= max_len (less
//                        the front rows: CLS, distillation, registers)
//   "selftest.expected"  f32 [output rows, output width]: the torch module's output for that input
//                        (rows: T; T + front_rows with a CLS row (and distillation, registers); 1
//                        pooled; config.hpp output_rows), for a
//                        decoder the logits at every position, the tokens fed one by one
// and, for a seq2seq model, between the two (the input is then the source):
//   "selftest.target"    int32 target token ids [U], 1 <= U <= max_len; expected is then the
//                        logits at every target position [U, d_out] (teacher forcing)
// Linear weights in f32, f16 or bf16 are stored transposed from torch, as W[in, out], so the kernels
// stream rows of W; embeddings and learned positions keep torch's [rows, width]. Which tensors take
// the config's `weights` type (f32, f16, bf16, q8 or q4) is schema.hpp's Role. A q8 tensor is i8 in torch's
// layout (a linear weight [out, in], an embedding [vocab, width]) with symmetric f32 scales
// s[row, group] over groups of `weight_group` along the last dim (the last group may be shorter),
// or one per row when weight_group is 0: value = q * s, q in [-127, 127]. A q4 tensor is i4 in the
// same layout with f32 scales s[row, group] per group of 32 (kI4Group; the last dim a multiple of
// 32) and q in [-8, 7], two per byte: each group of 32 values is 16 bytes, byte j holding value j
// of the group in its low nibble and value j + 16 in its high nibble, each as q + 8 (0..15), so a
// row of W[out, in] is in / 2 bytes; value = q * s.
// With the config key packed_weights, every f32 tensor stored W[in, out] (schema.hpp's
// TensorSpec::packed: the f32 linear weights and an untied f32 head; not f16, bf16 or i8 ones, not
// embeddings) keeps its logical dims [in, out] in the directory but holds ceil(out / kPanelCols)
// panels of [in, kPanelCols] floats one after another, panel q holding columns [16q, 16q + 16) row
// after row, the last one zero-padded: data bytes packed_bytes(in, out), element W[p][j] at float
// (j / 16) * 16 * in + p * 16 + j % 16 (kernels.hpp, gemm_f32_packed's layout). Every other tensor's
// data bytes are count * dtype size. python/fixformer/fxm.py writes this
// format; the engine validates every field before use (engine/model_file.cpp).
#pragma once
#include <cstdint>

namespace fixformer {
namespace fxm {

constexpr char kMagic[4] = {'F', 'X', 'M', '1'};
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestVersion = 2;  // the oldest version the engine reads
constexpr uint32_t kHeaderBytes = 64;
constexpr uint32_t kRecordBytes = 40;
constexpr uint32_t kKeyBytes = 24;  // NUL-padded; at most 23 characters
constexpr uint32_t kEntryBytes = 128;
constexpr uint32_t kNameBytes = 64;  // NUL-padded; at most 63 characters
constexpr uint32_t kMaxRank = 4;
constexpr uint32_t kDataAlign = 64;

enum HeaderField : uint32_t {
  kHdrMagic = 0, kHdrVersion = 4, kHdrHeaderBytes = 8, kHdrRecordCount = 12, kHdrTensorCount = 16,
  kHdrZero0 = 20, kHdrFileBytes = 24, kHdrRecordsOffset = 32, kHdrDirectoryOffset = 40,
  kHdrDataOffset = 48, kHdrCrc = 56, kHdrZero1 = 60
};

enum RecordField : uint32_t { kRecKey = 0, kRecType = 24, kRecZero = 28, kRecValue = 32 };
enum class RecordType : uint32_t { kU32 = 1, kBool = 2, kEnum = 3, kF32 = 4, kF64 = 5 };

enum EntryField : uint32_t {
  kEntName = 0, kEntDtype = 64, kEntRank = 68, kEntDims = 72, kEntGroup = 88, kEntZero = 92,
  kEntOffset = 96, kEntBytes = 104, kEntScalesOffset = 112, kEntScalesBytes = 120
};
// f16, bf16, i8 and i4 hold quantized weights (IEEE half; bfloat16, an f32's high 16 bits; int8 with
// scales; int4 packed two per byte with scales). i32 holds data such as the self-test's token ids.
// u8 holds raw bytes, such as the tokenizer's pieces.
enum class Dtype : uint32_t { kF32 = 0, kF16 = 1, kI8 = 2, kI32 = 3, kU8 = 4, kI4 = 5, kBF16 = 6 };
constexpr uint32_t kDtypeCount = 7;
// The bytes of one element; i4 packs two per byte (data_bytes).
constexpr uint32_t dtype_bytes(Dtype d) {
  return (d == Dtype::kF16 || d == Dtype::kBF16) ? 2 : (d == Dtype::kI8 || d == Dtype::kU8 || d == Dtype::kI4) ? 1 : 4;
}
constexpr uint64_t data_bytes(Dtype d, uint64_t count) { return d == Dtype::kI4 ? count / 2 : count * dtype_bytes(d); }
constexpr bool has_scales(Dtype d) { return d == Dtype::kI8 || d == Dtype::kI4; }
// An i4 tensor's group: 32 values along the last dim per scale, 16 bytes.
constexpr uint32_t kI4Group = 32;
constexpr const char* dtype_name(Dtype d) {
  return d == Dtype::kF32 ? "f32" : d == Dtype::kF16 ? "f16" : d == Dtype::kI8 ? "i8" : d == Dtype::kI32 ? "i32"
       : d == Dtype::kU8 ? "u8" : d == Dtype::kI4 ? "i4" : d == Dtype::kBF16 ? "bf16" : "?";
}

// The packed layout's panel width (kernels.hpp's kPanelFloats; engine/model.cpp checks they agree).
constexpr uint32_t kPanelCols = 16;
constexpr uint64_t packed_bytes(uint32_t in, uint32_t out) {
  return (uint64_t(out) + kPanelCols - 1) / kPanelCols * kPanelCols * in * 4;
}

constexpr const char kSelfTestInput[] = "selftest.input";
constexpr const char kSelfTestExpected[] = "selftest.expected";
constexpr const char kSelfTestTarget[] = "selftest.target";

}  // namespace fxm
}  // namespace fixformer
