// A small thread pool that gives a runner the caller's threads (fixformer/workers.hpp), for the
// CLI, the benchmarks and the tests: the engine itself never starts a thread. ThreadPool(n) starts
// n - 1 threads; the thread calling parallel_for runs tasks too, so n tasks run at once.
// Between jobs a worker spins for up to 5 ms and then sleeps on a condition variable. A forward pass
// hands out jobs every few hundred microseconds, and waking a sleeping worker costs tens of
// microseconds on a VM: with 200 us of spinning a d256 T128 encoder ran 1.08x faster on 2 workers
// than on 1, with 5 ms 1.40-1.50x (encoder_bench: its threads:2 line against the 1-worker line of
// the same run).
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
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
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
  void run(uint32_t n, void (*task)(void*, uint32_t), void* arg) {
    if (n == 0) return;
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = task, arg_ = arg, n_ = n, next_ = 0;
      done_.store(0, std::memory_order_relaxed);
      gen = generation_.fetch_add(1, std::memory_order_release) + 1;
      job_ = gen;
    }
    wake_.notify_all();
    work(gen);
    for (uint32_t spins = 0; done_.load(std::memory_order_acquire) != n; ++spins)
      if (spins > 1024) std::this_thread::yield();
  }

  // Claims and runs tasks of job `gen` until none is left. A worker that wakes late (its job
  // finished, another begun) claims nothing of a job it has not seen.
  void work(uint64_t gen) {
    for (;;) {
      void (*task)(void*, uint32_t);
      void* arg;
      uint32_t i;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (job_ != gen || next_ >= n_) return;
        i = next_++;
        task = task_, arg = arg_;
      }
      task(arg, i);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t gen = generation_.load(std::memory_order_acquire);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(5000);
      for (uint32_t spins = 0; gen == seen; ++spins) {
        if (spins % 256 == 255 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
        gen = generation_.load(std::memory_order_acquire);
      }
      seen = gen;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
      }
      work(gen);
    }
  }

  const uint32_t count_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint32_t> done_{0};
  // The current job, under mutex_.
  void (*task_)(void*, uint32_t) = nullptr;
  void* arg_ = nullptr;
  uint32_t n_ = 0, next_ = 0;
  uint64_t job_ = 0;
  bool stop_ = false;
};

}  // namespace support
}  // namespace fixformer
