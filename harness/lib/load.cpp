#include "harness/lib/load.h"

#include <time.h>

#include <algorithm>
#include <chrono>
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
  void reset(int expected_tokens = 0) {
    first_ns = -1;
    end_ns = -1;
    tokens = 0;
    failed = false;
    token_ns.clear();
    if (expected_tokens > 0) token_ns.reserve(static_cast<size_t>(expected_tokens));
  }
  int64_t now_ns() const override { return monotonic_ns() - t0_; }
  void token() override {
    const int64_t t = now_ns();
    if (tokens++ == 0) first_ns = t;
    token_ns.push_back(t);
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
  std::vector<int64_t> token_ns;  // every token's time

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
  ctx.reset(c.gen_tokens);
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
  sh.rec->add(r, ctx.token_ns.data(), static_cast<int64_t>(ctx.token_ns.size()));
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
    b.ctxs[k].reset(c.gen_tokens);
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
    sh.rec->add(r, ctx.token_ns.data(), static_cast<int64_t>(ctx.token_ns.size()));
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

// Arrival times of a server or stepped load: the scripted list, else drawn from the seed.
std::vector<int64_t> schedule_arrivals(const LoadSettings& s) {
  if (!s.arrivals_ns.empty()) {
    CIBENCH_CHECK(std::is_sorted(s.arrivals_ns.begin(), s.arrivals_ns.end()) && s.arrivals_ns.front() >= 0,
                  "scripted arrivals must be ascending and >= 0");
    return s.arrivals_ns;
  }
  return gamma_arrivals_ns(s.target_qps, s.burstiness, s.seed_arrivals, s.min_queries, s.min_duration_ns);
}

// ---- asynchronous SUTs ----------------------------------------------------------------------

// The harness clock handed to an asynchronous SUT: origin t0 (set when the clock starts; the
// warm-up runs on an earlier origin).
class Clock final : public HarnessClock {
 public:
  void start_at(int64_t abs_ns) { t0_.store(abs_ns, std::memory_order_release); }
  int64_t t0() const { return t0_.load(std::memory_order_acquire); }
  int64_t now_ns() const override { return monotonic_ns() - t0(); }
  void sleep_until(int64_t t_ns) const override { sleep_until_abs(t0() + t_ns); }

 private:
  std::atomic<int64_t> t0_{0};
};

struct AsyncShared;

// One query in the hands of an asynchronous SUT. The issuing thread fills it before
// issue_async(); the SUT's threads call it back; finish() hands it to the issuing thread under
// the mutex (which orders the SUT's writes before the harness reads them).
class AsyncCtx final : public QueryContext {
 public:
  explicit AsyncCtx(AsyncShared& sh) : sh_(sh) {}
  int64_t now_ns() const override;
  void started() override { start_ns = now_ns(); }
  void token() override {
    const int64_t t = now_ns();
    if (first_ns < 0) first_ns = t;
    token_ns.push_back(t);
  }
  void phase(Phase) override {}
  void complete() override { finish(false, ""); }
  void fail(const std::string& why) override { finish(true, why); }

  void reset(const Query& query, int client_id) {
    q = query;
    client = client_id;
    issue_ns = start_ns = first_ns = end_ns = -1;
    failed = false;
    error.clear();
    token_ns.clear();
    token_ns.reserve(static_cast<size_t>(std::max(0, query.gen_tokens)));
  }

  Query q;
  int client = 0;
  int64_t issue_ns = -1, start_ns = -1, first_ns = -1, end_ns = -1;
  bool failed = false;
  std::string error;
  std::vector<int64_t> token_ns;

 private:
  void finish(bool failed_, const std::string& why);
  AsyncShared& sh_;
};

struct AsyncShared {
  Clock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<AsyncCtx*> done;  // completed or failed, not yet recorded (guarded by mu)
};

int64_t AsyncCtx::now_ns() const { return sh_.clock.now_ns(); }

void AsyncCtx::finish(bool failed_, const std::string& why) {
  end_ns = now_ns();
  failed = failed_;
  error = why;
  std::lock_guard<std::mutex> lk(sh_.mu);
  sh_.done.push_back(this);
  sh_.cv.notify_all();
}

std::chrono::steady_clock::time_point steady_at(int64_t abs_ns) {
  // steady_clock is CLOCK_MONOTONIC on Linux, the harness clock's source.
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(abs_ns));
}

LoadResult run_load_async(AsyncSystemUnderTest& sut, const LoadSettings& s) {
  CIBENCH_CHECK(s.min_queries >= 1, "min_queries must be >= 1");
  CIBENCH_CHECK(!s.observer, "counters count the harness's worker threads; an asynchronous SUT serves from its own threads");
  CIBENCH_CHECK(s.max_batch == 1, "harness-formed batches (max_batch ", s.max_batch,
                ") are the worker pool's; an asynchronous SUT forms its own batches");
  AsyncShared sh;
  LoadResult out;
  out.async = true;
  std::vector<int64_t> arrivals;
  int64_t n_scheduled = 0;
  const bool dynamic = s.pattern == Pattern::single_stream || s.pattern == Pattern::closed_loop;
  std::deque<std::pair<int, int64_t>> ready;  // closed loop: (client, ready time)
  int active_clients = 0;
  switch (s.pattern) {
    case Pattern::server:
    case Pattern::stepped:
      arrivals = schedule_arrivals(s);
      n_scheduled = static_cast<int64_t>(arrivals.size());
      out.offered_qps = s.target_qps;
      break;
    case Pattern::offline:
      n_scheduled = s.min_queries;
      break;
    case Pattern::single_stream:
    case Pattern::closed_loop: {
      const int clients = s.pattern == Pattern::single_stream ? 1 : std::max(1, s.clients);
      for (int c = 0; c < clients; ++c) ready.emplace_back(c, 0);
      active_clients = clients;
      break;
    }
  }
  out.schedule_bytes = static_cast<int64_t>(arrivals.capacity() * sizeof(int64_t));
  const int64_t expected = dynamic ? std::max<int64_t>(s.min_queries, 1) : n_scheduled;
  out.recorder = std::make_unique<Recorder>(1, s.exact_cap, dynamic ? s.exact_cap : expected);
  Recorder& rec = *out.recorder;

  std::vector<std::unique_ptr<AsyncCtx>> pool;  // every context made; recycled through `free_ctx`
  std::vector<AsyncCtx*> free_ctx;
  auto take_ctx = [&]() -> AsyncCtx* {
    if (free_ctx.empty()) {
      pool.push_back(std::make_unique<AsyncCtx>(sh));
      return pool.back().get();
    }
    AsyncCtx* c = free_ctx.back();
    free_ctx.pop_back();
    return c;
  };

  sh.clock.start_at(monotonic_ns());  // the warm-up's origin
  try {
    sut.start(sh.clock);
  } catch (const std::exception& e) {
    out.error = str("SUT start: ", e.what());
    return out;
  }
  bool stopped = false;
  auto stop_sut = [&] {
    if (stopped) return;
    stopped = true;
    try {
      sut.stop();
    } catch (const std::exception& e) {
      if (out.error.empty()) out.error = str("SUT stop: ", e.what());
    }
  };
  // Warm-up before the clock, one query at a time, not recorded.
  for (int64_t k = 0; k < s.warmup_queries && out.error.empty(); ++k) {
    const QueryChoice c = choice_of(s, (int64_t{1} << 40) + k);
    AsyncCtx* ctx = take_ctx();
    ctx->reset(Query{-1 - k, c.sample_index, sh.clock.now_ns(), c.prompt_tokens, c.gen_tokens}, 0);
    try {
      sut.issue_async(ctx->q, *ctx);
    } catch (const std::exception& e) {
      out.error = str("warm-up query failed: ", e.what());
      break;
    }
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.cv.wait(lk, [&] { return !sh.done.empty(); });
    sh.done.clear();
    if (ctx->failed) out.error = "warm-up query failed: " + ctx->error;
    free_ctx.push_back(ctx);
  }
  if (!out.error.empty()) {
    stop_sut();
    return out;
  }

  int64_t next = 0;         // server/offline: the next query to issue
  int64_t issued = 0;
  int64_t outstanding = 0;  // issued, not completed
  bool stop_issuing = false;
  int64_t last_end = 0;
  std::vector<AsyncCtx*> batch;
  // Records what the SUT completed (the issuing thread only: the recorder has one slot).
  auto record = [&](std::vector<AsyncCtx*>& ctxs) {
    for (AsyncCtx* c : ctxs) {
      RequestRecord r;
      r.index = c->q.index;
      r.sample_index = c->q.sample_index;
      r.scheduled_ns = c->q.scheduled_ns;
      r.start_ns = c->start_ns >= 0 ? c->start_ns : c->issue_ns;
      r.first_token_ns = c->first_ns;
      r.end_ns = c->end_ns;
      r.prompt_tokens = c->q.prompt_tokens;
      r.output_tokens = static_cast<int32_t>(c->token_ns.size());
      r.worker = 0;
      r.ok = !c->failed;
      rec.add(r, c->token_ns.data(), static_cast<int64_t>(c->token_ns.size()));
      last_end = std::max(last_end, r.end_ns);
      --outstanding;
      if (c->failed) {
        if (out.error.empty()) out.error = str("query ", r.index, ": ", c->error);
        stop_issuing = true;
      }
      if (dynamic) ready.emplace_back(c->client, c->end_ns);
      free_ctx.push_back(c);
    }
    ctxs.clear();
  };
  auto issue = [&](int64_t i, int64_t sched, int client) {
    const QueryChoice c = choice_of(s, i);
    AsyncCtx* ctx = take_ctx();
    ctx->reset(Query{i, c.sample_index, sched, c.prompt_tokens, c.gen_tokens}, client);
    ctx->issue_ns = sh.clock.now_ns();
    ++outstanding;
    ++issued;
    try {
      sut.issue_async(ctx->q, *ctx);
    } catch (const std::exception& e) {
      ctx->fail(e.what());
    }
  };

  const int64_t max_ns = s.max_duration_ns;
  int64_t next_progress = 100'000'000;
  {
    std::lock_guard<std::mutex> lk(sh.mu);
    sh.clock.start_at(monotonic_ns());  // the clock starts here
  }
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(sh.mu);
      batch.swap(sh.done);
    }
    record(batch);
    const int64_t now = sh.clock.now_ns();
    if (s.progress && now >= next_progress) {
      s.progress(static_cast<double>(now) * 1e-9, rec.count(), dynamic ? std::max(expected, issued) : expected);
      next_progress = now + 100'000'000;
    }
    int64_t wake = -1;  // harness time to wait until (besides a completion); -1: only a completion
    if (dynamic) {
      while (!stop_issuing && !ready.empty()) {
        auto [client, ready_ns] = ready.front();
        ready.pop_front();
        const bool enough = now >= s.min_duration_ns && issued >= s.min_queries;
        if (enough || now >= max_ns) {
          if (!enough) out.hit_max_duration = true;
          --active_clients;
          continue;
        }
        issue(issued, ready_ns, client);
      }
      if (stop_issuing) active_clients = 0;
      if (active_clients == 0 && outstanding == 0) break;
    } else {
      while (!stop_issuing && next < n_scheduled) {
        const int64_t sched = arrivals.empty() ? 0 : arrivals[static_cast<size_t>(next)];
        if (sched > sh.clock.now_ns()) {
          wake = sched;
          break;
        }
        issue(next, sched, 0);
        ++next;
      }
      if ((stop_issuing || next >= n_scheduled) && outstanding == 0) break;
    }
    if (now >= max_ns) {
      out.hit_max_duration = true;
      break;
    }
    wake = wake < 0 ? max_ns : std::min(wake, max_ns);
    if (s.progress) wake = std::min(wake, next_progress);
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.cv.wait_until(lk, steady_at(sh.clock.t0() + wake), [&] { return !sh.done.empty(); });
  }
  stop_sut();
  {
    std::lock_guard<std::mutex> lk(sh.mu);
    batch.swap(sh.done);
  }
  record(batch);  // completed before the SUT stopped; the rest are abandoned
  out.duration_s = static_cast<double>(last_end) * 1e-9;
  out.issued = rec.count();
  out.scheduled = dynamic ? issued : n_scheduled;
  out.batches = rec.count();
  return out;
}

}  // namespace

LoadResult run_load(SystemUnderTest& sut, const LoadSettings& s) {
  if (AsyncSystemUnderTest* a = sut.as_async()) return run_load_async(*a, s);
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
      sh.arrivals = schedule_arrivals(s);
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
