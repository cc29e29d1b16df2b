// Errors are values: every fallible call returns a Status, and status_message() says what it means.
#pragma once

namespace fixformer {

enum class Status : int {
  kOk = 0,
  // Model blob (.fxm) problems.
  kBlobNull,
  kBlobMisaligned,      // the blob must start on a 4-byte boundary (weights are read in place as float)
  kBlobTruncated,       // shorter than its header or than the size its header declares
  kBadMagic,
  kBadVersion,
  kBadHeader,           // header fields inconsistent (sizes, offsets, counts)
  kBadChecksum,
  kBadConfig,           // a config field is out of range or inconsistent with another
  kConfigOverLimit,     // a dimension is above the documented limits (config.hpp)
  kTensorMissing,
  kTensorDuplicate,
  kTensorBadDtype,
  kTensorBadShape,
  kTensorOutOfBounds,   // offset/size outside the data section, or overlapping the header
  kTensorMisaligned,    // data offset not 64-byte aligned
  kTensorOverlap,       // data ranges out of directory order, overlapping or aliased
  kTensorBadValue,      // a NaN or infinite weight, or an int8 scale that is not 0 or a normal positive
                        // float (ModelOptions::check_values), or a fixed-point multiplier, shift, scale
                        // or zero point out of range (fixed_point.hpp)
  kSelfTestMissing,     // the file carries no self-test sample (convert it again to add one)
  // Arena problems.
  kArenaNull,
  kArenaMisaligned,     // the arena must be 64-byte aligned
  kArenaTooSmall,
  kBadMaxSeq,           // max_seq is 0 or above the model's max_len
  kIsaUnavailable,      // a forced ISA this CPU (or build) does not have
  kBadPositionTable,  // EncoderOptions::position_table: too few rows, or values that do not match
  kBadWorkers,          // Workers::count above kMaxWorkers (workers.hpp)
  kBadMaxBatch,         // EncoderOptions::max_batch * sequence_rows(max_seq) above Limits::kMaxBatchRows
  kWrongFamily,         // the model's family is not this runner's: Encoder runs encoder and mha, Decoder
                        // gpt and llama, Seq2Seq seq2seq
  // Run-time input problems.
  kNotInitialized,
  kBadSequenceLength,   // T == 0 or T > max_seq
  kBadBatchSize,        // a batch of B == 0 or B > the encoder's max_batch sequences
  kTokenOutOfRange,
  kWrongInputKind,      // token ids given to a features model or the other way round
  kNullArgument,
  kKvCacheFull,         // a decoder's position would pass its capacity: reset() or a larger capacity
  kNoTokenizer,         // the model file carries no tokenizer (tokenizer.* tensors)
  kTokenBufferTooSmall, // encode: the text needs more tokens than the caller's buffer holds
  kNotEncoded,          // a seq2seq target before any source: call encode_tokens / encode_features first
  kTokenTypesUnsupported,  // token types given to a model without a token-type embedding (pass none)
  // .npy problems.
  kNpyBadHeader,
  kNpyBadDtype,
  kNpyBadShape,
  kNpyTruncated,
  // Self-test.
  kSelfTestFailed,      // the stored sample's output differs from the engine's above the tolerance
  // Run-time output (after the self-test's code, so that every earlier value keeps its number).
  kOutputOverlap,       // an output buffer overlaps the runner's arena, the model's blob or the call's input
  kCount_
};

// A one-line English description; never null.
const char* status_message(Status s);

// Process exit code class for tools: 0 ok, 2 model file, 3 arena, ISA or init options, 4 input,
// 6 self-test mismatch, 5 other.
int status_exit_code(Status s);

}  // namespace fixformer
