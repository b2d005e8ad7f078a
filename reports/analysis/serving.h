#pragma once
// Decoders serving open-loop traffic: throughput against latency with the SLOs and the knee,
// goodput, batch occupancy, and the requests of one step as a timeline.
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "reports/analysis/latency.h"
#include "reports/db.h"

namespace cibench::reports {

// One step of a serving series: a variant's row at one offered rate. Every value is nullopt when
// the run did not measure it (the row's *_reason columns say why), never 0.
struct ServingStep {
  Variant v;
  double offered_qps = 0;
  std::optional<double> achieved_qps;  // completed requests / duration
  std::optional<double> goodput_qps;   // reports::goodput: requests meeting every SLO per second
  std::optional<double> slo_attainment;
  std::string goodput_reason;          // why goodput_qps is nullopt
  SloVerdict verdict;                  // this step against every SLO of the run (LoadCurve's)
  // The x of the throughput-latency charts: achieved, or offered when the chart plots offered.
  std::optional<double> x(bool achieved) const { return achieved ? achieved_qps : std::optional<double>(offered_qps); }
};

// One variant of a run across its offered rates (a LoadCurve of reports::load_sweep, same steps, same
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
struct TimelineRequest : RequestRow {
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

// Requests per second that met every SLO on their own (harness/schema/slo.h request_meets_slos:
// each request's latency, ttft, ... at most the SLO's limit; a request without that metric, e.g.
// one token and no tpot, is not judged on it), over the variant's duration: vLLM's goodput. The
// run stores it (variants.goodput_qps, schema 7); for older rows it is computed here with the
// same rule from the requests table. nullopt without SLOs, without a duration, or when not
// every request was kept.
std::optional<double> goodput(Db& db, const Variant& v, const std::vector<Slo>& slos);
// The share of completed requests that met every SLO (variants.slo_attainment), as goodput().
std::optional<double> slo_attainment(Db& db, const Variant& v, const std::vector<Slo>& slos);
// The serving views' data for these runs: one series per variant that has serving rows
// (is_serving_row), by offered rate; empty when none has.
Serving serving(Db& db, const std::vector<int64_t>& run_ids);
// The requests of one variant row by scheduled arrival, the first `max_requests` of them.
Timeline timeline(Db& db, const Variant& v, int max_requests = kTimelineRequests);

}  // namespace cibench::reports
