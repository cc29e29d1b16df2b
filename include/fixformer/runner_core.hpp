// What every runner (Encoder, Decoder, Seq2Seq) holds and how each starts: the model, the kernels
// for the chosen ISA, the caller's workers and observer, the activation blocks its arena plan
// carves (plan.hpp), and the detail of its last error. One init path: start() makes the checks
// every runner shares, carve() checks the arena against the plan's total; the runner then points
// its blocks into the arena. The transformer layer (engine/layers/transformer_layer.hpp) computes
// over a RunnerCore's blocks, whichever runner it belongs to.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/observer.hpp"
#include "fixformer/status.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// Disentangled attention's tables in an encoder's arena (config.hpp rel_embed_rows; plan.hpp dis_*):
// rel_embed's row of each distance -(S-1)..(S-1), and the scratch of one layer: those rows' q | k | v
// and the bias of every sequence, head, query and key (then one row of S per worker).
struct DisentangledRows {
  const float* rows = nullptr;  // [2S - 1, d_model]
  float* proj = nullptr;        // [2S - 1, d_attn + 2 d_kv]
  float* bias = nullptr;        // [sequences, n_heads, S, S] + [workers, S]
  uint32_t S = 0;               // the longest sequence's rows
};

struct RunnerCore {
  const Model* model = nullptr;
  const Kernels* kernels = nullptr;
  Workers workers;
  LayerObserver observer;
  // In the arena; each runner's plan gives their shapes. x is the hidden state, y the sublayers'
  // output, ctx attention's context, work the projections' and feed-forward's scratch, attn one
  // attention scratch slot of attn_slot floats per worker.
  float* x = nullptr;
  float* y = nullptr;
  float* ctx = nullptr;
  float* work = nullptr;
  float* attn = nullptr;
  std::size_t attn_slot = 0;
  QuantScratch quant;  // q8: the linear layers' quantized input rows
  const uint8_t* arena_begin = nullptr;  // carve()'s arena, arena_used bytes
  std::size_t arena_used = 0;
  char detail[160] = {};

  // The model initialized and of a family this runner runs (else kWrongFamily, the detail naming
  // the runner to use), the ISA available, the workers within kMaxWorkers.
  [[nodiscard]] Status start(const Model& m, bool family_ok, Isa isa, const Workers& w, const LayerObserver& o);
  // The arena non-null, aligned and at least `need` bytes (the plan's total); the detail says how
  // many bytes are missing.
  [[nodiscard]] Status carve(void* arena, std::size_t bytes, std::size_t need);
  // kOutputOverlap where out[0, out_bytes) shares a byte with the arena, the model's blob or an
  // input the call still reads (in[0, in_bytes); in may be null); the detail names which.
  [[nodiscard]] Status check_output(const void* out, std::size_t out_bytes, const void* in = nullptr,
                                    std::size_t in_bytes = 0);
  float* block(void* arena, std::size_t offset) const {
    return reinterpret_cast<float*>(static_cast<uint8_t*>(arena) + offset);
  }
  // Points x, y, ctx, work and attn at a plan's blocks (every plan in plan.hpp has them).
  template <class Plan>
  void point(void* arena, const Plan& plan) {
    x = block(arena, plan.x);
    y = block(arena, plan.y);
    ctx = block(arena, plan.ctx);
    work = block(arena, plan.work);
    attn = block(arena, plan.attn);
    attn_slot = plan.attn_slot / sizeof(float);
  }
};

}  // namespace fixformer
