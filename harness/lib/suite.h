#pragma once
// Runs a scenario: every variant of its matrix (and every step of a stepped load), each as a
// stored row with provenance, metrics, validity, SLO verdict, counters and accuracy. A variant
// that fails is a stored row with its error; the suite continues.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "harness/lib/counters.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"

namespace cibench {

struct SuiteOptions {
  std::string db_path = "results/cibench.sqlite";
  bool progress_bar = false;     // \r-updated bar (a terminal); otherwise plain lines
  std::ostream* log = nullptr;   // progress and notes (stderr); null = silent
  // Counter chains; empty = default_counter_plan(). Tests inject a fake PMU here.
  std::function<CounterPlan()> counter_plan;
  // Restarts the resident-set peak; empty = reset_peak_rss() (harness/lib/sysinfo.h). Tests
  // inject a refusal here.
  std::function<bool(std::string* why)> reset_peak_rss;
};

struct SuiteResult {
  int64_t run_id = 0;
  std::vector<int64_t> variant_ids;
  int failed_variants = 0;
  std::string status;
};

// Checks everything that can be checked before a row is written (the model opens, every
// variant's names parse); throws ScenarioError naming file:line:column and the key.
void prevalidate_scenario(const Scenario& sc);

SuiteResult run_suite(const Scenario& sc, const SuiteOptions& o);

// One variant's row and its measures as JSON (for `run --json`, show, export): the stored columns
// by name, except that the variant and its step are numbered from 1 as everywhere else
// ("variant": 2, "step": 1) in place of the stored 0-based variant_index and step_index.
nlohmann::json variant_summary_json(Store& store, int64_t variant_id);

}  // namespace cibench
