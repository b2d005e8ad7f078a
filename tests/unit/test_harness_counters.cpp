// Counters: the selection logic with an injected fake PMU (values, per phase, derived IPC/MPKI)
// and on this machine (no PMU: unavailable with the reason, never zero).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engines/core/error.h"
#include "harness/lib/counters.h"

namespace cibench {
namespace {

// A PMU that counts `rate[e] * reads` since start: deterministic values to check the plumbing.
class FakePmu : public CounterBackend {
 public:
  std::string name() const override { return "fake-pmu"; }
  std::vector<std::string> probe(const std::vector<std::string>& events) override {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e == "l2_misses" ? "FAKE_ENOEVNT: no L2 here" : "");
    return out;
  }
  std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>& events) override {
    class T : public ThreadCounters {
     public:
      explicit T(std::vector<std::string> e) : e_(std::move(e)) {}
      void start() override { n_ = 0; }
      std::vector<double> read() override {
        ++n_;
        std::vector<double> v;
        for (const auto& e : e_) v.push_back(rate(e) * n_);
        return v;
      }
      void stop() override {}

     private:
      std::vector<std::string> e_;
      int n_ = 0;
    };
    return std::make_unique<T>(events);
  }
  static double rate(const std::string& e) {
    if (e == "cycles") return 1000;
    if (e == "instructions") return 2500;
    if (e == "l1d_misses") return 50;
    if (e == "l3_misses") return 5;
    if (e == "branch_misses") return 10;
    return 1;
  }
};

const CounterRow* find(const std::vector<CounterRow>& rows, const std::string& name,
                       const std::string& phase, const std::string& scope) {
  for (const auto& r : rows)
    if (r.name == name && r.phase == phase && r.scope == scope) return &r;
  return nullptr;
}

TEST(HarnessCounters, FakePmuGivesValuesPerPhaseAndDerivedMetrics) {
  std::vector<std::unique_ptr<CounterBackend>> hw, sw;
  hw.push_back(std::make_unique<FakePmu>());
  sw.push_back(make_rusage_backend());
  CounterPlan plan = plan_counters(std::move(hw), std::move(sw));
  CounterObserver obs(plan, 2, /*phases=*/true, "/nonexistent-powercap");
  for (int w = 0; w < 2; ++w) {
    obs.attach(w);
    obs.begin(w);                   // read 1
    obs.phase(w, Phase::prefill);   // read 2: 1 step before any phase (counted in "all")
    obs.phase(w, Phase::decode);    // read 3: 1 step of prefill
    obs.end(w);                     // read 4: 1 step of decode
    obs.detach(w);
  }
  const auto rows = obs.rows();
  const CounterRow* cyc = find(rows, "cycles", "all", "total");
  ASSERT_TRUE(cyc && cyc->value);
  EXPECT_DOUBLE_EQ(*cyc->value, 2 * 3 * 1000.0);  // 2 workers x 3 steps
  EXPECT_EQ(cyc->source, "fake-pmu");
  EXPECT_DOUBLE_EQ(*find(rows, "cycles", "prefill", "total")->value, 2 * 1000.0);
  EXPECT_DOUBLE_EQ(*find(rows, "instructions", "decode", "worker 1")->value, 2500.0);
  EXPECT_DOUBLE_EQ(*find(rows, "ipc", "all", "total")->value, 2.5);
  EXPECT_DOUBLE_EQ(*find(rows, "l1d_mpki", "decode", "worker 0")->value, 50.0 / 2500 * 1000);
  // An event the fake PMU lacks is unavailable with its reason, and so is what derives from it.
  const CounterRow* l2 = find(rows, "l2_misses", "all", "total");
  EXPECT_FALSE(l2->value.has_value());
  EXPECT_NE(l2->unavailable_reason.find("FAKE_ENOEVNT"), std::string::npos);
  EXPECT_FALSE(find(rows, "l2_mpki", "all", "total")->value.has_value());
  EXPECT_FALSE(find(rows, "l2_mpki", "all", "total")->unavailable_reason.empty());
  // rusage fills the software events it knows; migrations stay unavailable with a reason.
  EXPECT_EQ(find(rows, "task_clock_ms", "all", "total")->source, "rusage(thread)");
  EXPECT_TRUE(find(rows, "task_clock_ms", "all", "total")->value.has_value());
  EXPECT_FALSE(find(rows, "cpu_migrations", "all", "total")->value.has_value());
  const CounterRow* en = find(rows, "energy_j", "all", "package");
  EXPECT_FALSE(en->value.has_value());
  EXPECT_EQ(en->unavailable_reason, "no RAPL: /nonexistent-powercap absent");
  // Never a value and a reason together; never a silent zero.
  for (const auto& r : rows) EXPECT_NE(r.value.has_value(), !r.unavailable_reason.empty()) << r.name;
}

TEST(HarnessCounters, ABackendFailingOnAWorkerDoesNotHideTheOthers) {
  // Probes fine, fails when a worker opens it (as PAPI does when a preset exists but the PMU
  // cannot count it): its events are unavailable with that error, the software events still count.
  class Flaky : public FakePmu {
   public:
    std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>&) override {
      throw Error("FAKE_ECNFLCT: cannot count here");
    }
  };
  std::vector<std::unique_ptr<CounterBackend>> hw, sw;
  hw.push_back(std::make_unique<Flaky>());
  sw.push_back(make_rusage_backend());
  CounterPlan plan = plan_counters(std::move(hw), std::move(sw));
  CounterObserver obs(plan, 1, false, "/nonexistent-powercap");
  obs.attach(0);
  obs.begin(0);
  obs.end(0);
  obs.detach(0);
  const auto rows = obs.rows();
  const CounterRow* cyc = find(rows, "cycles", "all", "total");
  EXPECT_FALSE(cyc->value.has_value());
  EXPECT_EQ(cyc->unavailable_reason, "worker 0: FAKE_ECNFLCT: cannot count here");
  EXPECT_TRUE(find(rows, "page_faults", "all", "total")->value.has_value());
}

TEST(HarnessCounters, ThisMachineReportsWhatItCannotCount) {
  CounterPlan plan = default_counter_plan();
  const CounterPlan::Entry* cycles = nullptr;
  for (const auto& e : plan.entries)
    if (e.event == "cycles") cycles = &e;
  ASSERT_NE(cycles, nullptr);
  // Software events always have a source (perf_event or rusage).
  for (const auto& e : plan.entries) {
    if (e.event == "task_clock_ms") {
      EXPECT_NE(e.backend, nullptr);
    }
  }
  if (cycles->backend) GTEST_SKIP() << "this machine has a PMU (" << cycles->backend->name() << ")";
  // No PMU (this VM): both sources tried, both reasons kept.
  EXPECT_NE(cycles->reason.find("papi: "), std::string::npos) << cycles->reason;
  EXPECT_NE(cycles->reason.find("perf_event: "), std::string::npos) << cycles->reason;
  CounterObserver obs(plan, 1, false);
  obs.attach(0);
  obs.begin(0);
  obs.end(0);
  obs.detach(0);
  for (const auto& r : obs.rows()) {
    if (r.name == "cycles" || r.name == "ipc") {
      EXPECT_FALSE(r.value.has_value());
      EXPECT_FALSE(r.unavailable_reason.empty());
    }
  }
}

TEST(HarnessCounters, RaplReadsPackageDomains) {
  const auto root = std::filesystem::temp_directory_path() / ("cibench_rapl_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "intel-rapl:0");
  std::filesystem::create_directories(root / "intel-rapl:0:0");  // a sub-zone: not added twice
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << "2500000\n";
  std::ofstream(root / "intel-rapl:0:0" / "energy_uj") << "1000000\n";
  const EnergyReading r = read_rapl(root.string());
  ASSERT_TRUE(r.joules.has_value()) << r.reason;
  EXPECT_DOUBLE_EQ(*r.joules, 2.5);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace cibench
