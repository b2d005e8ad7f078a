#pragma once
// The read side of the results store, shared by cibench-gui and `cibench report` so that both
// show the same numbers from the same queries. Plain C++ over the sqlite3 C API: no Qt, no
// engine. Every view's data comes from here: the runs list and its filters, a run's provenance,
// the trade-off points with the quality floor and the Pareto frontier (computed once, here), the
// latency CDF, percentiles against offered load with the SLOs, scaling against threads x workers,
// counters (unavailable stays unavailable, with its reason: never a zero) and the compare of two
// runs with bootstrap confidence intervals.
//
// A value that was not measured is std::nullopt all the way to the screen.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engines/core/error.h"
#include "harness/schema/slo.h"
#include "harness/schema/stats.h"

struct sqlite3;

namespace cibench::reports {

class DbError : public Error {
 public:
  using Error::Error;
};

// The oldest schema version whose tables and columns this code reads (see docs/schema.md).
constexpr int kReadsSchemaVersion = 1;

// ---- runs ----------------------------------------------------------------------------------

struct RunInfo {
  int64_t run_id = 0;
  std::string status;         // running | complete | incomplete | failed
  std::string started_utc;    // ISO 8601
  std::string finished_utc;
  std::string error;
  std::string scenario_name;
  std::string question;
  std::string pattern;
  std::string model_spec;
  std::string hostname;
  std::string cpu_model;
  std::string isa_active;
  std::string cibench_commit;
  // "scenario" (cibench run), or the command whose results were stored with --db ("bench",
  // "recipes", "bert-recipes"; scenario_name is then the command's name) and its command line.
  std::string kind = "scenario";
  std::string command;
  int64_t variants = 0;       // variant rows (all steps)
  // What produced the run, for headings: "scenario quickstart" or the stored command line.
  std::string origin() const;
};

// Case-insensitive substring filters; empty matches everything. Dates are compared on the first
// 10 characters of started_utc ("YYYY-MM-DD"), inclusive.
struct RunFilter {
  std::string scenario;
  std::string host;   // matches hostname or CPU model
  std::string model;
  std::string date_from;
  std::string date_to;
};

// ---- variants ------------------------------------------------------------------------------

// One row of `variants` (one variant at one step of a run).
struct Variant {
  int64_t variant_id = 0;
  int64_t run_id = 0;
  int64_t variant_index = 0;
  int64_t step_index = 0;
  std::string label;
  std::string status;  // running | ok | failed | incomplete
  std::string error;
  std::string format;
  std::optional<double> sparsity;
  std::optional<int64_t> threads;
  std::optional<int64_t> workers;
  std::map<std::string, std::string> text;  // every non-NULL text column
  std::map<std::string, double> num;        // every non-NULL numeric column

  std::optional<double> get(const std::string& column) const;
  std::string text_of(const std::string& column) const;  // "" when NULL or absent
  // "f32 s=0 t2 w1" style short name for legends and tables.
  // "int8 sp0.5 t2 w1 @4qps": the rate is added for a stepped run's steps unless with_rate is false.
  std::string short_name(bool with_rate = true) const;
  // The full configuration, one "key: value" per line (hover text, report tables).
  std::string config() const;
};

// ---- axes and the Pareto frontier ---------------------------------------------------------

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

// ---- latency, load, scaling, counters, compare ------------------------------------------

struct CdfSeries {
  int64_t variant_id = 0;
  std::string name;
  std::string source;         // "requests" (every request) or "histogram"
  std::vector<Point> points;  // x: latency in ms (ascending), y: fraction of requests <= x
  int64_t count = 0;
};

struct LoadCurve {
  int64_t variant_index = 0;
  std::string name;
  // one entry per step with an offered rate: offered, achieved, and the sweep's metric at p50, p95,
  // p99 (ms)
  struct Step {
    double offered_qps = 0;
    std::optional<double> achieved_qps, p50_ms, p95_ms, p99_ms;
    std::map<double, double> percentiles;  // every stored percentile of the metric (100 = max), ms
    std::optional<bool> slo_met;           // as stored by the run
    SloVerdict verdict;                    // this step judged against every SLO of the run
    int64_t queries = 0;
  };
  std::vector<Step> steps;
  std::optional<double> knee_qps;  // as stored by the run
  // The knee from the steps' verdicts: the highest offered rate at which this step and every
  // lower one met every SLO; nullopt when the first step missed (or nothing was judged).
  std::optional<double> knee() const;
  Knee knee_of_steps() const;  // find_knee on the steps' verdicts
  // "knee 2 qps (the next rate, 4 qps, missed: ...)", "not reached below the highest rate tried
  // (4 qps)", "no rate met every SLO (lowest tried: 0.5 qps)" or "no SLO".
  std::string knee_text() const;
};

struct LoadSweep {
  std::string pattern;  // the run's load pattern ("stepped" for stepped rates)
  std::string metric = "latency";  // latency | ttft | tpot | queue | service
  std::vector<LoadCurve> curves;
  std::vector<Slo> slos;
  // A stepped-rate run (even if it stopped after its first step), or any curve with two or more
  // offered rates: worth a percentiles-against-load chart.
  bool has_steps() const;
};

struct ScalingPoint {
  int64_t variant_id = 0;
  int64_t threads = 1;
  int64_t workers = 1;
  std::optional<double> achieved_qps, tokens_per_s, p50_ms, p95_ms;
  std::optional<double> decode_tokens_per_s;  // bench runs
  // What a scaling chart plots as throughput: queries/s, or a bench run's decode rate.
  std::optional<double> throughput(bool decode) const { return decode ? decode_tokens_per_s : achieved_qps; }
};

struct ScalingSeries {
  std::string name;  // everything but threads: "f32 w2", "int8 w1 cache" (format, sparsity, workers, other settings as short_name)
  std::vector<ScalingPoint> points;  // by threads x workers
};

// True when no point has queries/s but one has a decode rate (runs of `cibench bench`): the
// throughput charts then plot decode tokens/s.
bool scaling_plots_decode(const std::vector<ScalingSeries>& series);

struct CounterValue {
  std::optional<double> value;
  std::string unit;
  std::string source;
  std::string reason;  // why unavailable (set exactly when !value)
};

struct CounterSummary {
  Variant v;
  std::string mode;  // counters_mode: separate | same
  std::map<std::string, CounterValue> values;  // keyed by counter_names()
};

// ipc, l1d_mpki, l2_mpki, l3_mpki, branch_mpki, energy_j, energy_per_request_j
const std::vector<std::string>& counter_names();
// The operating system's counters, measured without a PMU: task_clock_ms, context_switches,
// page_faults, cpu_migrations (CounterSummary::values holds them too).
const std::vector<std::string>& software_counter_names();
std::string counter_title(const std::string& name);  // "IPC", "L1D misses / 1000 instr", ...

// Which variants of `all` (every variant row of the runs, as Db::variants returns them) the rows
// `subset` are, numbered as cibench run and show number them: from 1, of the run's variants.
// "all 8 variants", "the only variant" (of a run of one), "variant 2 of 8", "variants 1-3, 5 of
// 8"; a stepped variant with only some
// of its steps in `subset`: "variant 2 (steps 1-2 of 4) of 3"; several runs, one part each:
// "run 3: variants 1-2 of 4; run 5: all 2 variants". "all" is said only when every variant (and
// step) of the run is in `subset`.
std::string variant_set_text(const std::vector<Variant>& subset, const std::vector<Variant>& all);

// Counters unavailable for some of `rows` (Db::counters), one entry per distinct reason, in the
// order of counter_names() then software_counter_names(); within a reason the counters that
// share the same variants are named together with those variants (variant_set_text against `all`).
struct CounterGap {
  std::string reason;
  struct Group {
    std::vector<std::string> counters;  // titles (counter_title)
    std::string variants;               // "all 8 variants", "variants 3-8 of 9"
  };
  std::vector<Group> groups;
  // "IPC, L1D misses / 1000 instr (variants 1, 3 of 4); energy (J) (all 4 variants): REASON"
  std::string text() const;
};
std::vector<CounterGap> counter_gaps(const std::vector<CounterSummary>& rows, const std::vector<Variant>& all);

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

// ---- serving: decoders under open-loop load (batching none / static / continuous) ----------

// One step of a serving series: a variant's row at one offered rate. Every value is nullopt when
// the run did not measure it (the row's *_reason columns say why), never 0.
struct ServingStep {
  Variant v;
  double offered_qps = 0;
  std::optional<double> achieved_qps;  // completed requests / duration
  std::optional<double> goodput_qps;   // Db::goodput: requests meeting every SLO per second
  std::optional<double> slo_attainment;
  std::string goodput_reason;          // why goodput_qps is nullopt
  SloVerdict verdict;                  // this step against every SLO of the run (LoadCurve's)
  // The x of the throughput-latency charts: achieved, or offered when the chart plots offered.
  std::optional<double> x(bool achieved) const { return achieved ? achieved_qps : std::optional<double>(offered_qps); }
};

// One variant of a run across its offered rates (a LoadCurve of Db::load_sweep, same steps, same
// knee), with the serving measures of each step.
struct ServingSeries {
  int64_t run_id = 0;
  int64_t variant_index = 0;
  // What tells it from the other series: "b8 batching=continuous" (Serving::common holds the rest,
  // "w8a8 t1 w1"), "run 3: " first when several runs are shown; the whole name for a lone series.
  std::string name;
  std::string batching; // none | static | continuous | "" (not recorded)
  LoadCurve curve;      // the steps' rates and SLO verdicts: knee_of_steps(), knee_text()
  std::vector<ServingStep> steps;  // by offered rate, as curve.steps
  Knee knee() const { return curve.knee_of_steps(); }
  // The step at the knee (the highest rate meeting every SLO), nullptr when there is none.
  const ServingStep* knee_step() const;
  // The step whose requests a timeline shows: the knee's, else the highest rate's.
  const ServingStep* timeline_step() const;
};

// A latency metric of the throughput-latency charts: one percentile column.
struct ServingMetric {
  std::string column;  // "ttft_p99_ms"
  std::string title;   // "TTFT p99"
  std::optional<Slo> slo;  // the run's SLO on this column, when it has one
};

struct Serving {
  std::vector<int64_t> runs;
  std::vector<Slo> slos;  // every SLO of the runs (the first run's when they share a key)
  // The y axes: the columns the runs' SLOs bound (TTFT p99 and TPOT p99 when no SLO does).
  std::vector<ServingMetric> metrics;
  // x = achieved throughput when every plotted step measured it, else the offered rate.
  bool x_achieved = true;
  std::vector<ServingSeries> series;
  // The settings every series shares ("w8a8 t1 w1"), left out of their names; "" for one series.
  std::string common;
  // The column the occupancy chart plots against batch_occupancy_mean: tpot or itl (p50, p99).
  std::string occupancy_metric = "tpot";
  bool empty() const { return series.empty(); }
  std::string x_title() const;  // "achieved (completed req/s)" | "offered rate (req/s; achieved not measured)"
  // Each series' knee (LoadCurve::knee_text), and every value not measured, with its reason and
  // the rates it concerns: "NAME: batch occupancy: batching none: ... (every step)."
  std::vector<std::string> notes() const;
};

// Whether a variant row is a decoder serving open-loop traffic: an offered rate, a time to first
// token, and a serving measure of schema 7 or 8 (batching mode, engine steps, inter-token latency
// or goodput). Runs with no such row have no serving views.
bool is_serving_row(const Variant& v);

// One request of a timeline: arrival (scheduled), queued, first token, done; times in ms since
// the start of the step. Segments are nullopt where the request's value was not stored.
struct TimelineRequest {
  int64_t query_index = 0;  // schedule order
  int64_t seq = 0;          // completion order
  bool ok = true;
  double scheduled_ms = 0;
  std::optional<double> queue_ms, service_ms, ttft_ms, latency_ms;
  std::optional<int64_t> prompt_tokens, output_tokens;
  // The bars: [scheduled, scheduled + queue], [.., scheduled + ttft], [.., scheduled + latency];
  // a segment whose ends were not measured is nullopt.
  std::optional<std::pair<double, double>> queued() const;
  std::optional<std::pair<double, double>> to_first_token() const;
  std::optional<std::pair<double, double>> decode() const;
  // Without a first token (a classifier): [scheduled + queue, scheduled + latency].
  std::optional<std::pair<double, double>> service() const;
};

struct Timeline {
  Variant v;
  std::string name;  // the series' name and the step ("... @4qps")
  std::string why;   // "knee step" | "highest step (no knee)" | "selected"
  std::vector<TimelineRequest> requests;  // by scheduled arrival, at most the cap
  int64_t stored = 0;   // request rows stored for the variant
  int64_t queries = 0;  // requests the variant completed (variants.queries)
  // "the first 40 of 240 requests by arrival" / "all 12 requests" (+ "; only the first N completed were kept")
  std::string coverage() const;
  // Requests without a queue wait or a latency, failed ones; nothing when every bar is whole.
  std::vector<std::string> notes() const;
};

// The number of requests a timeline shows at most: more bars than this are unreadable.
inline constexpr int kTimelineRequests = 40;

// ---- speculative decoding (schema 10) ------------------------------------------------------

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

// The drafter as a legend shows it: a draft model by its file name without the extension
// ("draft:/models/stories260K.bin" -> "draft:stories260K"); the others as stored.
std::string drafter_name(const std::string& speculative);

// ---- the database --------------------------------------------------------------------------

// A read-only connection. The constructor checks that the file exists, is an SQLite database,
// carries the cibench schema and is not older than kReadsSchemaVersion; otherwise it throws a
// DbError whose message says which (the GUI shows it as is).
class Db {
 public:
  explicit Db(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  int schema_version() const { return version_; }
  // Changes whenever another connection commits (PRAGMA data_version): live refresh.
  int64_t data_version();

  std::vector<RunInfo> runs(const RunFilter& f = {});
  RunInfo run(int64_t run_id);  // throws when absent
  // Resolves a run id, "last" or "last~N".
  int64_t resolve_run(const std::string& ref);
  // Every non-empty column of the run, in schema order (key, value).
  std::vector<std::pair<std::string, std::string>> provenance(int64_t run_id);
  // The SLOs and quality floors the run was judged by: the typed copies stored with the run
  // (runs.slos_json / floors_json, schema 4), or for older runs the stored scenario's [slo] and
  // [accuracy] keys read with the same definitions (harness/schema/slo.h).
  std::vector<Slo> slos(int64_t run_id);
  std::vector<QualityFloor> floors(int64_t run_id);
  // The run's quality floor on a y axis (its variants column), if the scenario set one:
  // (scenario key, bound on the column), e.g. ("max_accuracy_drop", -0.01) for accuracy_delta.
  std::optional<std::pair<std::string, double>> scenario_floor(int64_t run_id, const std::string& y_key);

  std::vector<Variant> variants(const std::vector<int64_t>& run_ids);
  // Default axes for these runs: x = latency p95 when measured (else throughput), y = the column
  // of the first run's quality floor that the variants have (a classifier's max_accuracy_drop:
  // accuracy_delta), else the first accuracy axis any variant has.
  // The views follow the scenario: x = the column of the run's SLO on end-to-end latency with the
  // highest percentile, else its SLO with the highest percentile, else latency p95 (else the first
  // x axis measured); y = the column of the run's first quality floor the variants have (a
  // classifier's max_accuracy_drop: accuracy_delta), else the first quality axis measured that
  // differs between variants, else throughput: tokens/s when measured, else queries/s.
  std::pair<std::string, std::string> default_axes(const std::vector<int64_t>& run_ids);
  // Every variant against every floor of its run.
  FloorsVerdict judge_floors(const Variant& v);
  // One point per variant (its first step; accuracy columns from any step of that variant), or per
  // step for stepped runs.
  // floor: nullopt = the scenario's floor for the y axis (of the first run that has one), or no
  // floor at all when use_scenario_floor is false.
  Tradeoff tradeoff(const std::vector<int64_t>& run_ids, const std::string& x_key,
                    const std::string& y_key, std::optional<double> floor = std::nullopt,
                    bool use_scenario_floor = true);

  CdfSeries latency_cdf(int64_t variant_id, const std::string& metric = "latency");
  // Percentiles of `metric` (latency, ttft, tpot, queue, service) at each offered rate; throws
  // DbError on another metric.
  LoadSweep load_sweep(int64_t run_id, const std::string& metric = "latency");
  std::vector<ScalingSeries> scaling(const std::vector<int64_t>& run_ids);
  std::vector<CounterSummary> counters(const std::vector<int64_t>& run_ids);
  // Requests per second that met every SLO on their own (harness/schema/slo.h request_meets_slos:
  // each request's latency, ttft, ... at most the SLO's limit; a request without that metric, e.g.
  // one token and no tpot, is not judged on it), over the variant's duration: vLLM's goodput. The
  // run stores it (variants.goodput_qps, schema 7); for older rows it is computed here with the
  // same rule from the requests table. nullopt without SLOs, without a duration, or when not
  // every request was kept.
  std::optional<double> goodput(const Variant& v, const std::vector<Slo>& slos);
  // The share of completed requests that met every SLO (variants.slo_attainment), as goodput().
  std::optional<double> slo_attainment(const Variant& v, const std::vector<Slo>& slos);
  // The serving views' data for these runs: one series per variant that has serving rows
  // (is_serving_row), by offered rate; empty when none has.
  Serving serving(const std::vector<int64_t>& run_ids);
  // The speculative-decoding views' data for these runs: one series per (run, target build,
  // drafter) over its rows with a drafter (variants.speculative not NULL and not "off"), the off
  // rows as baselines, the lowest TPOT p95 per run and build. Empty when no row has a drafter
  // (stores before schema 10, other families). Throws DbError naming the variant when its
  // spec_acceptance_by_position is not a JSON array of numbers and nulls.
  Speculative speculative(const std::vector<int64_t>& run_ids);
  // The requests of one variant row by scheduled arrival, the first `max_requests` of them.
  Timeline timeline(const Variant& v, int max_requests = kTimelineRequests);
  // Defaults as `cibench compare`: 2000 resamples, seed 1.
  Comparison compare(int64_t run_a, int64_t run_b, int resamples = 2000, uint64_t seed = 1);
  // Runs that can be compared with `run_id` without a warning: the same scenario and model,
  // newest first (the run itself excluded). The GUI offers these as B; it never picks another.
  std::vector<int64_t> comparable_runs(int64_t run_id);

 private:
  struct Rows;
  Rows select(const std::string& sql, const std::vector<std::string>& params = {});
  std::vector<double> request_latencies(int64_t variant_id, const std::string& metric);
  std::optional<Goodput> goodput_of(const Variant& v, const std::vector<Slo>& slos);
  std::vector<double> compare_samples(const Variant& v, const std::string& metric, bool* from_histogram);
  std::string scenario_toml(int64_t run_id);
  // A JSON column of the run; nullopt when NULL or when the store predates the column.
  std::optional<nlohmann::json> run_json(int64_t run_id, const char* column);

  sqlite3* db_ = nullptr;
  std::string path_;
  int version_ = 0;
};

// Minimal reader for the canonical scenario TOML stored with a run: "section.key" -> scalar
// text (strings unquoted). Arrays and inline tables are skipped.
std::map<std::string, std::string> scan_toml_scalars(const std::string& toml);

// A harness label without the default settings: "int8 t2 w1 kv=preallocated isa=auto" ->
// "int8 t2 w1" (tables and axes; matching still uses the full label).
std::string compact_label(const std::string& label);

// Number formatting shared by the GUI and the reports ("12.3", "0.987", "1.23e+04").
std::string fmt_num(double v, int significant = 4);
std::string fmt_opt(const std::optional<double>& v, int significant = 4);  // "n/a" when absent

}  // namespace cibench::reports
