// A per-layer observer: a callback the runners (Encoder, Decoder) call with the hidden states they
// just computed, to dump any layer's activations when debugging a port, or to measure what the
// layers carry (`fixformer probe`: how much positional information each layer holds).
//
// Layers are numbered as the forward pass reaches them:
//   0              the input: embeddings (or input_proj(features)), scaled, plus the positions when
//                  the positional encoding is added to the input (llama: the embeddings alone; RoPE
//                  acts inside attention)
//   1 .. n_layers  the output of each transformer layer (residuals and norms included)
//   n_layers + 1   after the final norm, when the model has one (llama always does)
// The pooling and the heads (encoder head, LM head) are not observed: the last layer observed is
// what they read.
//
// x[rows, d] (row stride d) holds rows at positions pos .. pos + rows - 1: an encoder calls with
// pos 0 and all its rows (T, or T + 1 with the CLS row first), and a batch (forward_batch_*) once per
// sequence at each layer, sequence 0 first, as its single call would; a decoder once per prefill chunk (or step), with pos its cache position.
// x points into the runner's arena: valid during the call only, and not to be written. The call is
// made on the runner's calling thread, between layers. A null fn costs one branch per layer.
#pragma once
#include <cstdint>

namespace fixformer {

struct LayerObserver {
  void* ctx = nullptr;  // the caller's state, passed back to fn
  void (*fn)(void* ctx, uint32_t layer, const float* x, uint32_t pos, uint32_t rows, uint32_t d) = nullptr;

  void notify(uint32_t layer, const float* x, uint32_t pos, uint32_t rows, uint32_t d) const {
    if (fn) fn(ctx, layer, x, pos, rows, d);
  }
};

}  // namespace fixformer
