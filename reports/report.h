#pragma once
// `cibench report RUN... --out DIR`: what a report shows, collected once from the analysis
// (reports/analysis/) over the store (reports/db.h), as cibench-gui shows it: the variants ranked,
// the Pareto frontier, SLO and quality-floor verdicts, latency and load, serving, speculative
// decoding, counters, provenance, and the compare of two runs. The two reporters render it:
// render/html_report.h (a self-contained page, inline SVG charts, no script, no network) and
// render/markdown_report.h (the same tables).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/hosts.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/format.h"

namespace cibench::reports {

struct ReportOptions {
  std::string x_axis;              // "" = reports::default_axes
  std::string y_axis;
  std::optional<double> floor;     // nullopt = the scenario's floor
  int compare_resamples = 2000;    // bootstrap resamples when exactly two runs are given (as cibench compare)
};

struct ReportData {
  std::vector<RunInfo> runs;
  std::vector<std::vector<std::pair<std::string, std::string>>> provenance;  // per run
  std::vector<std::vector<Slo>> slos;                                        // per run
  Tradeoff tradeoff;
  std::vector<CdfSeries> cdfs;         // one per plotted or unplotted variant with latencies
  std::vector<LoadSweep> sweeps;       // per run, end-to-end latency
  std::vector<std::vector<LoadSweep>> metric_sweeps;  // per run, one per metric its SLOs bound
  std::vector<std::vector<QualityFloor>> floors;      // per run
  std::vector<ScalingSeries> scaling;
  std::vector<CounterSummary> counters;
  std::optional<Comparison> comparison;
  std::vector<Variant> variants;       // every variant row of the runs, every step
  std::map<int64_t, double> goodput;   // variant_id -> requests/s meeting every SLO (reports::goodput)
  std::map<int64_t, double> slo_attainment;  // variant_id -> share of requests meeting every SLO
  // Decoders serving open-loop traffic (reports::serving): empty for runs without serving rows.
  Serving serving;
  std::vector<Timeline> timelines;  // one per serving series: its knee step, else its highest
  // Speculative decoding (reports::speculative): empty for runs without a drafter.
  Speculative speculative;
  // Host types side by side (reports::hosts): empty unless the runs' scenarios ran on priced host
  // types (cibench fleet collect).
  Hosts hosts;
};

// One line of the ranked table.
struct RankedVariant {
  int rank = 0;             // 1-based; 0 for variants that could not be placed
  Variant v;
  std::optional<double> x, y;
  // Every floor of the run: "meets floors" | "below: ..." | "no floor" | "not measured: ..." ("meets
  // floor" / "below floor ..." for a floor set by the user on the y axis).
  std::string floor_verdict;
  std::string slo_verdict;    // "met" | "missed: p95_ms 1200 > 1000" | "no SLO" | "not measured: ttft_p99_ms"
  bool on_frontier = false;
  std::string note;           // why it was not placed
};

ReportData collect_report(Db& db, const std::vector<int64_t>& runs, const ReportOptions& opt = {});
// Ranking: variants meeting every floor and every SLO first, then the others; within a group, when
// y is a quality axis, frontier variants first, then by the x axis (best first); when y is
// throughput (runs without accuracy), by throughput. Unplaced variants last, rank 0. Stepped runs
// rank every step.
std::vector<RankedVariant> rank_variants(const ReportData& d);
// "met" / "missed: ..." / "no SLO" / "not measured: KEYS" for a variant against its run's SLOs
// (the harness's judgement, harness/schema/slo.h, on the stored columns).
std::string slo_verdict(const Variant& v, const std::vector<Slo>& slos);

struct ReportFiles {
  std::string html;      // DIR/report.html
  std::string markdown;  // DIR/report.md
};
// DIR/report.html and DIR/report.md from collect_report. Creates DIR when needed; throws Error
// naming the file that cannot be written.
ReportFiles write_report(Db& db, const std::vector<int64_t>& runs, const std::string& out_dir,
                         const ReportOptions& opt = {});

}  // namespace cibench::reports
