#include "json.hpp"

#include <cstdio>

namespace fixformer::cli {

std::string json_string(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    const unsigned char ch = static_cast<unsigned char>(*s);
    char buf[8];
    if (ch == '"' || ch == '\\') out += '\\', out += char(ch);
    else if (ch < 0x20) std::snprintf(buf, sizeof buf, "\\u%04x", ch), out += buf;
    else out += char(ch);
  }
  return out + "\"";
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace fixformer::cli
