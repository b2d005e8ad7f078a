// Load generation: latency counts from the scheduled arrival, so a stall shows up as queueing
// delay in the requests behind it (no coordinated omission); patterns issue what they promise.
#include <gtest/gtest.h>

#include <algorithm>

#include "engines/core/error.h"
#include "harness/lib/load.h"

namespace cibench {
namespace {

LoadSettings base() {
  LoadSettings s;
  s.prompt.value = s.prompt.min = s.prompt.max = 4;
  s.gen.value = s.gen.min = s.gen.max = 2;
  s.n_samples = 10;
  return s;
}

TEST(HarnessLoad, StallShowsAsQueueingDelayInLaterRequests) {
  // One worker, Poisson at 200/s (5 ms mean gap), 1 ms service; query 10 stalls 200 ms.
  SleepSut sut({/*ms=*/1, /*token_ms=*/0, /*stall_at=*/10, /*stall_ms=*/200});
  LoadSettings s = base();
  s.pattern = Pattern::server;
  s.target_qps = 200;
  s.min_queries = 80;
  s.seed_arrivals = 5;
  const LoadResult r = run_load(sut, s);
  ASSERT_TRUE(r.error.empty()) << r.error;
  auto recs = r.recorder->records();
  ASSERT_EQ(recs.size(), 80u);
  std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.index < b.index; });
  const RequestRecord& stalled = recs[10];
  EXPECT_GE(stalled.service_ns(), 200'000'000);
  // Every query that arrived while the stall was being served waited for it: its latency,
  // measured from its own scheduled arrival, includes the rest of the stall.
  int behind = 0;
  for (size_t j = 11; j < recs.size(); ++j) {
    const RequestRecord& q = recs[j];
    if (q.scheduled_ns >= stalled.end_ns) break;
    ++behind;
    EXPECT_GE(q.start_ns, stalled.end_ns);
    EXPECT_GE(q.latency_ns(), stalled.end_ns - q.scheduled_ns);
    EXPECT_LT(q.service_ns(), 100'000'000);  // the service itself stayed short
  }
  EXPECT_GE(behind, 20);  // ~40 arrivals fall inside 200 ms at 200/s
  // The distribution sees it too: p90 latency is dominated by queueing, not service.
  const Distribution lat = r.recorder->distribution(Metric::latency);
  const Distribution svc = r.recorder->distribution(Metric::service);
  EXPECT_GT(lat.p90_ns, 50'000'000);
  EXPECT_LT(svc.p90_ns, 50'000'000);
}

TEST(HarnessLoad, OfflineAndClosedLoopIssueTheRightCounts) {
  NullSut null;
  LoadSettings s = base();
  s.pattern = Pattern::offline;
  s.min_queries = 1000;
  s.workers = 2;
  LoadResult r = run_load(null, s);
  EXPECT_EQ(r.recorder->count(), 1000);
  EXPECT_TRUE(r.recorder->distribution(Metric::latency).exact);

  SleepSut sleep({1, 0.2, -1, 0});
  s.pattern = Pattern::closed_loop;
  s.clients = 3;
  s.workers = 3;
  s.min_queries = 30;
  r = run_load(sleep, s);
  EXPECT_GE(r.recorder->count(), 30);
  EXPECT_LE(r.recorder->count(), 33);  // each client stops after the minimum is reached
  // Generative timing: 2 tokens 0.2 ms apart after 1 ms -> TTFT >= 1 ms, TPOT >= 0.2 ms.
  const Distribution ttft = r.recorder->distribution(Metric::ttft);
  EXPECT_EQ(ttft.count, r.recorder->count());
  EXPECT_GE(r.recorder->distribution(Metric::tpot).p50_ns, 200'000);
  EXPECT_EQ(r.recorder->output_tokens(), 2 * r.recorder->count());
}

TEST(HarnessLoad, FailureStopsTheRunWithTheReason) {
  class Failing : public SystemUnderTest {
   public:
    SutInfo info() const override { return {}; }
    void issue(int, const Query& q, QueryContext& ctx) override {
      if (q.index == 3) throw Error("boom");
      ctx.complete();
    }
  } sut;
  LoadSettings s = base();
  s.pattern = Pattern::single_stream;
  s.min_queries = 10;
  const LoadResult r = run_load(sut, s);
  EXPECT_NE(r.error.find("query 3: boom"), std::string::npos) << r.error;
  EXPECT_EQ(r.recorder->failed(), 1);
}

TEST(HarnessLoad, MaxDurationStopsAServerRun) {
  SleepSut sut({20, 0, -1, 0});  // 20 ms per query, 1 worker: at most ~10 queries in 200 ms
  LoadSettings s = base();
  s.pattern = Pattern::server;
  s.target_qps = 200;
  s.min_queries = 200;
  s.max_duration_ns = 200'000'000;
  const LoadResult r = run_load(sut, s);
  EXPECT_TRUE(r.hit_max_duration);
  EXPECT_LT(r.recorder->count(), 20);
  EXPECT_EQ(r.scheduled, 200);
}

}  // namespace
}  // namespace cibench
