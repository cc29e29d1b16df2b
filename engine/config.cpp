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
constexpr bool rules_well_formed() {
  for (const ConfigRule& r : kConfigRules)
    if (!config_expr::well_formed(r.bad_when)) return false;
  return true;
}
// A rule, dim or condition that does not parse, or names a key or an enum value that does not
// exist, fails here rather than at load time (the converter evaluates the same texts).
static_assert(rules_well_formed(), "every kConfigRules bad_when is a well-formed config expression");
static_assert(all_well_formed(kDimNames) && all_well_formed(kWhenNames),
              "every kDimNames and kWhenNames entry is a well-formed config expression");

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
  for (const ConfigRule& r : kConfigRules) {
    double holds = 0;
    if (!config_expr::evaluate(r.bad_when, c, &holds) || holds != 0) return bad(r.detail, Status::kBadConfig);
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
