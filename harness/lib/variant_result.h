#pragma once
// The measured result of one variant at one step, typed: run_step fills it, the row writer
// (fields()) stores it in `variants` and the console reporter (console_lines()) prints it, so the
// store and the console cannot disagree; `cibench run --json`, `show` and `export` read the stored
// row back. Unmeasured is nullopt here and NULL in the row.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/lib/family.h"
#include "harness/lib/metrics.h"
#include "harness/lib/store.h"

namespace cibench {

// One latency metric's summary in milliseconds (nullopt when no request measured it).
struct MetricSummary {
  std::optional<double> mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms;
  static MetricSummary of(const Distribution& d);
};

// The accuracy columns of a variants row (acc_kind .. quality_reasons): a classifier's task
// accuracy with its intervals, or a language model's KL, top-1 and perplexity. Shared by the
// suite's rows and the rows of the recipes commands.
Fields accuracy_fields(const ClassifierAccuracy& c);
Fields accuracy_fields(const AccuracyResult& a);

struct VariantResult {
  // What ran.
  std::optional<std::string> isa_used;
  std::string pinning;
  std::optional<int64_t> weight_bytes, kv_cache_bytes;
  std::optional<int64_t> repacked_weight_bytes;  // SutInfo's: resident beside weight_bytes
  // The conversion of a quantised source's weights (SutInfo's; NULL with the reason).
  std::optional<double> weight_conversion_rel_rms;
  std::optional<std::string> weight_conversion;
  std::string weight_conversion_reason;
  // Resident-set peaks (VmHWM) of this variant alone: while serving (restarted after the build,
  // read after the timed run) and with the build (restarted before it); nullopt with the reason
  // when the peak could not be restarted or read.
  std::optional<int64_t> peak_rss_bytes, peak_rss_load_bytes;
  std::string peak_rss_reason;
  // The timed run.
  int64_t queries = 0, failed_queries = 0;
  double duration_s = 0;
  std::optional<int64_t> prompt_tokens;  // all requests kept: their sum
  int64_t output_tokens = 0;
  int64_t batches = 0;
  std::string percentile_estimator;
  std::array<MetricSummary, kMetricCount> metrics;  // indexed by Metric
  // Serving: inter-token latency (every gap between consecutive tokens of a request).
  int64_t itl_count = 0;              // gaps measured (stored NULL, with itl_reason, when 0)
  std::string itl_reason;             // why the ITL is NULL (no request had two tokens)
  // Goodput (requests/s meeting every SLO, vLLM's definition: request_meets_slos) and the share
  // of completed requests that met every SLO; nullopt with the reason.
  std::optional<double> goodput_qps, slo_attainment;
  std::string goodput_reason;
  // Requests in flight (arrival to completion) and queued (arrival to service start) over the
  // run: time-weighted mean and maximum (harness/lib/metrics.h occupancy); the maxima need every
  // request kept (nullopt with the reason).
  std::optional<double> inflight_mean, queue_depth_mean;
  std::optional<int64_t> inflight_max, queue_depth_max;
  std::string concurrency_reason;
  std::string arrival_process;        // "poisson 4 qps", "gamma burstiness 0.5 at 4 qps", "closed loop, 2 clients"
  // Traffic.
  std::optional<std::string> traffic;
  std::optional<double> duplicate_rate, expected_duplicate_rate;
  // Judgements.
  std::vector<std::string> invalid_reasons;  // empty: the run rules were met
  std::optional<bool> slo_met;               // nullopt: no SLO, or one not measured (and none failed)
  std::string slo_report;
  // Counters (a separate profiling pass, or the timed run itself).
  std::optional<int64_t> counters_queries;
  // What only the model family measures (e.g. the result cache), and the variant's quality.
  Fields family_fields;
  std::vector<std::string> family_lines;
  VariantQuality quality;

  bool valid() const { return invalid_reasons.empty(); }
  const MetricSummary& metric(Metric m) const { return metrics[static_cast<size_t>(m)]; }
  std::optional<double> achieved_qps() const;
  std::optional<double> tokens_per_s() const;

  // The `variants` columns of a finished variant (status ok).
  Fields fields() const;
  // The console report, one line each.
  std::vector<std::string> console_lines() const;
};

}  // namespace cibench
