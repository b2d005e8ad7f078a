#include "engines/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "engines/core/error.h"

namespace cibench {
namespace {
void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % CPU_SETSIZE, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}
// Spin briefly before sleeping: decode steps are ~100 us apart, a futex wake costs ~5-50 us.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads, bool pin) : n_threads_(n_threads), pin_(pin) {
  CIBENCH_CHECK(n_threads >= 1 && n_threads <= 1024, "thread count must be in 1..1024, got ",
                n_threads);
  if (pin_) pin_to_cpu(0);
  threads_.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(Fn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    fn_ = fn;
    ctx_ = ctx;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  fn(ctx, 0, n_threads_);
  // Spin for the stragglers, then yield: on an oversubscribed machine a worker may be waiting
  // for this very core.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker(int index) {
  if (pin_) pin_to_cpu(index);
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      g = generation_.load(std::memory_order_acquire);
    }
    Fn fn;
    void* ctx;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_acquire);
      fn = fn_;
      ctx = ctx_;
    }
    fn(ctx, index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::split(int64_t n, int i, int parts, int64_t* begin, int64_t* end, int64_t align) {
  int64_t chunks = (n + align - 1) / align;
  int64_t per = chunks / parts, extra = chunks % parts;
  int64_t c0 = i * per + std::min<int64_t>(i, extra);
  int64_t c1 = c0 + per + (i < extra ? 1 : 0);
  *begin = std::min(n, c0 * align);
  *end = std::min(n, c1 * align);
}

}  // namespace cibench
