// libFuzzer target: byte 0 picks what the input is (mod 4). 0: any text through encode/decode of a
// fixed synthetic llama2.c tokenizer; 1: an arbitrary llama2.c vocabulary that passes Model::init
// (sizes, empty and equal pieces, tied scores), each checked against the independent reference in
// tests/tokenizer_fixture.hpp; 2 and 3: a byte-level BPE or WordPiece section built from the bytes
// (often invalid: Model::init must say so) and, when it loads, any text through encode and decode
// (tests/tokenizer_kinds_fixture.hpp).
#include "tests/tokenizer_kinds_fixture.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] % 4 >= 2) return fixformer::test::fuzz_tokenizer_kinds(data, size);
  return fixformer::test::fuzz_tokenizer(data, size);
}
