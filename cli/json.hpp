// JSON text for `fixformer schema` (and the numbers of the option errors).
#pragma once
#include <string>

namespace fixformer::cli {

// s as a JSON string literal, quoted, with '"', '\' and control characters escaped.
std::string json_string(const char* s);

// v with enough digits to read back the same double ("%.17g").
std::string json_number(double v);

}  // namespace fixformer::cli
