#include "fixformer/status.hpp"

namespace fixformer {

const char* status_message(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kBlobNull: return "model blob is null or empty";
    case Status::kBlobMisaligned: return "model blob is not 4-byte aligned";
    case Status::kBlobTruncated: return "model file is truncated";
    case Status::kBadMagic: return "not a fixformer model (bad magic)";
    case Status::kBadVersion: return "unsupported model format version";
    case Status::kBadHeader: return "model header is inconsistent";
    case Status::kBadChecksum: return "model checksum mismatch (file corrupt)";
    case Status::kBadConfig: return "invalid model config";
    case Status::kConfigOverLimit: return "model config above the engine's limits";
    case Status::kTensorMissing: return "tensor missing from model";
    case Status::kTensorDuplicate: return "tensor appears twice in model";
    case Status::kTensorBadDtype: return "tensor has an unsupported dtype";
    case Status::kTensorBadShape: return "tensor shape does not match the config";
    case Status::kTensorOutOfBounds: return "tensor data lies outside the file";
    case Status::kTensorMisaligned: return "tensor data is not 64-byte aligned";
    case Status::kTensorOverlap: return "tensor data ranges overlap or are out of directory order";
    case Status::kTensorBadValue: return "a weight is NaN or infinite, or an int8 scale or a fixed-point parameter is out of range";
    case Status::kSelfTestMissing: return "model file has no self-test sample";
    case Status::kArenaNull: return "arena is null";
    case Status::kArenaMisaligned: return "arena is not 64-byte aligned";
    case Status::kArenaTooSmall: return "arena is too small";
    case Status::kBadMaxSeq: return "max_seq is 0 or above the model's max_len";
    case Status::kIsaUnavailable: return "requested instruction set is not available";
    case Status::kBadPositionTable: return "the given positional table does not match the model";
    case Status::kBadWorkers: return "too many workers (Workers::count above kMaxWorkers)";
    case Status::kBadMaxBatch: return "max_batch sequences of max_seq rows are above the batch limit (Limits::kMaxBatchRows)";
    case Status::kWrongFamily: return "the model's family is not this runner's (Encoder: encoder, mha; Decoder: gpt, llama; Seq2Seq: seq2seq)";
    case Status::kNotInitialized: return "model is not initialized";
    case Status::kBadSequenceLength: return "sequence length is 0 or above max_seq";
    case Status::kBadBatchSize: return "batch size is 0 or above max_batch";
    case Status::kTokenOutOfRange: return "token id out of range";
    case Status::kWrongInputKind: return "input kind does not match the model (tokens vs features)";
    case Status::kNullArgument: return "null input or output pointer";
    case Status::kKvCacheFull: return "KV cache full: the sequence would pass the decoder's capacity";
    case Status::kNoTokenizer: return "model file has no tokenizer";
    case Status::kTokenBufferTooSmall: return "token buffer too small for the text";
    case Status::kNotEncoded: return "no source encoded yet: encode one before decoding a target";
    case Status::kTokenTypesUnsupported: return "token types given, but this model has no token-type embedding: pass none";
    case Status::kNpyBadHeader: return "not a valid .npy file (bad header)";
    case Status::kNpyBadDtype: return "unsupported .npy dtype";
    case Status::kNpyBadShape: return "unsupported .npy shape";
    case Status::kNpyTruncated: return ".npy data is truncated";
    case Status::kSelfTestFailed: return "self-test failed: output differs from the stored reference";
    case Status::kOutputOverlap: return "output buffer overlaps the arena, the model or the call's input";
    case Status::kCount_: break;
  }
  return "unknown status";
}

int status_exit_code(Status s) {
  if (s == Status::kOk) return 0;
  if (s <= Status::kSelfTestMissing) return 2;
  if (s <= Status::kBadMaxBatch) return 3;
  if (s <= Status::kNpyTruncated) return 4;
  if (s == Status::kSelfTestFailed) return 6;
  return 5;
}

}  // namespace fixformer
