// Generative serving: the asynchronous SUT contract (the harness issues and returns, the SUT
// reports tokens and completion from its own thread, the harness timestamps them), inter-token
// latency, in-flight and queued requests, goodput and SLO attainment, and bursty arrivals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "engines/core/error.h"
#include "harness/lib/load.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/suite.h"
#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMs = 1'000'000;

LoadSettings base(int gen_tokens) {
  LoadSettings s;
  s.prompt.value = s.prompt.min = s.prompt.max = 4;
  s.gen.value = s.gen.min = s.gen.max = gen_tokens;
  s.n_samples = 10;
  s.warmup_queries = 0;
  return s;
}

std::vector<RequestRecord> by_index(const LoadResult& r) {
  auto recs = r.recorder->records();
  std::sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return recs;
}

// The continuous-batching test SUT on a scripted arrival pattern. Steps of 50 ms, at most 2
// queries in the batch, 3 tokens each. The engine's grid starts at the arrival that wakes it, and
// a query joins at the first step start at or after its arrival while the batch has room:
//   q0 @10  idle engine: steps from 10; admitted at 10, tokens 60 110 160 (done at 160)
//   q1 @35  admitted at 60 (batch q0 q1), tokens 110 160 210
//   q2 @80  batch full until q0 leaves at 160: admitted at 160, tokens 210 260 310
//   q3 @80  behind q2 (arrival order); q1 leaves at 210: admitted at 210, tokens 260 310 360
//   q4 @400 the engine idled from 360: admitted at 400, tokens 450 500 550
// Every time is a planned step boundary; a sleep never ends early, so each measured time is at
// or after its planned one and at most the wake-up delay later. Arrivals sit at least half a step
// from the boundary where they would join, so the harness issuing late by less than that changes
// no admission: the tolerance is half a step.
// The plan above runs 3x slower (F = 3: 150 ms steps, 75 ms of tolerance) so that a wake-up
// delayed by a loaded machine (ctest -j on two cores) stays inside half a step.
TEST(HarnessServing, AsyncBatchingSutOnScriptedArrivalsGivesEachRequestsTimings) {
  constexpr int64_t F = 3;
  const int64_t unit = F * kMs, step = 50 * unit, tol = step / 2;
  BatchSleepSut sut({/*step_ms=*/50.0 * F, /*max_batch=*/2});
  LoadSettings s = base(3);
  s.pattern = Pattern::server;
  s.arrivals_ns = {10 * unit, 35 * unit, 80 * unit, 80 * unit, 400 * unit};
  s.min_queries = 5;
  const LoadResult r = run_load(sut, s);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.async);
  EXPECT_FALSE(r.hit_max_duration);
  const auto recs = by_index(r);
  ASSERT_EQ(recs.size(), 5u);
  struct Expect {
    int64_t start, first, end;
  };
  const Expect want[] = {{10, 60, 160}, {60, 110, 210}, {160, 210, 310}, {210, 260, 360}, {400, 450, 550}};
  for (size_t i = 0; i < 5; ++i) {
    const RequestRecord& q = recs[i];
    const Expect& e = want[i];
    SCOPED_TRACE("query " + std::to_string(i));
    EXPECT_EQ(q.scheduled_ns, s.arrivals_ns[i]);
    EXPECT_EQ(q.output_tokens, 3);
    EXPECT_TRUE(q.ok);
    const int64_t sched = s.arrivals_ns[i];
    // Queue wait: arrival to admission (started()).
    EXPECT_GE(q.queue_ns(), e.start * unit - sched);
    EXPECT_LE(q.queue_ns(), e.start * unit - sched + tol);
    // TTFT and end-to-end latency from the scheduled arrival.
    EXPECT_GE(q.ttft_ns(), e.first * unit - sched);
    EXPECT_LE(q.ttft_ns(), e.first * unit - sched + tol);
    EXPECT_GE(q.latency_ns(), e.end * unit - sched);
    EXPECT_LE(q.latency_ns(), e.end * unit - sched + tol);
    // TPOT: one step per token after the first.
    EXPECT_NEAR(static_cast<double>(q.tpot_ns()), static_cast<double>(step), static_cast<double>(tol));
  }
  // ITL: every gap between consecutive tokens, 2 per request, each one step.
  const Distribution itl = r.recorder->distribution(Metric::itl);
  EXPECT_EQ(itl.count, 10);
  EXPECT_TRUE(itl.exact);
  EXPECT_NEAR(static_cast<double>(itl.p50_ns), static_cast<double>(step), static_cast<double>(tol));
  EXPECT_NEAR(static_cast<double>(itl.max_ns), static_cast<double>(step), static_cast<double>(tol));
  // In flight: all four of q0..q3 from 80 to 160; queued: q2 and q3 from 80 to 160.
  std::vector<std::pair<int64_t, int64_t>> flight, queued;
  for (const auto& q : recs) {
    flight.emplace_back(q.scheduled_ns, q.end_ns);
    queued.emplace_back(q.scheduled_ns, q.start_ns);
  }
  const int64_t dur = static_cast<int64_t>(std::llround(r.duration_s * 1e9));
  EXPECT_EQ(occupancy(flight, dur).max, 4);
  EXPECT_EQ(occupancy(queued, dur).max, 2);
  EXPECT_GE(dur, 550 * unit);
  EXPECT_LE(dur, 550 * unit + tol);
}

// Closed loop on the asynchronous SUT: a client's next query arrives when its previous one
// completes; alone in the batch, each query takes gen_tokens steps with its first token after one.
TEST(HarnessServing, AsyncSingleStreamIssuesAtEachCompletion) {
  // The tolerance is a whole step: only the SUT thread's wake-up delay adds to the planned times.
  const int64_t step = 40 * kMs, tol = step;
  BatchSleepSut sut({40, 4});
  LoadSettings s = base(2);
  s.pattern = Pattern::single_stream;
  s.min_queries = 4;
  s.warmup_queries = 1;
  const LoadResult r = run_load(sut, s);
  ASSERT_TRUE(r.error.empty()) << r.error;
  const auto recs = by_index(r);
  ASSERT_EQ(recs.size(), 4u);
  for (size_t i = 0; i < recs.size(); ++i) {
    SCOPED_TRACE("query " + std::to_string(i));
    if (i > 0) {
      EXPECT_EQ(recs[i].scheduled_ns, recs[i - 1].end_ns);
    }
    EXPECT_GE(recs[i].ttft_ns(), step);
    EXPECT_LE(recs[i].ttft_ns(), step + tol);
    EXPECT_GE(recs[i].latency_ns(), 2 * step);
    EXPECT_LE(recs[i].latency_ns(), 2 * step + tol);
  }
}

// At max_duration the SUT is stopped and the queries it had not completed are not recorded.
TEST(HarnessServing, AsyncMaxDurationStopsTheSut) {
  BatchSleepSut sut({25, 1});  // one query at a time, 2 steps each: 50 ms per query
  LoadSettings s = base(2);
  s.pattern = Pattern::server;
  s.arrivals_ns.assign(20, 0);
  s.min_queries = 20;
  s.max_duration_ns = 160 * kMs;
  const LoadResult r = run_load(sut, s);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.hit_max_duration);
  EXPECT_EQ(r.scheduled, 20);
  EXPECT_GE(r.recorder->count(), 1);
  EXPECT_LE(r.recorder->count(), 4);  // at most 160 / 50 completed
}

// A failure reported from the SUT's own thread stops the run with its reason.
TEST(HarnessServing, AsyncFailureFromTheSutThreadStopsTheRun) {
  class Failing : public AsyncSystemUnderTest {
   public:
    SutInfo info() const override { return {}; }
    void start(const HarnessClock&) override {
      worker_ = std::thread([this] {
        for (;;) {
          std::unique_lock<std::mutex> lk(mu_);
          cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
          if (stop_) return;
          auto [q, ctx] = queue_.front();
          queue_.erase(queue_.begin());
          lk.unlock();
          ctx->started();
          ctx->token();
          if (q.index == 3) ctx->fail("engine out of KV blocks");
          else ctx->complete();
        }
      });
    }
    void issue_async(const Query& q, QueryContext& ctx) override {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.emplace_back(q, &ctx);
      cv_.notify_one();
    }
    void stop() override {
      {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
        cv_.notify_one();
      }
      worker_.join();
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::pair<Query, QueryContext*>> queue_;
    bool stop_ = false;
    std::thread worker_;
  } sut;
  LoadSettings s = base(1);
  s.pattern = Pattern::single_stream;
  s.min_queries = 10;
  const LoadResult r = run_load(sut, s);
  EXPECT_NE(r.error.find("query 3: engine out of KV blocks"), std::string::npos) << r.error;
  EXPECT_EQ(r.recorder->failed(), 1);
  EXPECT_EQ(r.recorder->count(), 4);
}

TEST(HarnessServing, AsyncSutRefusesTheWorkerPoolsSettings) {
  BatchSleepSut sut({1, 1});
  LoadSettings s = base(1);
  s.pattern = Pattern::offline;
  s.max_batch = 4;
  EXPECT_THROW(run_load(sut, s), Error);
  EXPECT_THROW(make_test_sut("sut:batch-sleep?step_ms=0"), Error);
  EXPECT_THROW(make_test_sut("sut:batch-sleep?max_batch=2.5"), Error);
  EXPECT_THROW(make_test_sut("sut:batch-sleep?steps=2"), Error);
  auto ok = make_test_sut("sut:batch-sleep?step_ms=2&max_batch=8");
  EXPECT_NE(ok->as_async(), nullptr);
  EXPECT_EQ(make_test_sut("sut:sleep?ms=1")->as_async(), nullptr);
}

// The synchronous path timestamps every token too: the sleep SUT's gaps are token_ms at least.
TEST(HarnessServing, SyncSutGapsAreInterTokenLatencies) {
  SleepSut sut({1, 2, -1, 0});  // 1 ms, then tokens 2 ms apart
  LoadSettings s = base(4);
  s.pattern = Pattern::closed_loop;
  s.clients = 2;
  s.workers = 2;
  s.min_queries = 6;
  const LoadResult r = run_load(sut, s);
  ASSERT_TRUE(r.error.empty()) << r.error;
  const Distribution itl = r.recorder->distribution(Metric::itl);
  EXPECT_EQ(itl.count, 3 * r.recorder->count());
  EXPECT_GE(itl.p50_ns, 2 * kMs);
  EXPECT_GE(static_cast<int64_t>(itl.mean_ns), 2 * kMs);
}

TEST(HarnessServing, OccupancyIsTheTimeWeightedCountOfOpenRequests) {
  // [0,10) [5,15) [10,20) [30,40) over 40: two open on [5,15), none on [20,30).
  const Occupancy o = occupancy({{0, 10}, {5, 15}, {10, 20}, {30, 40}}, 40);
  EXPECT_EQ(o.max, 2);
  EXPECT_DOUBLE_EQ(o.mean, 40.0 / 40.0);
  // Clipped to the duration; empty intervals ignored.
  const Occupancy c = occupancy({{-5, 5}, {8, 8}, {6, 30}}, 10);
  EXPECT_EQ(c.max, 1);
  EXPECT_DOUBLE_EQ(c.mean, (5.0 + 4.0) / 10.0);
  EXPECT_EQ(occupancy({}, 0).max, 0);
}

// Gaps are kept up to the cap, then the ITL falls back to the histogram (<= 0.4 % error).
TEST(HarnessServing, ItlIsExactUpToTheCapThenFromTheHistogram) {
  Recorder rec(1, 5, 5);
  const int64_t t1[] = {0, 10'000, 30'000, 60'000};  // gaps 10, 20, 30 us
  RequestRecord r;
  r.output_tokens = 4;
  r.first_token_ns = 0;
  r.end_ns = 60'000;
  rec.add(r, t1, 4);
  Distribution d = rec.distribution(Metric::itl);
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.p50_ns, 20'000);
  EXPECT_EQ(d.max_ns, 30'000);
  rec.add(r, t1, 4);  // 6 gaps > 5
  d = rec.distribution(Metric::itl);
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(d.count, 6);
  EXPECT_NEAR(static_cast<double>(d.p50_ns), 20'000.0, 20'000.0 / 256);
  EXPECT_EQ(d.max_ns, 30'000);
}

TEST(HarnessServing, GammaArrivalsKeepTheRateAndSpreadByBurstiness) {
  // burstiness 1 is Poisson, value for value.
  EXPECT_EQ(gamma_arrivals_ns(50, 1, 7, 1000, 0), poisson_arrivals_ns(50, 7, 1000, 0));
  const int64_t n = 20000;
  const double rate = 100;
  for (double k : {0.25, 4.0}) {
    const auto t = gamma_arrivals_ns(rate, k, 11, n, 0);
    ASSERT_EQ(static_cast<int64_t>(t.size()), n);
    double sum = 0, sum2 = 0;
    int64_t prev = 0;
    for (int64_t x : t) {
      const double g = static_cast<double>(x - prev) * 1e-9;
      sum += g;
      sum2 += g * g;
      prev = x;
    }
    const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
    // Gamma(k, 1 / (rate k)): mean 1 / rate, coefficient of variation 1 / sqrt(k). The standard
    // error of the mean is cv / rate / sqrt(n) (1.4 % of the mean at k = 0.25): 5 of them.
    const double cv = 1 / std::sqrt(k);
    EXPECT_NEAR(mean, 1 / rate, 5 * cv / rate / std::sqrt(static_cast<double>(n))) << "burstiness " << k;
    EXPECT_NEAR(sd / mean, cv, 0.1 * cv) << "burstiness " << k;
  }
  EXPECT_THROW(gamma_arrivals_ns(10, 0, 1, 10, 0), Error);
  EXPECT_THROW(gamma_arrivals_ns(10, std::nan(""), 1, 10, 0), Error);
}

TEST(HarnessServing, BurstinessIsAScenarioKeyWithClearErrors) {
  const std::string head = "[model]\nsource = \"sut:null\"\n[load]\n";
  const Scenario sc = parse_scenario_text(head + "pattern = \"server\"\ntarget_qps = 5\nburstiness = 0.5\n", "b.toml");
  EXPECT_DOUBLE_EQ(sc.burstiness, 0.5);
  EXPECT_DOUBLE_EQ(parse_scenario_text(head + "pattern = \"server\"\ntarget_qps = 5\n", "b.toml").burstiness, 1.0);
  auto error_of = [&](const std::string& load) {
    try {
      parse_scenario_text(head + load, "b.toml");
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string zero = error_of("pattern = \"server\"\ntarget_qps = 5\nburstiness = 0\n");
  EXPECT_NE(zero.find("b.toml:6:14: key 'load.burstiness': must be in [0.01, 1000], got 0"), std::string::npos) << zero;
  EXPECT_NE(error_of("pattern = \"server\"\ntarget_qps = 5\nburstiness = \"high\"\n").find("expected a number"),
            std::string::npos);
  const std::string closed = error_of("pattern = \"closed_loop\"\nclients = 2\nburstiness = 2\n");
  EXPECT_NE(closed.find("key 'load.burstiness': shapes the gaps of drawn arrivals: only pattern = \"server\" or "
                        "\"stepped\", not \"closed_loop\""),
            std::string::npos)
      << closed;
}

TEST(HarnessServing, ARequestMeetsTheSlosOnItsOwnValues) {
  Slo ttft = *parse_slo_key("ttft_p99_ms"), lat = *parse_slo_key("p50_ms");
  ttft.limit_ms = 100;
  lat.limit_ms = 500;
  const std::vector<Slo> slos{ttft, lat};
  auto judge = [&](std::optional<double> t, double l) {
    return request_meets_slos(slos, [&](const std::string& m) -> std::optional<double> {
      return m == "ttft" ? t : std::optional<double>(l);
    });
  };
  EXPECT_TRUE(judge(100, 500));   // at the limit meets it
  EXPECT_FALSE(judge(100.5, 10));
  EXPECT_FALSE(judge(10, 501));
  EXPECT_TRUE(judge(std::nullopt, 10));  // no first token: not judged on TTFT
  EXPECT_TRUE(request_meets_slos({}, [](const std::string&) { return std::optional<double>(1e9); }));
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / str("cibench_serving_", name, "_", getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string db() const { return (path / "r.sqlite").string(); }
};

std::optional<double> num(const SqlValue& v) { return sql_number(v); }

// A suite run on the asynchronous SUT stores the serving measures: ITL with its count, goodput
// and attainment as the requests table says (the same per-request rule), in-flight and queued
// requests, the arrival process; counters it cannot count are unavailable with the reason.
TEST(HarnessServing, SuiteStoresServingMeasuresPerVariant) {
  TempDir dir("suite");
  SuiteOptions o;
  o.db_path = dir.db();
  const std::string text = R"([model]
source = "sut:batch-sleep?step_ms=4&max_batch=3"
[workload]
prompt_tokens = 8
gen_tokens = { dist = "uniform", min = 1, max = 5 }
[load]
pattern = "server"
target_qps = 150
burstiness = 0.5
[run]
warmup_queries = 1
min_queries = 60
min_duration_ms = 1
[slo]
ttft_p99_ms = 9
p99_ms = 40
)";
  const SuiteResult res = run_suite(parse_scenario_text(text, "serving.toml"), o);
  ASSERT_EQ(res.failed_variants, 0);
  Store st(o.db_path);
  const auto v = st.query(
      "SELECT queries, duration_s, itl_count, itl_p50_ms, itl_p99_ms, itl_reason, goodput_qps, slo_attainment, "
      "goodput_reason, inflight_mean, inflight_max, queue_depth_mean, queue_depth_max, concurrency_reason, "
      "arrival_process, latency_mean_ms, achieved_qps FROM variants WHERE run_id = ?",
      {res.run_id});
  ASSERT_EQ(v.rows.size(), 1u);
  const auto& row = v.rows[0];
  const double queries = *num(row[0]), duration = *num(row[1]);
  EXPECT_EQ(queries, 60);
  // ITL: one gap per token after the first, as the requests' output tokens say.
  const auto tok = st.query("SELECT SUM(MAX(output_tokens - 1, 0)) FROM requests WHERE variant_id = ?",
                            {res.variant_ids[0]});
  EXPECT_EQ(*num(row[2]), *num(tok.rows[0][0]));
  EXPECT_GT(*num(row[3]), 0.0);
  EXPECT_LE(*num(row[3]), *num(row[4]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[5]));
  // Goodput: requests meeting both SLOs on their own values, over the duration.
  const auto met = st.query(
      "SELECT COUNT(*) FROM requests WHERE variant_id = ? AND ok = 1 AND (ttft_ms IS NULL OR ttft_ms <= 9) "
      "AND latency_ms <= 40",
      {res.variant_ids[0]});
  const double n_met = *num(met.rows[0][0]);
  EXPECT_DOUBLE_EQ(*num(row[6]), n_met / duration);
  EXPECT_DOUBLE_EQ(*num(row[7]), n_met / queries);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[8]));
  // Little's law: the mean in flight is the rate times the mean latency (the latency sum over the
  // duration); a maximum of at least 1.
  EXPECT_NEAR(*num(row[9]), queries * *num(row[15]) * 1e-3 / duration, 1e-6);
  EXPECT_GE(*num(row[10]), 1);
  EXPECT_LE(*num(row[12]), *num(row[10]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[13]));
  EXPECT_EQ(sql_to_string(row[14]), "gamma burstiness 0.5 at 150 qps (seed 1); asynchronous SUT");
  // Counters: unavailable with the reason, never zero.
  const auto c = st.query("SELECT COUNT(*), COUNT(value), MIN(unavailable_reason) FROM counters WHERE variant_id = ?",
                          {res.variant_ids[0]});
  EXPECT_GT(*num(c.rows[0][0]), 0);
  EXPECT_EQ(*num(c.rows[0][1]), 0);
  EXPECT_NE(sql_to_string(c.rows[0][2]).find("serves from its own threads"), std::string::npos);
  // The readers' goodput is the stored one.
  reports::Db db(o.db_path);
  const auto vars = db.variants({res.run_id});
  ASSERT_EQ(vars.size(), 1u);
  EXPECT_DOUBLE_EQ(*reports::goodput(db, vars[0], db.slos(res.run_id)), n_met / duration);

  // Without SLOs: NULL with the reason.
  const SuiteResult nos = run_suite(
      parse_scenario_text(text.substr(0, text.find("[slo]")), "serving.toml"), o);
  const auto g = st.query("SELECT goodput_qps, goodput_reason FROM variants WHERE run_id = ?", {nos.run_id});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(g.rows[0][0]));
  EXPECT_EQ(sql_to_string(g.rows[0][1]), "no SLO in the scenario");

  // A SUT without tokens: no ITL, NULL with the reason (never 0).
  const SuiteResult quiet = run_suite(
      parse_scenario_text("[model]\nsource = \"sut:sleep?ms=1\"\n[load]\npattern = \"single_stream\"\n[run]\n"
                          "min_queries = 4\nmin_duration_ms = 1\n[counters]\nenabled = false\n",
                          "quiet.toml"),
      o);
  const auto q = st.query("SELECT itl_count, itl_p50_ms, itl_reason, inflight_max, arrival_process FROM variants "
                          "WHERE run_id = ?", {quiet.run_id});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(q.rows[0][0]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(q.rows[0][1]));
  EXPECT_EQ(sql_to_string(q.rows[0][2]), "the SUT reported no output tokens");
  EXPECT_EQ(*num(q.rows[0][3]), 1);  // one request at a time
  EXPECT_EQ(sql_to_string(q.rows[0][4]), "single stream (next query at each completion)");
}

}  // namespace
}  // namespace cibench
