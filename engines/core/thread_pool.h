#pragma once
// A persistent pool of N threads (the caller among them). run() runs the same function for every
// share index i in [0, N), each exactly once; work is partitioned statically by the caller (see
// split()). Shares are claimed, not assigned: whichever thread is free takes the next one, the
// caller included, so a worker that the OS has not scheduled yet (more runnable threads than
// cores) delays nobody: the others run its share. Two shares never run at once under one index,
// so per-index scratch is safe; a share may run on any of the pool's threads. No allocation per
// call; optional pinning of thread i to CPU i.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace cibench {

class ThreadPool {
 public:
  using Fn = void (*)(void* ctx, int thread_index, int n_threads);

  explicit ThreadPool(int n_threads, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  bool pinned() const { return pin_; }

  // Runs fn(ctx, i, n) for every share i in [0, n) and returns when all are done.
  void run(Fn fn, void* ctx);

  // Convenience for lambdas: f(int thread_index, int n_threads). The lambda is passed by
  // pointer, never copied or allocated.
  template <typename F>
  void run(F&& f) {
    using Fd = std::remove_reference_t<F>;
    run([](void* c, int i, int n) { (*static_cast<Fd*>(c))(i, n); },
        const_cast<void*>(static_cast<const void*>(&f)));
  }

  // Rows [begin, end) of `n` for thread i of `parts`, in chunks aligned to `align` rows.
  static void split(int64_t n, int i, int parts, int64_t* begin, int64_t* end, int64_t align = 1);

 private:
  void worker(int index);
  void run_shares(uint64_t generation, Fn fn, void* ctx);

  int n_threads_;
  bool pin_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;  // the caller, asleep until the last worker finishes
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> shares_{0};  // generation (low 32 bits) << 32 | next unclaimed share
  std::atomic<int> finished_{0};     // shares of the current call finished
  std::atomic<int64_t> quiet_until_{0};  // steady_clock ticks: no spinning before (oversubscribed)
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
  bool stop_ = false;
};

}  // namespace cibench
