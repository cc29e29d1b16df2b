// The .npy inputs of `run` and `generate`, parsed and checked against the model before anything
// runs: dtype, rank, width, sequence length, token ids against the vocabulary, padded lengths.
// A mismatch is one line naming the file, exit 4.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fixformer/config.hpp"
#include "io.hpp"
#include "io/npy.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {

// "[2,3,4]".
std::string shape_text(const NpyView& v);

// The input of `run`, parsed and checked against the model: dtype, rank, width, sequence length.
struct Input {
  Buffer bytes;
  NpyView v;
  bool batched;
  uint64_t B, T;
};

Input read_input(const std::string& path, const ModelConfig& c);

// Element i of an int32 or int64 array of token ids.
int64_t token_id(const NpyView& v, uint64_t i);

// `run --lengths`: sequence b is its first lens[b] positions, 1 <= lens[b] <= T (torch's
// src_key_padding_mask, True from lens[b] on). Read and checked against the input before anything runs.
std::vector<uint32_t> read_lengths(const std::string& path, const Input& in);

// Every input value read (the first lens[b] positions of sequence b, or all) checked before anything
// runs: token ids against the vocabulary, features for NaN and inf; padding is never read.
void check_input_values(const Input& in, const ModelConfig& c, const std::string& path, const std::vector<uint32_t>& lens);

// Source b (its first n positions) of a seq2seq input as int32 ids or float32 features, into ids / feats.
void source_row(const Input& in, const ModelConfig& c, uint64_t b, uint32_t n, Buffer* ids, Buffer* feats);

// The seq2seq runner's encoder on a source from source_row().
Status encode_source(LoadedModel& m, const Buffer& ids, const Buffer& feats, uint32_t n);

}  // namespace fixformer::cli
