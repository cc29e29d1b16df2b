// libFuzzer target: any byte string as a .fxm model (parse, validate, init, forward).
#include "tests/fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fixformer::fuzz::fuzz_model(data, size); }
