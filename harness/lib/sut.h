#pragma once
// The system under test (SUT), in the MLPerf LoadGen style: the harness issues a query and the
// SUT reports back through callbacks; the harness owns the clock. The SUT never reads a clock:
// it calls ctx.token() at each output-token boundary and ctx.complete() at the end, and the
// harness timestamps those calls (first token -> TTFT, end -> latency, tokens -> TPOT).
//
// Threading: the harness runs W worker threads; worker w calls start_worker(w) once on its own
// thread (before the clock starts: build per-worker state such as an inference session), then
// issue(w, query, ctx) for each query it takes, then stop_worker(w).
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

// The harness's side of one query. Calls must come from the thread running issue().
class QueryContext {
 public:
  virtual ~QueryContext() = default;
  // The harness clock (ns since the run's start), for SUTs that need to wait on it.
  virtual int64_t now_ns() const = 0;
  // One output token exists now (the first call marks the time to first token).
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
  std::optional<int64_t> kv_cache_bytes;  // all workers
  std::string pinning = "none";
};

class SystemUnderTest {
 public:
  virtual ~SystemUnderTest() = default;
  virtual SutInfo info() const = 0;
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

// Test SUTs, chosen by a model spec:
//   sut:null                          completes at once (measures the harness's own overhead)
//   sut:sleep?ms=2[&token_ms=0.5][&stall_at=10&stall_ms=200]
//       sleeps `ms` (then emits gen_tokens tokens `token_ms` apart when token_ms > 0); the query
//       with index `stall_at` sleeps `stall_ms` instead, once.
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

}  // namespace cibench
