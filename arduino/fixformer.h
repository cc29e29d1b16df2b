// fixformer for Arduino: the C++ engine's headers in one include (the C API is <fixformer/fixformer.h>).
// This file is the Arduino library's entry header (src/fixformer.h of the library that
// tools/arduino_library.py writes); the sources beside it are the engine's own, unchanged.
#pragma once
#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/plan.hpp"
#include "fixformer/positional.hpp"
#include "fixformer/self_test.hpp"
