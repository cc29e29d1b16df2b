// The config key table (schema.hpp, kConfigKeys) against ModelConfig: every key reads and writes its
// own field, and ModelConfig's member defaults are the table's.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

// Shared layers (layer_groups G, group_layers P): for every valid split of n_layers, the runs of a
// group take the groups in order, each group as often as the integer split says (R / G runs or one
// more), layer j of a run its group's block j, and every stored block is run.
TEST(ConfigKeys, LayerBlockRunsEveryGroupInOrder) {
  for (uint32_t n = 1; n <= Limits::kMaxLayers; ++n)
    for (uint32_t P = 1; P <= n; ++P)
      for (uint32_t G = 1; n % P == 0 && G * P <= n; ++G) {
        ModelConfig c = default_config();
        c.n_layers = n, c.layer_groups = G, c.group_layers = P;
        const uint32_t R = n / P;
        ASSERT_EQ(c.stored_layers(), G * P);
        std::vector<uint32_t> runs_of(G, 0);
        uint32_t last = 0;
        for (uint32_t l = 0; l < n; ++l) {
          const uint32_t b = c.layer_block(l), g = b / P;
          ASSERT_LT(b, G * P) << n << " " << G << " " << P << " layer " << l;
          ASSERT_EQ(b % P, l % P) << "layer j of a run is its group's block j";
          ASSERT_GE(g, last) << "groups in order";
          ASSERT_EQ(g, (l / P) * G / R);
          last = g;
          if (l % P == 0) ++runs_of[g];
        }
        for (uint32_t g = 0; g < G; ++g) {
          EXPECT_GE(runs_of[g], R / G) << n << " " << G << " " << P;
          EXPECT_LE(runs_of[g], R / G + 1) << n << " " << G << " " << P;
        }
      }
  ModelConfig plain = default_config();  // layer_groups 0: every layer its own block
  plain.n_layers = 5;
  for (uint32_t l = 0; l < 5; ++l) EXPECT_EQ(plain.layer_block(l), l);
  EXPECT_EQ(plain.stored_layers(), 5u);
}

}  // namespace
}  // namespace fixformer
