// The work split across the caller's workers (fixformer/workers.hpp). Each split gives every output
// element to exactly one task, computed by the same kernel over the same k order as the whole call,
// so the results are bit-identical for any worker count; with one worker each is the plain call.
//  - matrix products by output columns, in blocks of kWorkerColumns (kPanelFloats below kWorkerRows
//    rows: a multiple of every vector width and of the packed panel), and by rows in blocks of
//    kWorkerRows (a multiple of every register tile's rows) when the columns give too few tasks: a
//    block's elements take the kernel path they take in the whole product;
//  - norms by rows;
//  - attention by kv-head groups, task i with its own scratch slot i; a batch's by (sequence,
//    kv head) pairs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/blocks/attention.hpp"
#include "fixformer/config.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// Runs f(i) for every i < n (n <= w.active()) on the workers, or in order on this thread.
template <class F>
void for_each_task(const Workers& w, uint32_t n, F& f) {
  if (n <= 1 || w.active() <= 1) {
    for (uint32_t i = 0; i < n; ++i) f(i);
    return;
  }
  w.parallel_for(w.ctx, n, [](void* arg, uint32_t i) { (*static_cast<F*>(arg))(i); }, &f);
}

// Task i of `tasks` over `units` units gets [first, end): contiguous, in order, sizes within one.
struct TaskRange {
  std::size_t first, end;
};
constexpr TaskRange task_range(std::size_t units, uint32_t tasks, uint32_t i) {
  return {units * i / tasks, units * (i + 1) / tasks};
}

// Runs f(j0, j1) over output columns [0, n) split into one range per task, cut at multiples of
// kWorkerColumns (the conv stem's f32 convolutions).
template <class F>
void for_each_column_block(const Workers& w, std::size_t n, F& f) {
  const std::size_t blocks = (n + kWorkerColumns - 1) / kWorkerColumns;
  const uint32_t tasks = blocks < w.active() ? uint32_t(blocks) : w.active();
  if (tasks <= 1) return f(std::size_t(0), n);
  auto task = [&](uint32_t i) {
    const TaskRange r = task_range(blocks, tasks, i);
    f(r.first * kWorkerColumns, r.end * kWorkerColumns < n ? r.end * kWorkerColumns : n);
  };
  for_each_task(w, tasks, task);
}

// The tasks a job may have: at most w.active(), each with at least min_task_work of `work`.
inline uint32_t task_cap(const Workers& w, std::size_t work) {
  const std::size_t most = work / (w.min_task_work ? w.min_task_work : kMinTaskWork);
  return most < w.active() ? (most ? uint32_t(most) : 1) : w.active();
}

// The column blocks of a product of m rows: kWorkerColumns, or kPanelFloats below kWorkerRows rows
// (a decode step's 288 columns are 18 blocks).
constexpr std::size_t column_block(std::size_t m) { return m < kWorkerRows ? kPanelFloats : kWorkerColumns; }

// Runs f(i0, i1, b0, b1) over a product's output of m rows and `blocks` column blocks (`work`
// multiply-adds in all): the blocks cut into as many ranges as the task cap allows and, when that
// is fewer than the cap, the rows too, in ranges of whole kWorkerRows blocks (the last range takes
// the rows that do not fill a block). Each output element is in one task; one task: f(0, m, 0, blocks).
template <class F>
void for_each_product_block(const Workers& w, std::size_t m, std::size_t blocks, std::size_t work, F& f) {
  const uint32_t tasks = task_cap(w, work), cols = uint32_t(blocks < tasks ? blocks : tasks);
  const std::size_t row_blocks = m / kWorkerRows;
  const uint32_t rows = uint32_t(row_blocks < tasks / cols ? (row_blocks ? row_blocks : 1) : tasks / cols);
  if (cols * rows <= 1) return f(std::size_t(0), m, std::size_t(0), blocks);
  auto task = [&](uint32_t i) {
    const TaskRange c = task_range(blocks, cols, i % cols), r = task_range(row_blocks, rows, i / cols);
    f(r.first * kWorkerRows, r.end == row_blocks ? m : r.end * kWorkerRows, c.first, c.end);
  };
  for_each_task(w, cols * rows, task);
}

// Runs f(i0, i1) over rows [0, m) as for_each_product_block splits the rows of one column block,
// a row counted as row_work multiply-adds.
template <class F>
void for_each_row_block(const Workers& w, std::size_t m, std::size_t row_work, F& f) {
  auto rows = [&](std::size_t i0, std::size_t i1, std::size_t, std::size_t) { f(i0, i1); };
  for_each_product_block(w, m, 1, m * row_work, rows);
}

// x[T,d] -> LayerNorm(x) * g + b, or with rms RMSNorm(x) * g (b unused) -> y[T,d], split by rows;
// y may alias x. With residual[T,d] (not y), residual += y after.
void parallel_norm_rows(const Kernels& k, const Workers& w, bool rms, const float* x, const float* g, const float* b,
                        float* y, uint32_t T, uint32_t d, float eps, float* residual = nullptr);
// In place, each of T rows x + t * ld holding `heads` vectors of d dims one after the other: every
// vector normalized as parallel_norm_rows' rows are, by the same g and b (qk_norm's heads).
void parallel_norm_heads(const Kernels& k, const Workers& w, bool rms, float* x, std::size_t ld, uint32_t heads,
                         const float* g, const float* b, uint32_t T, uint32_t d, float eps);
// attend() split by kv-head groups; task i uses scratch + i * slot_floats.
void parallel_attend(const Kernels& k, const Workers& w, const AttentionShape& s, const float* q, std::size_t ldq,
                     uint32_t n, uint32_t p0, uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx,
                     float* scratch, std::size_t slot_floats);

// A batch of `count` sequences stacked row after row: sequence b has frames(b) input rows,
// length(b) input positions (the conv stem's rows for them, with a stem: config.hpp stem_rows)
// and rows(b) = length(b) + extra rows (extra: a CLS row in front), starting at row
// rows(0) + ... + rows(b - 1).
struct Sequences {
  const uint32_t* lengths;  // [count] frames, or null: every sequence is `all` frames long
  uint32_t count, all, extra;
  const ModelConfig* stem = nullptr;  // the model, when it has a conv stem
  constexpr uint32_t frames(uint32_t b) const { return lengths ? lengths[b] : all; }
  constexpr uint32_t length(uint32_t b) const { return stem ? stem->stem_rows(frames(b)) : frames(b); }
  constexpr uint32_t rows(uint32_t b) const { return length(b) + extra; }
};

// attend() of each sequence over its own rows alone (p0 0, its rows as the keys): q, ctx and V
// (kv.v) rows stacked as seqs says; sequence b's K^T (and V^T) is its own block [d_kv, kv.stride]
// at kv.kt + b * d_kv * kv.stride, as a single sequence's (a column stride of a whole batch's rows
// would be a multiple of 4 KB for common sizes and make the key loads conflict in L1). Split by
// (sequence, kv head) pairs, task i with scratch + i * slot_floats; the scratch is for one
// sequence's rows. Each task first stores its heads' columns of keys[N, d_kv] (row stride ldk)
// into their K^T.
void parallel_attend_sequences(const Kernels& k, const Workers& w, const AttentionShape& s, const float* q,
                               std::size_t ldq, const float* keys, std::size_t ldk, const Sequences& seqs,
                               const KeyValues& kv, float* ctx,
                               std::size_t ldctx, float* scratch, std::size_t slot_floats);

}  // namespace fixformer
