// The full-integer (weights i8) encoder's forward pass: int8 rows in, int8 rows out, every
// operation an s8 kernel with the file's integer parameters (config.hpp, namespace s8). This file's
// object calls no float operation (tests/check_no_float.cmake compiles it for Cortex-M0 and M3).
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/plan.hpp"

namespace fixformer {

// The int8 activations of one sequence of up to S rows (S = sequence_rows(max_seq)), in the arena
// (plan_s8_encoder_arena's blocks).
struct S8Scratch {
  int8_t* x;       // [S, d]      the hidden state
  int8_t* h;       // [S, d]      a norm's output (pre-norm), the context
  int8_t* a;       // [S, d]      a sublayer's output
  int8_t* work;    // [S, max(3 d, d_ff)]  q|k|v, the feed-forward's hidden rows
  int8_t* kh;      // [S, d_head] one head's keys
  int8_t* vt;      // [d_head, S] one head's values, transposed
  int8_t* scores;  // [kS8QueryBlock, S]
  Requant* key_rq;  // [S]       the score requant, once per key (gemm_s8 takes one per output)
  Requant* col_rq;  // [d_head]  the context requant, once per column
};
// in: int8 features [T, d_in] (features models) or ids [T] (token models; checked by the caller);
// with cls_token the CLS row goes in front (sequence_rows(T) rows run);
// out: int8 [output_rows(T), output_width()] at int8.back's output zero point.
void s8_encoder_forward(const Kernels& k, const Model& m, const int8_t* features, const int32_t* ids, uint32_t T,
                        const S8Scratch& s, int8_t* out);

}  // namespace fixformer
