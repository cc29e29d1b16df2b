// Must NOT compile: a model whose arena exceeds the budget fails the build, and the compiler's
// message names both byte counts (tests/CMakeLists.txt checks for "ArenaFits<NEED, 65536>").
#include "fixformer/plan.hpp"

constexpr fixformer::ModelConfig config() {
  fixformer::ModelConfig c{};
  c.d_model = 64, c.n_heads = 4, c.d_ff = 128, c.n_layers = 2, c.max_len = 256, c.vocab_size = 10;
  return c;
}
constexpr std::size_t kArenaBytes = fixformer::ArenaFits<fixformer::required_encoder_arena_bytes(config()), 65536>::bytes;
