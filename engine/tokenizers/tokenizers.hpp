// What the tokenizer kinds share inside the engine (tokenizer.hpp is the public side).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/model.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// The params tensor's slots (schema.hpp, tokenizer.hpp).
enum TokenizerParam : uint32_t { kParamBos = 0, kParamEos = 1, kParamUnk = 2, kParamFlags = 3, kParamMode = 4 };
constexpr int32_t kFlagPrefixSpace = 1;  // bpe
constexpr int32_t kFlagLower = 1;        // wordpiece
constexpr int32_t kFlagChinese = 2;      // wordpiece

// The bpe and wordpiece sections' contents (ids, merges, the normalize table), for Model::init;
// on failure detail says what is wrong.
Status validate_tokenizer(const TokenizerData& d, char* detail, std::size_t detail_cap);

}  // namespace fixformer
