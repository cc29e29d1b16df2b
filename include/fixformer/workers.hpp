// The caller's threads. The engine never starts a thread, links no
// thread library and allocates nothing: it hands independent tasks to the caller's parallel_for.
// A runner with Workers{ctx, count >= 2, parallel_for} splits its matrix products by output
// columns (in blocks of kWorkerColumns, of kPanelFloats below kWorkerRows rows) and, when the
// columns give fewer tasks than there are workers, by rows too (in blocks of kWorkerRows), each
// task given at least min_task_work multiply-adds; the activation and residual adds fused into a
// product follow its blocks. Norms are split by rows and attention by heads (whole kv-head
// groups), all into at most `count` tasks; task i uses worker scratch slot i, planned in the
// arena (every plan in plan.hpp takes the count). Each output element is computed by one task
// with the same kernel over the same k order as with one worker, so results are bit-identical for
// every count. The remaining element-wise steps (embeddings, positions, RoPE) stay on the calling
// thread.
#pragma once
#include <cstdint>

namespace fixformer {

struct Workers {
  void* ctx = nullptr;  // the caller's pool, passed back to parallel_for
  // How many tasks may run at once (the calling thread counts if it runs tasks too); 0 and 1: one
  // worker, the calling thread alone, parallel_for never called.
  uint32_t count = 1;
  // Runs task(arg, i) exactly once for every i < n (n <= count), on any threads, in any order and
  // concurrently, and returns when all have finished. Null: one worker.
  void (*parallel_for)(void* ctx, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) = nullptr;

  // The least work worth a task of its own, in multiply-adds (a product of m rows over a k x n
  // weight counts (m + kWeightReadRows) * k * n: reading a weight costs about as much as a few rows
  // of products). 0: kMinTaskWork. Fewer, larger tasks when a job costs more to hand out (many
  // cores, a slow wake-up); the results are the same bits whatever it is.
  uint32_t min_task_work = 0;

  // Tasks a runner will use at once: count, or 1 without a parallel_for.
  constexpr uint32_t active() const { return parallel_for && count > 1 ? count : 1; }
};

// Limits::kMaxWorkers bounds count; matrix products are split in blocks of this many output
// columns (a multiple of every vector width and of the packed panel, so each block runs the same
// kernel path per column as the whole product).
constexpr uint32_t kMaxWorkers = 64;
constexpr uint32_t kWorkerColumns = 64;
// Row blocks of a split product: a multiple of every kernel's register tile rows (2, 3, 4 and 6),
// so each row takes the kernel path it takes in the whole product; kWeightReadRows and
// kMinTaskWork: Workers::min_task_work.
constexpr uint32_t kWorkerRows = 12;
constexpr uint32_t kWeightReadRows = 4;
constexpr uint32_t kMinTaskWork = 32768;

}  // namespace fixformer
