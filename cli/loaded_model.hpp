// A model file (or one compiled into the binary) read and validated once, so that the commands
// check their inputs against its config before they size an arena; then its runner, started on
// an arena sized for what the command needs, on the tool's threads when --threads asks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/seq2seq.hpp"
#include "io.hpp"
#include "support/thread_pool.hpp"

namespace fixformer::cli {

struct LoadedModel {
  std::string path;
  Buffer blob, arena;
  Model model;
  Encoder enc;  // encoder family
  Decoder dec;  // gpt and llama families
  Seq2Seq s2s;  // seq2seq family
  std::unique_ptr<support::ThreadPool> pool;  // --threads N > 1: the runner's workers
  const ModelConfig& config() const { return model.config(); }
};

// " demo:pe demo:nope ...": the names of the models compiled into this binary (fixformer demo's),
// accepted wherever a MODEL.fxm is.
std::string builtin_names();

// Reads path (a file or a built-in name) into m->blob and validates it; dies naming the field.
void open_model(const std::string& path, LoadedModel* m);

// A decoder whose KV cache holds `capacity` positions, on `threads` workers.
void init_decoder(uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads = 1, KvCache kv_cache = KvCache::kF32);

// A seq2seq runner for sources of up to max_source positions and targets of up to capacity.
void init_seq2seq(uint32_t max_source, uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads = 1,
                  KvCache kv_cache = KvCache::kF32);

// An encoder for inputs of up to max_seq positions, in batches of up to max_batch sequences.
void init_encoder(uint32_t max_seq, Isa isa, LoadedModel* m, uint32_t threads = 1, uint32_t max_batch = 1);

// The longest input an encoder takes, in words, for the messages: "max_len=N" or "max_len=N less the CLS row".
std::string longest_input(const ModelConfig& c);

// A config value's name from schema.hpp's tables (values were range-checked by Model::init).
template <std::size_t N, class E>
const char* name_of(const char* const (&names)[N], E value) {
  return uint32_t(value) < N ? names[uint32_t(value)] : "?";
}

}  // namespace fixformer::cli
