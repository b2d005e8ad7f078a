#pragma once
// The trade-off: axes, the quality floors, the Pareto frontier over the variants that meet them.
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "reports/db.h"

namespace cibench::reports {

struct Axis {
  std::string key;    // a variants column
  std::string label;  // "latency p95"
  std::string unit;   // "ms", "queries/s", "MiB", ""
  bool higher_is_better = false;
  double scale = 1;   // column value * scale = shown value (bytes -> MiB)
  std::string title() const;  // "latency p95 (ms)"
};

const std::vector<Axis>& x_axes();  // latency percentiles, throughput, memory
const std::vector<Axis>& y_axes();  // accuracy deltas and task metrics
// Either list, or any percentile column an SLO can bound ("ttft_p99_ms", "queue_max_ms"); throws
// DbError when unknown.
Axis find_axis(const std::string& key);
// Whether the axis is one of y_axes() (a quality measure), as opposed to latency or throughput.
bool is_quality_axis(const std::string& key);

struct Point {
  double x = 0;
  double y = 0;
};

// Indices of the points no other point dominates (at least as good on both axes and strictly
// better on one), ordered by x ascending. Exact duplicates are all kept.
std::vector<size_t> pareto_frontier(const std::vector<Point>& pts, bool x_higher_better,
                                    bool y_higher_better);

// Whether a y value meets the quality floor: y >= floor when higher is better, y <= floor when
// lower is better (the floor is then a ceiling, e.g. max_ppl_ratio).
bool meets_floor(const Axis& y, double value, double floor);

// A variant against every quality floor of its run (harness/schema/slo.h's kinds), on the stored
// columns: met = false when a measured column breaks its floor; true when every floor was measured
// and met; nullopt when there is no floor, or some were not measured and none was broken.
struct FloorsVerdict {
  std::optional<bool> met;
  std::vector<std::string> broken;      // "accuracy_delta -0.02 < -0.01 (max_accuracy_drop = 0.01)"
  std::vector<std::string> unmeasured;  // floor keys
  std::string summary() const;          // "meets floors" | "below: ..." | "no floor" | "not measured: ..."
};

struct TradeoffPoint {
  Variant v;
  double x = 0;  // shown units (after Axis::scale)
  double y = 0;
  bool meets_floor = true;  // the y axis's floor and every other floor of the run (when applied)
  bool on_frontier = false;
  FloorsVerdict floors;     // every floor of the variant's run
};

struct Tradeoff {
  Axis x, y;
  std::optional<double> floor;
  std::string floor_source;  // "scenario: min_top1_agreement" / "set by the user" / ""
  // Stepped runs: one point per (variant, offered rate), each judged on its own; otherwise one per
  // variant (its first step).
  bool per_step = false;
  std::vector<TradeoffPoint> points;
  std::vector<size_t> frontier;  // indices into points, by x ascending
  std::vector<std::pair<Variant, std::string>> unplotted;  // and why (no y, failed, ...)
};

// Default axes for these runs. The views follow the scenario: x = the column of the run's SLO on
// end-to-end latency with the highest percentile, else its SLO with the highest percentile, else
// latency p95 (else the first x axis measured); y = the column of the run's first quality floor the
// variants have (a classifier's max_accuracy_drop: accuracy_delta), else the first quality axis
// measured that differs between variants, else throughput: tokens/s when measured, else queries/s.
std::pair<std::string, std::string> default_axes(Db& db, const std::vector<int64_t>& run_ids);
// Every variant against every floor of its run.
FloorsVerdict judge_floors(Db& db, const Variant& v);
// One point per variant (its first step; accuracy columns from any step of that variant), or per
// step for stepped runs.
// floor: nullopt = the scenario's floor for the y axis (of the first run that has one), or no
// floor at all when use_scenario_floor is false.
Tradeoff tradeoff(Db& db, const std::vector<int64_t>& run_ids, const std::string& x_key, const std::string& y_key,
                  std::optional<double> floor = std::nullopt, bool use_scenario_floor = true);

}  // namespace cibench::reports
