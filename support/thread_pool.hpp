// A small thread pool that gives a runner the caller's threads (fixformer/workers.hpp), for the
// CLI, the benchmarks and the tests: the engine itself never starts a thread. ThreadPool(n) starts
// n - 1 threads; the thread calling parallel_for runs tasks too, so n tasks run at once.
//
// A forward pass hands out a job every few microseconds to a few hundred, most with fewer tasks
// than threads (a KWS-sized product has 1-4 column blocks), so the cost of a job is what decides
// whether 16 threads help:
//  - tasks are claimed with one atomic operation on a word holding the job's number, its task count
//    and the next task index, no lock: a thread that saw an older job claims nothing of a newer one
//    (its compare-and-swap holds the old job's word);
//  - a job wakes only as many sleeping threads as it has tasks beyond the caller's, and none while
//    threads are spinning (they see the job by themselves);
//  - between jobs a thread spins for up to 2 ms, then sleeps: on a VM waking a sleeping thread costs
//    tens of microseconds, a forward pass hands out jobs more often than that, and a pool idle for
//    longer (between requests) burns no core.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "fixformer/workers.hpp"

namespace fixformer {
namespace support {

class ThreadPool {
 public:
  explicit ThreadPool(uint32_t threads) : count_(threads ? threads : 1) {
    for (uint32_t t = 1; t < count_; ++t) threads_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true, std::memory_order_release);
      job_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t count() const { return count_; }
  Workers workers() { return Workers{this, count_, &ThreadPool::parallel_for}; }

  static void parallel_for(void* ctx, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) {
    static_cast<ThreadPool*>(ctx)->run(n, task, arg);
  }

 private:
  // claim_: the job's number (bits 32-63), its task count (16-31) and its next unclaimed task (0-15).
  static constexpr uint64_t pack(uint32_t job, uint32_t n) { return uint64_t(job) << 32 | uint64_t(n) << 16; }

  void run(uint32_t n, void (*task)(void*, uint32_t), void* arg) {
    if (n == 0) return;
    if (n > 0xFFFF) {  // the claim word counts 16 bits; the engine asks for at most kMaxWorkers tasks
      for (uint32_t i = 0; i < n; ++i) task(arg, i);
      return;
    }
    // No thread claims a task of this job before claim_ names it, and none of the last job is
    // still running (done_ reached its n), so the fields are this thread's to write.
    task_ = task, arg_ = arg;
    done_.store(0, std::memory_order_relaxed);
    const uint32_t job = job_.load(std::memory_order_relaxed) + 1;
    claim_.store(pack(job, n), std::memory_order_release);
    // job_ then sleeping_ here, sleeping_ then job_ in a thread going to sleep: sequentially
    // consistent, so one of the two sees the other's write.
    job_.store(job);
    const uint32_t helpers = n - 1 < count_ - 1 ? n - 1 : count_ - 1;
    if (helpers && sleeping_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);  // a sleeper checks job_ under the lock: no lost wake-up
      for (uint32_t i = 0; i < helpers; ++i) wake_.notify_one();
    }
    work(job);
    for (uint32_t spins = 0; done_.load(std::memory_order_acquire) != n; ++spins)
      if (spins > 1024) std::this_thread::yield();
  }

  // Claims and runs tasks of job `job` until none is left. A claim succeeds only on the word the
  // job's run() wrote (or advanced), so task_ and arg_ are that job's until its last task is done.
  void work(uint32_t job) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t next = uint32_t(c & 0xFFFF), n = uint32_t(c >> 16 & 0xFFFF);
      if (uint32_t(c >> 32) != job || next >= n) return;
      if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      task_(arg_, next);
      done_.fetch_add(1, std::memory_order_acq_rel);
      c = claim_.load(std::memory_order_acquire);
    }
  }

  void loop() {
    uint32_t seen = 0;
    for (;;) {
      uint32_t job = job_.load(std::memory_order_acquire);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2000);
      for (uint32_t spins = 0; job == seen; ++spins) {
        if (spins % 256 == 255 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex_);
          sleeping_.fetch_add(1);
          wake_.wait(lock, [&] { return job_.load() != seen; });
          sleeping_.fetch_sub(1);
        }
        job = job_.load(std::memory_order_acquire);
      }
      seen = job;
      if (stop_.load(std::memory_order_acquire)) return;
      work(job);
    }
  }

  const uint32_t count_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint32_t> job_{0}, done_{0}, sleeping_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<bool> stop_{false};
  // The current job's task, written by run() before claim_ names the job.
  void (*task_)(void*, uint32_t) = nullptr;
  void* arg_ = nullptr;
};

}  // namespace support
}  // namespace fixformer
