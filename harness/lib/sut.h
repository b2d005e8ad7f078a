#pragma once
// The system under test (SUT), in the MLPerf LoadGen style: the harness issues a query and the
// SUT reports back through callbacks; the harness owns the clock. The SUT never reads a clock:
// it calls ctx.token() at each output-token boundary and ctx.complete() at the end, and the
// harness timestamps those calls (first token -> TTFT, end -> latency, tokens -> TPOT).
//
// Two shapes of SUT:
//   SystemUnderTest (synchronous): the harness runs W worker threads; worker w calls
//     start_worker(w) once on its own thread (before the clock starts: build per-worker state such
//     as an inference session), then issue(w, query, ctx) for each query it takes (issue() returns
//     when the query is done), then stop_worker(w). The worker pool is the adapter that turns a
//     blocking issue() into a served load: a free worker takes the next query in arrival order.
//   AsyncSystemUnderTest (LoadGen's IssueQuery shape): the harness issues each query at its
//     arrival and issue_async() returns at once; the SUT serves from its own threads (e.g. one
//     engine thread batching every in-flight query, continuous batching) and reports started(),
//     token(), complete() or fail() for each query from those threads.
// In both, the harness timestamps every call on its clock; latency counts from the scheduled
// arrival, so a SUT that falls behind shows it as queueing delay (no coordinated omission).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cibench {

enum class Phase { prefill = 0, decode = 1 };
const char* phase_name(Phase p);

struct Query {
  int64_t index = 0;         // position in the schedule
  int64_t sample_index = 0;  // which sample of the workload
  int64_t scheduled_ns = 0;  // arrival time since the run's start (latency counts from here)
  int prompt_tokens = 0;
  int gen_tokens = 0;
};

// The harness's side of one query. Synchronous SUTs call it from the thread running issue().
// Asynchronous SUTs may call it from any thread, the calls for one query in sequence (one thread
// at a time, each call finished before the next starts); calls for different queries may run
// concurrently on different threads. complete() or fail() is the last call: the context may be
// reused for another query as soon as it returns.
class QueryContext {
 public:
  virtual ~QueryContext() = default;
  // The harness clock (ns since the run's start), for SUTs that need to wait on it.
  virtual int64_t now_ns() const = 0;
  // The SUT starts serving the query now (e.g. admitted into the running batch): the queue wait
  // ends here. Optional: without it the service starts when the query was issued (asynchronous)
  // or taken by a worker (synchronous).
  virtual void started() {}
  // One output token exists now (the first call marks the time to first token; every call is
  // timestamped: the gaps are the inter-token latencies).
  virtual void token() = 0;
  // The SUT enters a phase (counters are split by phase when profiling).
  virtual void phase(Phase p) = 0;
  // The query is done; every token has been reported.
  virtual void complete() = 0;
  // The query failed; the run stops and the variant is stored as failed with `why`.
  virtual void fail(const std::string& why) = 0;
};

// What the SUT can say about itself for the result row (unset = not applicable / unknown).
struct SutInfo {
  std::string description;
  std::optional<std::string> isa_used;
  std::optional<int64_t> weight_bytes;
  // The weights laid out again for the kernels while serving (AMX tiles, the decode layout),
  // resident beside weight_bytes; read after the run.
  std::optional<int64_t> repacked_weight_bytes;
  std::optional<int64_t> kv_cache_bytes;  // all workers
  std::string pinning = "none";
  // The conversion of a quantised source's weights (GGUF blocks) into the built formats: relative
  // RMS error against the stored values over all classes, and the JSON per class; nullopt with
  // the reason when there is none to report.
  std::optional<double> weight_conversion_rel_rms;
  std::optional<std::string> weight_conversion;
  std::string weight_conversion_reason = "the system under test reports no weight conversion";
};

class AsyncSystemUnderTest;

class SystemUnderTest {
 public:
  virtual ~SystemUnderTest() = default;
  virtual SutInfo info() const = 0;
  // Non-null when the SUT is asynchronous: the load generator then issues through it.
  virtual AsyncSystemUnderTest* as_async() { return nullptr; }
  virtual void start_worker(int /*worker*/) {}
  virtual void stop_worker(int /*worker*/) {}
  // Serves `q` on worker `worker`; must call ctx.complete() or ctx.fail() before returning
  // (throwing is treated as fail(what())).
  virtual void issue(int worker, const Query& q, QueryContext& ctx) = 0;
  // A harness-formed batch (LoadSettings::max_batch > 1): n queries taken together, each with its
  // own context; every one must be completed or failed. The default serves them one by one.
  virtual void issue_batch(int worker, const Query* qs, QueryContext* const* ctxs, int n) {
    for (int i = 0; i < n; ++i) issue(worker, qs[i], *ctxs[i]);
  }
};

// The harness clock as an asynchronous SUT sees it: ns since the run's start (0 before it starts).
class HarnessClock {
 public:
  virtual ~HarnessClock() = default;
  virtual int64_t now_ns() const = 0;
  // Sleeps until the harness clock reads at least t_ns (never returns early).
  virtual void sleep_until(int64_t t_ns) const = 0;
};

// An asynchronous SUT (LoadGen's IssueQuery / QuerySamplesComplete shape). The harness calls
// start() once before the clock starts (start the serving threads), issue_async() at each query's
// arrival from its issuing thread, then stop(). The SUT calls back on the query's context from its
// own threads (QueryContext above), so one engine thread can serve many in-flight queries.
class AsyncSystemUnderTest : public SystemUnderTest {
 public:
  AsyncSystemUnderTest* as_async() override { return this; }
  // `clock` stays valid until stop() returns.
  virtual void start(const HarnessClock& clock) = 0;
  // Takes the query and returns at once (never blocks on serving it). `ctx` is valid until the
  // SUT's complete() or fail() on it returns. Throwing fails the query.
  virtual void issue_async(const Query& q, QueryContext& ctx) = 0;
  // Stops serving. Queries issued and not yet completed are abandoned (the harness does not
  // record them: it stops early only when the run hit max_duration or failed). When stop()
  // returns, no SUT thread touches a context again.
  virtual void stop() = 0;
  // Synchronous use (outside the load generator): issue_async() and wait for the query.
  void issue(int worker, const Query& q, QueryContext& ctx) override;
};

// Test SUTs, chosen by a model spec:
//   sut:null                          completes at once (measures the harness's own overhead)
//   sut:sleep?ms=2[&token_ms=0.5][&stall_at=10&stall_ms=200]
//       sleeps `ms` (then emits gen_tokens tokens `token_ms` apart when token_ms > 0); the query
//       with index `stall_at` sleeps `stall_ms` instead, once.
//   sut:batch-sleep?step_ms=20[&max_batch=4]
//       asynchronous, continuous batching on one engine thread: each step lasts step_ms on the
//       harness clock and gives every query in the batch one token (the first step of a query is
//       its prefill and ends with its first token); a query completes with its gen_tokens-th token
//       and leaves the batch. Queries wait in arrival order; at each step's start the engine
//       admits those that have arrived (scheduled_ns <= the step's start) while the batch holds
//       fewer than max_batch. Steps run back to back on a grid anchored at the arrival that woke
//       an idle engine, so every token time is a function of the schedule alone.
// Throws Error on an unknown spec or parameter.
std::unique_ptr<SystemUnderTest> make_test_sut(const std::string& spec);

class NullSut : public SystemUnderTest {
 public:
  SutInfo info() const override;
  void issue(int worker, const Query& q, QueryContext& ctx) override;
};

struct SleepSutOptions {
  double ms = 1;
  double token_ms = 0;
  int64_t stall_at = -1;
  double stall_ms = 0;
};

class SleepSut : public SystemUnderTest {
 public:
  explicit SleepSut(const SleepSutOptions& o) : o_(o) {}
  SutInfo info() const override;
  void issue(int worker, const Query& q, QueryContext& ctx) override;

 private:
  SleepSutOptions o_;
};

struct BatchSleepSutOptions {
  double step_ms = 20;
  int max_batch = 4;
};

// sut:batch-sleep (above). Defined in sut_test.cpp.
class BatchSleepSut : public AsyncSystemUnderTest {
 public:
  explicit BatchSleepSut(const BatchSleepSutOptions& o);
  ~BatchSleepSut() override;
  SutInfo info() const override;
  void start(const HarnessClock& clock) override;
  void issue_async(const Query& q, QueryContext& ctx) override;
  void stop() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cibench
