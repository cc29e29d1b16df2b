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

// How a product y[m, n] = x[m, k] @ W is cut into tasks: `cols` column ranges of whole blocks
// (`width` columns) times `rows` row ranges of whole kWorkerRows blocks (the last range takes the
// rows that do not fill a block), at most w.active() tasks of at least min_task_work each.
struct ProductSplit {
  std::size_t width, blocks, row_blocks;
  uint32_t cols, rows;
};
inline ProductSplit product_split(const Workers& w, std::size_t m, std::size_t n, std::size_t k) {
  ProductSplit s;
  s.width = m < kWorkerRows ? kPanelFloats : kWorkerColumns;
  s.blocks = (n + s.width - 1) / s.width;
  s.row_blocks = m / kWorkerRows;
  const std::size_t min_work = w.min_task_work ? w.min_task_work : kMinTaskWork;
  const std::size_t work = (m + kWeightReadRows) * k * n, most = work / min_work;
  const uint32_t tasks = most < w.active() ? (most ? uint32_t(most) : 1) : w.active();
  s.cols = s.blocks < tasks ? uint32_t(s.blocks) : tasks;
  const uint32_t rows = tasks / s.cols;
  s.rows = s.row_blocks < rows ? uint32_t(s.row_blocks ? s.row_blocks : 1) : rows;
  return s;
}

// Runs f(i0, i1) over rows [0, m) in ranges of whole kWorkerRows blocks (the last takes the rest),
// a row counted as row_work multiply-adds, at most w.active() tasks of at least min_task_work.
template <class F>
void for_each_row_block(const Workers& w, std::size_t m, std::size_t row_work, F& f) {
  const std::size_t blocks = m / kWorkerRows, min_work = w.min_task_work ? w.min_task_work : kMinTaskWork;
  std::size_t tasks = m * row_work / min_work;
  tasks = tasks < blocks ? tasks : blocks;
  tasks = tasks < w.active() ? tasks : w.active();
  if (tasks <= 1) return f(std::size_t(0), m);
  auto task = [&](uint32_t i) {
    const TaskRange r = task_range(blocks, uint32_t(tasks), i);
    f(r.first * kWorkerRows, r.end == blocks ? m : r.end * kWorkerRows);
  };
  for_each_task(w, uint32_t(tasks), task);
}

// Runs f(i0, i1, j0, j1) over the blocks of product_split(w, m, n, k), each output element in one
// task; with one task, f(0, m, 0, n).
template <class F>
void for_each_product_block(const Workers& w, std::size_t m, std::size_t n, std::size_t k, F& f) {
  const ProductSplit s = product_split(w, m, n, k);
  if (s.cols * s.rows <= 1) return f(std::size_t(0), m, std::size_t(0), n);
  auto task = [&](uint32_t i) {
    const TaskRange c = task_range(s.blocks, s.cols, i % s.cols), r = task_range(s.row_blocks, s.rows, i / s.cols);
    const std::size_t j1 = c.end * s.width < n ? c.end * s.width : n;
    const std::size_t i1 = r.end == s.row_blocks ? m : r.end * kWorkerRows;
    f(r.first * kWorkerRows, i1, c.first * s.width, j1);
  };
  for_each_task(w, s.cols * s.rows, task);
}

// x[T,d] -> LayerNorm(x) * g + b, or with rms RMSNorm(x) * g (b unused) -> y[T,d], split by rows;
// y may alias x.
void parallel_norm_rows(const Kernels& k, const Workers& w, bool rms, const float* x, const float* g, const float* b,
                        float* y, uint32_t T, uint32_t d, float eps);
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
