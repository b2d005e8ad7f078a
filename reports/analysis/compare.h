#pragma once
// The compare of two runs with bootstrap confidence intervals.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include "harness/schema/stats.h"
#include "reports/db.h"

namespace cibench::reports {
struct CompareRow {
  std::string variant;  // label (and step)
  std::string metric;   // "latency p95 (ms)"
  std::optional<double> a, b;
  std::optional<double> diff;        // b - a
  std::optional<double> change_pct;  // 100 (b - a) / a
  std::optional<double> ci_low;      // bootstrap interval of b - a
  std::optional<double> ci_high;
  std::optional<int64_t> n_a, n_b;   // the samples behind a percentile
  std::string note;                  // why no interval, or where the samples came from
  std::string warning;               // the percentile is a side's sample maximum (too few requests)
  // The interval excludes 0.
  bool significant() const { return ci_low && ci_high && (*ci_low > 0 || *ci_high < 0); }
};

// The compare of two runs, the one implementation behind `cibench compare`, the report and the
// GUI: per variant matched by label and step, the nearest-rank p50 and p95 of latency, ttft and
// tpot (requests when all were kept, else the histogram at bucket midpoints) with n per side,
// B - A, the change in % of A, and the 95 % percentile-bootstrap interval of percentile_diff
// (harness/schema/stats.h: samples sorted first, one seeded generator). Throughput, accuracy and
// memory (MiB) are single measurements, shown without an interval.
struct Comparison {
  RunInfo a, b;
  int resamples = 0;
  uint64_t seed = 0;
  double confidence = 0.95;
  std::vector<CompareRow> rows;
  std::vector<std::string> only_in_a, only_in_b;  // variant labels without a match
  // Every variant of either run that did not complete: "A: int4 t2 w1: failed (no kernel ...)".
  std::vector<std::string> failed;
  // Said before any number: the runs answer different scenarios, use different models, etc.
  std::vector<std::string> warnings;
  bool same_scenario = true, same_model = true;
};

// The compare's statistics (harness/schema/stats.h), shared with the harness.
using cibench::bootstrap_diff_ci;
using cibench::percentile_diff;
using cibench::percentile_is_max;
using cibench::sample_stat;

// The compare as JSON (`cibench compare --json`) and as plain-text lines (`cibench compare`): the
// warnings first, then one row per metric, then the failed and unmatched variants by name.
nlohmann::json comparison_json(const Comparison& c);

// Defaults as `cibench compare`: 2000 resamples, seed 1.
Comparison compare_runs(Db& db, int64_t run_a, int64_t run_b, int resamples = 2000, uint64_t seed = 1);
// Runs that can be compared with `run_id` without a warning: the same scenario and model,
// newest first (the run itself excluded). The GUI offers these as B; it never picks another.
std::vector<int64_t> comparable_runs(Db& db, int64_t run_id);

}  // namespace cibench::reports
