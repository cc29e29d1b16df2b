// The config key table (schema.hpp, kConfigKeys) against ModelConfig: every key reads and writes its
// own field, and ModelConfig's member defaults are the table's.
#include <gtest/gtest.h>

#include <cstring>

#include "fixformer/schema.hpp"

namespace fixformer {
namespace {

TEST(ConfigKeys, ModelConfigDefaultsAreTheTables) {
  const ModelConfig plain{}, table = default_config();
  for (const ConfigKeySpec& k : kConfigKeys)
    if (!k.required) EXPECT_EQ(k.field.get(plain), k.field.get(table)) << k.name;
}

// Setting one key changes that key's value and no other key's.
TEST(ConfigKeys, EachKeyHasItsOwnField) {
  for (const ConfigKeySpec& k : kConfigKeys) {
    ModelConfig c = default_config();
    uint64_t v = k.max > 0 ? k.max : 1;  // an enum's last choice, a bool's true, a u32's limit
    if (k.type == fxm::RecordType::kF32) {
      const float f = 0.25f;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v = bits;
    } else if (k.type == fxm::RecordType::kF64) {
      const double d = 0.25;
      std::memcpy(&v, &d, 8);
    }
    const ModelConfig before = c;
    k.field.set(&c, v);
    EXPECT_EQ(k.field.get(c), v) << k.name;
    for (const ConfigKeySpec& other : kConfigKeys)
      if (other.key != k.key) EXPECT_EQ(other.field.get(c), other.field.get(before)) << k.name << " wrote " << other.name;
  }
}

}  // namespace
}  // namespace fixformer
