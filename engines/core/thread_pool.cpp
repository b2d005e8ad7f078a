#include "engines/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

#include "engines/core/error.h"

namespace cibench {
namespace {
void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % CPU_SETSIZE, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}
// Spin briefly, then sleep on a condition variable. Decode issues its parallel calls a few
// microseconds apart and a futex wake costs ~5-50 us, so a waiter spins first (TinyStories-110M
// int4_g32_a8 on 2 threads, Zen 4, before shares were claimed: 5 us of spinning halved decode
// tokens/s, 20 us cost prefill ~10 %); but never by yielding in a loop, and not on a machine with
// more runnable threads than cores, where the thread it waits for may need this very core: there a
// spinner finds itself descheduled between two looks at the clock, gives up at once, and the pool
// spins no more for a while (kContended). A 2-thread Stories260K test beside another such process
// took 18 s with 20000 pause iterations then sched_yield (0.03 s alone); 0.06 s now.
constexpr std::chrono::nanoseconds kSpin{200000}, kPreempted{500000}, kContended{std::chrono::milliseconds(50)};
using Clock = std::chrono::steady_clock;

// Spins while pred() holds, for at most kSpin (none until `quiet_until`); returns whether pred()
// still holds. Sets quiet_until when the spinner was descheduled.
template <typename P>
bool spin_while(P&& pred, std::atomic<int64_t>& quiet_until) {
  auto last = Clock::now();
  if (last.time_since_epoch().count() < quiet_until.load(std::memory_order_relaxed)) return pred();
  const auto until = last + kSpin;
  for (int i = 1;; ++i) {
    if (!pred()) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0) {
      const auto now = Clock::now();
      if (now - last > kPreempted) {
        quiet_until.store((now + kContended).time_since_epoch().count(), std::memory_order_relaxed);
        return pred();
      }
      if (now >= until) return pred();
      last = now;
    }
  }
}
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
  uint64_t g;
  {
    std::lock_guard<std::mutex> lk(mu_);
    fn_ = fn;
    ctx_ = ctx;
    finished_.store(0, std::memory_order_relaxed);
    g = generation_.load(std::memory_order_relaxed) + 1;
    shares_.store((g & 0xffffffffu) << 32, std::memory_order_release);
    generation_.store(g, std::memory_order_release);
  }
  cv_start_.notify_all();
  run_shares(g, fn, ctx);
  // The stragglers: spin, then sleep until the last share's thread wakes us.
  if (spin_while([&] { return finished_.load(std::memory_order_acquire) != n_threads_; }, quiet_until_)) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_done_.wait(lk, [&] { return finished_.load(std::memory_order_acquire) == n_threads_; });
  }
}

// Claims the shares of generation g one at a time (the generation in the high half of shares_,
// the next share in the low half) and runs them, until none is left or a newer call took over.
void ThreadPool::run_shares(uint64_t g, Fn fn, void* ctx) {
  const uint64_t gen = g & 0xffffffffu;
  uint64_t v = shares_.load(std::memory_order_acquire);
  for (;;) {
    if ((v >> 32) != gen || static_cast<int>(v & 0xffffffffu) >= n_threads_) return;
    if (!shares_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    fn(ctx, static_cast<int>(v & 0xffffffffu), n_threads_);
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads_) {
      // The last share. Taking the lock orders this after the caller's check of finished_ under
      // it: the caller either sees every share done or is already waiting when the notice comes.
      { std::lock_guard<std::mutex> lk(mu_); }
      cv_done_.notify_one();
    }
    v = shares_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker(int index) {
  if (pin_) pin_to_cpu(index);
  uint64_t seen = 0;
  for (;;) {
    spin_while([&] { return generation_.load(std::memory_order_acquire) == seen; }, quiet_until_);
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
    run_shares(seen, fn, ctx);
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
