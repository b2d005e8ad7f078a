#pragma once
// Speculative decoding (schema 10): speed-up against acceptance, TPOT against k, acceptance by
// draft position, each drafter against its build's off variant.
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "reports/analysis/labels.h"  // drafter_name
#include "reports/db.h"

namespace cibench::reports {

// One speculative variant row: a drafter at one number of draft tokens k. Every value is nullopt
// when the row did not measure it (the reasons say why), never 0.
struct SpecPoint {
  Variant v;
  std::string drafter;       // variants.speculative: "self:int4_g128_a8", "draft:/m/stories260K.bin", "lookup:1-3"
  std::optional<int64_t> k;  // draft_tokens
  std::optional<double> acceptance, mean_accepted_length, draft_share, verify_share;
  // spec_acceptance_by_position, position 1 first; nullopt where nothing was drafted at a position.
  std::vector<std::optional<double>> by_position;
  std::string reason;  // spec_reason: why acceptance (and the rest of the counts) is nullopt
  std::optional<double> speedup, speedup_p95;  // baseline mean (p95) TPOT / this mean (p95) TPOT
  std::string speedup_reason;                  // why speedup is nullopt
  std::optional<double> ttft_p50_ms, tpot_p50_ms, tpot_p95_ms, tpot_mean_ms;
  std::string k_text() const;  // "k=4" ("k=?" when not stored)
  // "k=4: acceptance 0.78, mean accepted length 3.1, speed-up 1.47x (p95 1.38x), TPOT p95 41.2 ms"
  std::string summary() const;
};

// The row of a build without speculation (speculative = "off") that speculative rows of the same
// build and run are measured against.
struct SpecBaseline {
  Variant v;
  std::string build;  // SpecSeries::build
  std::optional<double> ttft_p50_ms, tpot_p50_ms, tpot_p95_ms, tpot_mean_ms;
};

// One drafter of one target build in one run, across k.
struct SpecSeries {
  int64_t run_id = 0;
  // The target build the drafter speeds up, as its off variant is named: "w8a8 t1 w1" (the
  // variant's short name; a stepped run's rate included).
  std::string build;
  std::string drafter;  // as stored
  // The legend's name: the drafter (a draft model by its file name: "draft:stories260K"),
  // " (BUILD)" added when the runs have several builds, "run N: " first when several runs are shown.
  std::string name;
  std::vector<SpecPoint> points;  // by k
  // The point with the lowest TPOT p95 (nullptr when none measured it).
  const SpecPoint* best() const;
};

// The lowest TPOT p95 of a build's speculative variants in a run.
struct SpecBest {
  int64_t run_id = 0;
  std::string build;
  size_t series = 0, point = 0;               // Speculative::series[series].points[point]
  std::optional<size_t> baseline;             // Speculative::baselines index
  // "lowest TPOT p95: self:int4_g128_a8 k=2, 41.2 ms (speed-up 1.38x at p95 over the off variant's 56.9 ms)"
  std::string text;
};

struct Speculative {
  std::vector<int64_t> runs;
  std::vector<SpecSeries> series;       // by run, build, drafter
  std::vector<SpecBaseline> baselines;  // the off rows of the runs, by run
  std::vector<SpecBest> best;           // one per (run, build) with a TPOT p95 measured
  bool several_builds = false;          // the series' names carry their build
  // Rows not drawn on the speed-up chart (no speed-up or no acceptance) and rows that failed,
  // each with its reason: "self:int4_g128_a8 k=8: speed-up not measured: the off variant failed".
  std::vector<std::string> unplotted;
  bool empty() const { return series.empty(); }
  const SpecPoint& at(const SpecBest& b) const { return series[b.series].points[b.point]; }
  // The baseline of this series: the row its points name (spec_baseline_variant_id), else its
  // run's off row of the same build; nullptr when none.
  const SpecBaseline* baseline_of(const SpecSeries& s) const;
  // The best lines (one per run and build), what is left out and why.
  std::vector<std::string> notes() const;
  // The points of the speed-up chart (acceptance x, speed-up y; the first max_series series) that
  // get a k label where it has room: every line's ends first (they say which way k grows), then
  // the points between, none within wx along x and wy along y of one already labelled. Pairs
  // (series, point), in the order placed.
  std::vector<std::pair<size_t, size_t>> speedup_labels(size_t max_series, double wx, double wy) const;
};


// The speculative-decoding views' data for these runs: one series per (run, target build,
// drafter) over its rows with a drafter (variants.speculative not NULL and not "off"), the off
// rows as baselines, the lowest TPOT p95 per run and build. Empty when no row has a drafter
// (stores before schema 10, other families). Throws DbError naming the variant when its
// spec_acceptance_by_position is not a JSON array of numbers and nulls.
Speculative speculative(Db& db, const std::vector<int64_t>& run_ids);

}  // namespace cibench::reports
