#pragma once
// A persistent pool of N threads (the caller is thread 0). run() hands every thread the same
// function with its index; work is partitioned statically by the caller (see split()).
// No allocation per call; optional pinning of thread i to CPU i.
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

  // Runs fn(ctx, i, n) on every thread i in [0, n) and returns when all are done.
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

  int n_threads_;
  bool pin_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
  bool stop_ = false;
};

}  // namespace cibench
