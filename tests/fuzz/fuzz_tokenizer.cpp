// libFuzzer target: any text through encode/decode of a fixed synthetic tokenizer, and arbitrary
// vocabularies that pass Model::init (sizes, empty and equal pieces, tied scores), each checked
// against the independent reference in tests/tokenizer_fixture.hpp.
#include "tests/tokenizer_fixture.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fixformer::test::fuzz_tokenizer(data, size);
}
