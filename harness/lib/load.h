#pragma once
// Load generation: runs a schedule against a SUT on W worker threads and records every request.
//
// The harness owns the clock. Arrival times are data computed before the clock starts
// (server: Poisson, or Gamma gaps with a burstiness, from the arrivals seed; a scripted list;
// offline: everything at 0); closed-loop and
// single-stream arrivals are the completion times of each client's previous query. A free
// worker takes the next query in arrival order (FIFO) and waits until its arrival time if it is
// early. Latency counts from the scheduled arrival, so a slow or stalled SUT shows its queueing
// delay in the requests behind it (no coordinated omission).
//
// Batching (max_batch > 1; server, stepped and offline loads): requests queue in arrival order; a
// free worker takes the first waiting request, then keeps taking requests as they arrive until it
// holds max_batch or max_wait has passed since it took the first, and serves them as one batch
// (SystemUnderTest::issue_batch). Each request's latency still counts from its own arrival; its
// queue time includes the wait for the batch to fill.
//
// Asynchronous SUTs (AsyncSystemUnderTest): no worker pool. The calling thread issues each query
// at its arrival (issue_async returns at once) and records the queries the SUT completes from
// its own threads; closed-loop clients issue their next query when the SUT completes the previous
// one. Queue wait ends when the SUT calls started() (else at the issue). At max_duration the SUT
// is stopped and the queries it had not completed are not recorded.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/lib/metrics.h"
#include "harness/lib/scenario.h"
#include "harness/lib/schedule.h"
#include "harness/lib/sut.h"
#include "harness/lib/traffic.h"

namespace cibench {

// Hooks for per-worker-thread measurement (counters). All calls for worker w come from w's thread.
class WorkerObserver {
 public:
  virtual ~WorkerObserver() = default;
  virtual void attach(int worker) = 0;   // before the SUT's start_worker (so its threads inherit)
  virtual void begin(int worker) = 0;    // the measured part starts
  virtual void phase(int worker, Phase p) = 0;
  virtual void end(int worker) = 0;      // the measured part ends
  virtual void detach(int worker) = 0;
  virtual bool wants_phases() const { return false; }
};

struct LoadSettings {
  Pattern pattern = Pattern::single_stream;  // stepped: call run_load once per rate as server
  double target_qps = 0;                     // server
  double burstiness = 1;                     // server: Gamma gaps of this shape (1: Poisson)
  // server: scripted arrival times (ns since the start, ascending), used instead of drawn ones.
  std::vector<int64_t> arrivals_ns;
  int clients = 1;                           // closed_loop (single_stream forces 1)
  int workers = 1;
  int64_t warmup_queries = 0;                // per worker, before the clock, not recorded
  int64_t min_duration_ns = 0;
  int64_t max_duration_ns = 60'000'000'000;
  int64_t min_queries = 1;
  int64_t exact_cap = 262144;
  uint64_t seed_arrivals = 1;
  ChoiceSeeds choice;
  int64_t n_samples = 1;
  LengthDist prompt;
  LengthDist gen;
  WorkerObserver* observer = nullptr;
  int max_batch = 1;                         // > 1: harness-formed batches (see above)
  int64_t max_wait_ns = 0;                   // longest wait for a batch to fill
  const Traffic* traffic = nullptr;          // which sample query i uses; null: uniform (choose_query)
  // Called from the calling thread about every 100 ms while the run is going.
  std::function<void(double elapsed_s, int64_t completed, int64_t expected)> progress;
};

struct LoadResult {
  std::unique_ptr<Recorder> recorder;
  int64_t scheduled = 0;        // queries in the schedule (closed loop: issued)
  int64_t issued = 0;
  double duration_s = 0;        // from the clock start to the last completion
  double offered_qps = 0;       // server: the target; others: 0 (not offered, driven by completions)
  bool hit_max_duration = false;
  std::string error;            // first SUT failure, if any
  int64_t schedule_bytes = 0;   // memory held by the precomputed arrivals
  int64_t batches = 0;          // SUT calls that served the timed queries (== issued without batching)
  bool async = false;           // served by an AsyncSystemUnderTest
};

// Runs the load; never throws for SUT failures (they are in `error`), throws Error on bad settings
// (and for an asynchronous SUT: an observer, or max_batch > 1, which are the worker pool's).
LoadResult run_load(SystemUnderTest& sut, const LoadSettings& s);

// The harness clock: CLOCK_MONOTONIC in ns.
int64_t monotonic_ns();

}  // namespace cibench
