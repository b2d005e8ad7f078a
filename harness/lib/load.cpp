#include "harness/lib/load.h"

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engines/core/error.h"

namespace cibench {

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

void sleep_until_abs(int64_t abs_ns) {
  timespec ts;
  ts.tv_sec = abs_ns / 1'000'000'000;
  ts.tv_nsec = abs_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// The harness's callbacks for one query on one worker.
class Ctx final : public QueryContext {
 public:
  Ctx(int64_t t0, int worker, WorkerObserver* obs) : t0_(t0), worker_(worker), obs_(obs) {}
  void reset() {
    first_ns = -1;
    end_ns = -1;
    tokens = 0;
    failed = false;
  }
  int64_t now_ns() const override { return monotonic_ns() - t0_; }
  void token() override {
    if (tokens++ == 0) first_ns = now_ns();
  }
  void phase(Phase p) override {
    if (obs_ && obs_->wants_phases()) obs_->phase(worker_, p);
  }
  void complete() override { end_ns = now_ns(); }
  void fail(const std::string& why) override {
    end_ns = now_ns();
    failed = true;
    error = why;
  }

  int64_t first_ns = -1, end_ns = -1;
  int32_t tokens = 0;
  bool failed = false;
  std::string error;

 private:
  int64_t t0_;
  int worker_;
  WorkerObserver* obs_;
};

struct Shared {
  const LoadSettings* s = nullptr;
  SystemUnderTest* sut = nullptr;
  Recorder* rec = nullptr;
  std::vector<int64_t> arrivals;  // server (empty for offline: all at 0)
  int64_t n_scheduled = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> completed{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> hit_max{false};
  std::atomic<int64_t> last_end_ns{0};
  std::atomic<int64_t> batches{0};
  int64_t t0 = 0;

  // Start barrier: workers ready (after start_worker + warm-up), then the clock starts.
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  std::string error;

  // Closed loop.
  std::deque<std::pair<int, int64_t>> ready_clients;  // (client, ready time ns since t0)
  int active_clients = 0;
  std::atomic<int64_t> issued{0};

  void record_error(const std::string& e) {
    std::lock_guard<std::mutex> lk(mu);
    if (error.empty()) error = e;
    stop = true;
    cv.notify_all();
  }
};

QueryChoice choice_of(const LoadSettings& s, int64_t i) {
  QueryChoice c = choose_query(i, s.choice, s.n_samples, s.prompt, s.gen);
  if (s.traffic) c.sample_index = s.traffic->sample(i);
  return c;
}

void note_end(Shared& sh, int64_t end_ns) {
  int64_t prev = sh.last_end_ns.load(std::memory_order_relaxed);
  while (prev < end_ns && !sh.last_end_ns.compare_exchange_weak(prev, end_ns)) {
  }
}

// Serves query i (arrival `sched` ns since t0) on worker w. Returns false on failure.
bool serve(Shared& sh, int w, Ctx& ctx, int64_t i, int64_t sched) {
  const LoadSettings& s = *sh.s;
  const QueryChoice c = choice_of(s, i);
  Query q{i, c.sample_index, sched, c.prompt_tokens, c.gen_tokens};
  RequestRecord r;
  r.index = i;
  r.sample_index = c.sample_index;
  r.scheduled_ns = sched;
  r.prompt_tokens = c.prompt_tokens;
  r.worker = w;
  ctx.reset();
  r.start_ns = ctx.now_ns();
  try {
    sh.sut->issue(w, q, ctx);
    if (ctx.end_ns < 0) ctx.fail("the SUT returned without calling complete()");
  } catch (const std::exception& e) {
    ctx.fail(e.what());
  }
  r.end_ns = ctx.end_ns;
  r.first_token_ns = ctx.first_ns;
  r.output_tokens = ctx.tokens;
  r.ok = !ctx.failed;
  sh.rec->add(r);
  sh.completed.fetch_add(1, std::memory_order_relaxed);
  sh.batches.fetch_add(1, std::memory_order_relaxed);
  note_end(sh, r.end_ns);
  if (ctx.failed) sh.record_error(str("query ", i, ": ", ctx.error));
  return !ctx.failed;
}

// Per-worker state of the batching loop (allocated once).
struct BatchState {
  std::vector<Ctx> ctxs;
  std::vector<QueryContext*> ptrs;
  std::vector<Query> queries;
  std::vector<int64_t> index, sched;
};

// Serves the queries in b.index/b.sched as one batch on worker w. Returns false on failure.
bool serve_batch(Shared& sh, int w, BatchState& b) {
  const LoadSettings& s = *sh.s;
  const size_t n = b.index.size();
  b.queries.resize(n);
  b.ptrs.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const QueryChoice c = choice_of(s, b.index[k]);
    b.queries[k] = Query{b.index[k], c.sample_index, b.sched[k], c.prompt_tokens, c.gen_tokens};
    b.ctxs[k].reset();
    b.ptrs[k] = &b.ctxs[k];
  }
  const int64_t start = b.ctxs[0].now_ns();
  try {
    sh.sut->issue_batch(w, b.queries.data(), b.ptrs.data(), static_cast<int>(n));
  } catch (const std::exception& e) {
    for (size_t k = 0; k < n; ++k)
      if (b.ctxs[k].end_ns < 0) b.ctxs[k].fail(e.what());
  }
  bool ok = true;
  for (size_t k = 0; k < n; ++k) {
    Ctx& ctx = b.ctxs[k];
    if (ctx.end_ns < 0) ctx.fail("the SUT returned without completing the query");
    RequestRecord r;
    r.index = b.index[k];
    r.sample_index = b.queries[k].sample_index;
    r.scheduled_ns = b.sched[k];
    r.prompt_tokens = b.queries[k].prompt_tokens;
    r.worker = w;
    r.start_ns = start;
    r.end_ns = ctx.end_ns;
    r.first_token_ns = ctx.first_ns;
    r.output_tokens = ctx.tokens;
    r.ok = !ctx.failed;
    sh.rec->add(r);
    sh.completed.fetch_add(1, std::memory_order_relaxed);
    note_end(sh, r.end_ns);
    if (ctx.failed && ok) {
      sh.record_error(str("query ", r.index, ": ", ctx.error));
      ok = false;
    }
  }
  sh.batches.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

void worker_main(Shared& sh, int w) {
  const LoadSettings& s = *sh.s;
  WorkerObserver* obs = s.observer;
  bool started = false;
  try {
    if (obs) obs->attach(w);
    sh.sut->start_worker(w);
    started = true;
    // Warm-up before the clock: query indices far from the timed ones, not recorded.
    Ctx warm(monotonic_ns(), w, nullptr);
    for (int64_t k = 0; k < s.warmup_queries; ++k) {
      const QueryChoice c = choice_of(s, (int64_t{1} << 40) + w * 1000003 + k);
      Query q{-1 - k, c.sample_index, 0, c.prompt_tokens, c.gen_tokens};
      warm.reset();
      sh.sut->issue(w, q, warm);
      if (warm.failed) throw Error("warm-up query failed: " + warm.error);
    }
  } catch (const std::exception& e) {
    sh.record_error(str("worker ", w, " setup: ", e.what()));
  }
  {
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.ready++;
    sh.cv.notify_all();
    sh.cv.wait(lk, [&] { return sh.go; });
  }
  Ctx ctx(sh.t0, w, obs);
  if (obs && !sh.stop) obs->begin(w);
  const int64_t max_ns = s.max_duration_ns;
  if (!sh.stop) {
    if (s.max_batch > 1) {  // server, stepped or offline (checked in run_load)
      BatchState b;
      b.ctxs.reserve(static_cast<size_t>(s.max_batch));
      for (int k = 0; k < s.max_batch; ++k) b.ctxs.emplace_back(sh.t0, w, obs);
      auto arrival = [&](int64_t j) { return sh.arrivals.empty() ? int64_t{0} : sh.arrivals[static_cast<size_t>(j)]; };
      for (;;) {
        if (sh.stop.load(std::memory_order_relaxed)) break;
        const int64_t i = sh.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= sh.n_scheduled) break;
        const int64_t sched = arrival(i);
        if (ctx.now_ns() < sched) sleep_until_abs(sh.t0 + sched);
        if (ctx.now_ns() >= max_ns) {
          sh.hit_max = true;
          sh.stop = true;
          break;
        }
        b.index.assign(1, i);
        b.sched.assign(1, sched);
        // Take requests as they arrive until the batch is full or max_wait has passed.
        const int64_t deadline = ctx.now_ns() + s.max_wait_ns;
        while (static_cast<int>(b.index.size()) < s.max_batch) {
          int64_t j = sh.next.load(std::memory_order_relaxed);
          if (j >= sh.n_scheduled) break;
          const int64_t aj = arrival(j), now = ctx.now_ns();
          if (aj <= now) {
            if (sh.next.compare_exchange_weak(j, j + 1, std::memory_order_relaxed)) {
              b.index.push_back(j);
              b.sched.push_back(aj);
            }
            continue;
          }
          if (now >= deadline) break;
          sleep_until_abs(sh.t0 + std::min(aj, deadline));
        }
        if (!serve_batch(sh, w, b)) break;
      }
    } else if (s.pattern == Pattern::server || s.pattern == Pattern::offline || s.pattern == Pattern::stepped) {
      for (;;) {
        if (sh.stop.load(std::memory_order_relaxed)) break;
        const int64_t i = sh.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= sh.n_scheduled) break;
        const int64_t sched = sh.arrivals.empty() ? 0 : sh.arrivals[static_cast<size_t>(i)];
        if (ctx.now_ns() < sched) sleep_until_abs(sh.t0 + sched);
        if (ctx.now_ns() >= max_ns) {
          sh.hit_max = true;
          sh.stop = true;
          break;
        }
        if (!serve(sh, w, ctx, i, sched)) break;
      }
    } else {  // closed loop / single stream
      for (;;) {
        std::unique_lock<std::mutex> lk(sh.mu);
        sh.cv.wait(lk, [&] { return !sh.ready_clients.empty() || sh.active_clients == 0 || sh.stop; });
        if (sh.stop || sh.ready_clients.empty()) break;
        auto [client, ready_ns] = sh.ready_clients.front();
        sh.ready_clients.pop_front();
        const int64_t now = ctx.now_ns();
        const bool enough = now >= s.min_duration_ns && sh.issued >= s.min_queries;
        if (enough || now >= max_ns) {
          if (!enough) sh.hit_max = true;
          sh.active_clients--;
          sh.cv.notify_all();
          continue;
        }
        const int64_t i = sh.issued++;
        lk.unlock();
        const bool ok = serve(sh, w, ctx, i, ready_ns);
        lk.lock();
        if (!ok) break;
        sh.ready_clients.emplace_back(client, ctx.end_ns);
        sh.cv.notify_one();
      }
    }
  }
  if (obs) obs->end(w);
  try {
    if (started) sh.sut->stop_worker(w);
    if (obs) obs->detach(w);
  } catch (const std::exception& e) {
    sh.record_error(str("worker ", w, " stop: ", e.what()));
  }
}

}  // namespace

LoadResult run_load(SystemUnderTest& sut, const LoadSettings& s) {
  CIBENCH_CHECK(s.workers >= 1, "workers must be >= 1, got ", s.workers);
  CIBENCH_CHECK(s.min_queries >= 1, "min_queries must be >= 1");
  CIBENCH_CHECK(s.max_batch >= 1, "max_batch must be >= 1, got ", s.max_batch);
  CIBENCH_CHECK(s.max_batch == 1 || s.pattern == Pattern::server || s.pattern == Pattern::stepped ||
                    s.pattern == Pattern::offline,
                "harness-formed batches (max_batch ", s.max_batch, ") need a server, stepped or offline load, not ",
                pattern_name(s.pattern));
  CIBENCH_CHECK(s.max_wait_ns >= 0, "max_wait must be >= 0");
  Shared sh;
  sh.s = &s;
  sh.sut = &sut;
  LoadResult out;
  int64_t expected = 0;
  switch (s.pattern) {
    case Pattern::server:
    case Pattern::stepped:
      sh.arrivals = poisson_arrivals_ns(s.target_qps, s.seed_arrivals, s.min_queries, s.min_duration_ns);
      sh.n_scheduled = static_cast<int64_t>(sh.arrivals.size());
      expected = sh.n_scheduled;
      out.offered_qps = s.target_qps;
      break;
    case Pattern::offline:
      sh.n_scheduled = s.min_queries;
      expected = sh.n_scheduled;
      break;
    case Pattern::single_stream:
    case Pattern::closed_loop: {
      const int clients = s.pattern == Pattern::single_stream ? 1 : std::max(1, s.clients);
      for (int c = 0; c < clients; ++c) sh.ready_clients.emplace_back(c, 0);
      sh.active_clients = clients;
      expected = std::max<int64_t>(s.min_queries, 1);
      break;
    }
  }
  out.schedule_bytes = static_cast<int64_t>(sh.arrivals.capacity() * sizeof(int64_t));
  const bool dynamic = s.pattern == Pattern::single_stream || s.pattern == Pattern::closed_loop;
  out.recorder = std::make_unique<Recorder>(s.workers, s.exact_cap, dynamic ? s.exact_cap : expected);
  sh.rec = out.recorder.get();

  std::vector<std::thread> threads;
  for (int w = 0; w < s.workers; ++w) threads.emplace_back(worker_main, std::ref(sh), w);
  {
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.cv.wait(lk, [&] { return sh.ready == s.workers; });
    sh.t0 = monotonic_ns();  // the clock starts here
    sh.go = true;
    sh.cv.notify_all();
  }
  if (s.progress) {
    std::atomic<bool> done{false};
    std::thread joiner([&] {
      for (auto& t : threads) t.join();
      done = true;
    });
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      s.progress(static_cast<double>(monotonic_ns() - sh.t0) * 1e-9, sh.completed.load(),
                 dynamic ? std::max<int64_t>(expected, sh.issued.load()) : expected);
    }
    joiner.join();
  } else {
    for (auto& t : threads) t.join();
  }
  out.duration_s = static_cast<double>(sh.last_end_ns.load()) * 1e-9;
  out.issued = out.recorder->count();
  out.scheduled = dynamic ? sh.issued.load() : sh.n_scheduled;
  out.hit_max_duration = sh.hit_max;
  out.error = sh.error;
  out.batches = sh.batches.load();
  return out;
}

}  // namespace cibench
