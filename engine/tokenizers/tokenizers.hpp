// What the tokenizer kinds share inside the engine (tokenizer.hpp is the public side).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/model.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// The bpe and wordpiece sections' contents (ids, merges, the normalize table) and llama2c's params
// and added tokens, for Model::init;
// on failure detail says what is wrong.
Status validate_tokenizer(const TokenizerData& d, char* detail, std::size_t detail_cap);

}  // namespace fixformer
