#pragma once
// Latency distributions, percentiles against offered load with the SLOs and the knee, and scaling
// against threads x workers.
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"

namespace cibench::reports {

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

// The CDF of one variant's `metric`: every request when all were kept, else its histogram.
CdfSeries latency_cdf(Db& db, int64_t variant_id, const std::string& metric = "latency");
// Percentiles of `metric` (latency, ttft, tpot, queue, service) at each offered rate; throws
// DbError on another metric.
LoadSweep load_sweep(Db& db, int64_t run_id, const std::string& metric = "latency");
std::vector<ScalingSeries> scaling(Db& db, const std::vector<int64_t>& run_ids);

}  // namespace cibench::reports
