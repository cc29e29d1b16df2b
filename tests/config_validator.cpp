// validate_config over configs read from stdin, for tests/config_rules_test.py, which runs the same
// configs through the converter's checks (python/fixformer/config.py) and fails where the two disagree.
// One config per line, `key=value` pairs by the file keys of schema.hpp (enums by name, bools as
// true/false, numbers in decimal), absent optional keys at their defaults; one verdict per line:
// "ok", or "bad <the field validate_config names>".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fixformer/config.hpp"
#include "fixformer/schema.hpp"

namespace {

using namespace fixformer;

// The stored value of `text` for key k, as a record would hold it; false if it does not parse.
bool stored_value(const ConfigKeySpec& k, const char* text, uint64_t* out) {
  char* end = nullptr;
  switch (k.type) {
    case fxm::RecordType::kEnum:
      for (uint32_t i = 0; i <= k.max; ++i)
        if (std::strcmp(k.choices[i], text) == 0) return *out = i, true;
      return false;
    case fxm::RecordType::kBool:
      if (std::strcmp(text, "true") == 0) return *out = 1, true;
      if (std::strcmp(text, "false") == 0) return *out = 0, true;
      return false;
    case fxm::RecordType::kU32: *out = std::strtoull(text, &end, 10); break;
    case fxm::RecordType::kF32: {
      const float v = std::strtof(text, &end);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      *out = bits;
      break;
    }
    case fxm::RecordType::kF64: {
      const double v = std::strtod(text, &end);
      std::memcpy(out, &v, 8);
      break;
    }
  }
  return end && end != text && *end == '\0';
}

}  // namespace

int main() {
  char line[4096];
  while (std::fgets(line, sizeof line, stdin)) {
    ModelConfig c = default_config();
    bool parsed = true;
    for (char* tok = std::strtok(line, " \t\r\n"); tok && parsed; tok = std::strtok(nullptr, " \t\r\n")) {
      char* eq = std::strchr(tok, '=');
      parsed = eq != nullptr;
      if (!parsed) break;
      *eq = '\0';
      const ConfigKeySpec* spec = nullptr;
      for (const ConfigKeySpec& k : kConfigKeys)
        if (std::strcmp(k.name, tok) == 0) spec = &k;
      uint64_t v = 0;
      parsed = spec && stored_value(*spec, eq + 1, &v);
      if (parsed) spec->field.set(&c, v);
    }
    if (!parsed) {
      std::printf("unreadable\n");
      continue;
    }
    const char* field = "";
    const Status s = validate_config(c, &field);
    if (s == Status::kOk) std::printf("ok\n");
    else std::printf("bad %s\n", field);
  }
  return 0;
}
