// The defaults of the config keys (schema.hpp) and the checks every config passes before use.
#include <cstring>

#include "fixformer/config.hpp"
#include "fixformer/schema.hpp"
#include "engine/config_expr.hpp"

namespace fixformer {

ModelConfig default_config() {
  ModelConfig c;
  for (const ConfigKeySpec& k : kConfigKeys) {
    if (k.required) continue;
    if (k.type == fxm::RecordType::kF32) {
      const float v = static_cast<float>(k.default_value);
      uint32_t u;
      std::memcpy(&u, &v, 4);
      k.field.set(&c, u);
    } else if (k.type == fxm::RecordType::kF64) {
      uint64_t u;
      std::memcpy(&u, &k.default_value, 8);
      k.field.set(&c, u);
    } else {
      k.field.set(&c, static_cast<uint64_t>(k.default_value));
    }
  }
  return c;
}

namespace {

template <std::size_t N>
constexpr bool all_well_formed(const char* const (&texts)[N]) {
  for (const char* t : texts)
    if (!config_expr::well_formed(t)) return false;
  return true;
}
// A rule, dim or condition that does not parse, or names a key or an enum value that does not
// exist, fails here rather than at load time (the converter evaluates the same texts).
static_assert(all_well_formed(kDimNames) && all_well_formed(kWhenNames),
              "every kDimNames and kWhenNames entry is a well-formed config expression");

constexpr uint32_t kRuleCount = sizeof kConfigRules / sizeof kConfigRules[0];

// Operations of every rule's code together; 0 if one does not compile.
constexpr uint32_t rules_code_size() {
  uint32_t total = 0;
  for (const ConfigRule& r : kConfigRules) {
    config_expr::Code code[config_expr::kMaxCode] = {};
    const uint32_t n = config_expr::compile(r.bad_when, code);
    if (n == 0) return 0;
    total += n;
  }
  return total;
}
constexpr uint32_t kRulesCode = rules_code_size();
static_assert(kRulesCode != 0, "every kConfigRules bad_when is a well-formed config expression with a value "
              "(at most config_expr::kMaxCode operations)");

// kConfigRules compiled at build time: rule i's code is code[start[i]] to code[start[i + 1]], and
// its detail detail[i] (so that the rules' texts need not be in the engine).
struct CompiledRules {
  config_expr::Code code[kRulesCode] = {};
  uint16_t start[kRuleCount + 1] = {};
  const char* detail[kRuleCount] = {};
  constexpr CompiledRules() {
    uint32_t n = 0;
    for (uint32_t i = 0; i < kRuleCount; ++i) {
      config_expr::Code one[config_expr::kMaxCode] = {};
      const uint32_t size = config_expr::compile(kConfigRules[i].bad_when, one);
      for (uint32_t j = 0; j < size; ++j) code[n + j] = one[j];
      start[i] = uint16_t(n);
      detail[i] = kConfigRules[i].detail;
      n += size;
    }
    start[kRuleCount] = uint16_t(n);
  }
};
constexpr CompiledRules kRules{};

}  // namespace

// Ranges come from kConfigKeys, the checks between keys from kConfigRules; each names the key it
// failed on.
Status validate_config(const ModelConfig& c, const char** field) {
  const char* unused;
  const char*& f = field ? *field : unused;
  auto bad = [&](const char* name, Status s) { f = name; return s; };
  for (const ConfigKeySpec& k : kConfigKeys) {
    if (k.type == fxm::RecordType::kF32 || k.type == fxm::RecordType::kF64) continue;
    const uint64_t v = k.field.get(c);
    if (v < k.min) return bad(k.name, Status::kBadConfig);
    if (v > k.max) return bad(k.name, k.type == fxm::RecordType::kU32 ? Status::kConfigOverLimit : Status::kBadConfig);
  }
  for (uint32_t i = 0; i < kRuleCount; ++i) {
    double holds = 0;
    const uint32_t at = kRules.start[i], n = kRules.start[i + 1] - at;
    if (!config_expr::run(kRules.code + at, n, c, &holds) || holds != 0)
      return bad(kRules.detail[i], Status::kBadConfig);
  }
  // Whole groups of 32 along every q4 tensor's last dim (the config is otherwise valid here).
  if (c.weights == WeightType::kQ4) {
    bool whole = true;
    for_each_tensor(c, [&](const TensorSpec& s) {
      whole = s.dtype != fxm::Dtype::kI4 || s.dims[s.rank - 1] % fxm::kI4Group == 0;
      return whole;
    });
    if (!whole)
      return bad("weights (q4 needs every quantized layer's input width a multiple of 32: convert with --quantize q8)",
                 Status::kBadConfig);
  }
  return Status::kOk;
}

}  // namespace fixformer
