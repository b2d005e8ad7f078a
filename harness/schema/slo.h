#pragma once
// Service-level objectives and quality floors: their one definition, shared by the scenario
// parser (harness/lib/scenario), the run (harness/lib/suite), the store that records them with the
// run, and the readers (reports/, the GUI). A run stores the SLOs and floors in force as JSON
// (runs.slos_json, runs.floors_json); readers decode them here instead of re-reading the TOML.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cibench {

// An upper bound on one percentile of one latency metric: p95_ms = 100 (latency),
// ttft_p99_ms = 500, tpot_p95_ms = 50, queue_p999_ms = 20, service_max_ms = 80.
struct Slo {
  std::string key;               // as written: "ttft_p99_ms"
  std::string metric;            // latency | ttft | tpot | queue | service
  double percentile = 0;         // 50, 90, 95, 99, 99.9 or 100 (max)
  double limit_ms = 0;

  // The variants column it bounds: "ttft_p99_ms", "latency_p999_ms", "service_max_ms".
  std::string column() const;
  bool met_by(double value_ms) const { return value_ms <= limit_ms; }
};

// The metrics an SLO may bound and the percentiles stored for each.
const std::vector<std::string>& slo_metrics();
// Parses a key of the grammar [metric_](p50|p90|p95|p99|p999|p99_9|max)_ms; nullopt otherwise.
// limit_ms is left 0.
std::optional<Slo> parse_slo_key(const std::string& key);
// What a valid key looks like, for error messages.
const char* slo_key_grammar();

// The one SLO judgement, used by the run (on the recorded distributions) and by the reports (on
// the stored columns): met = false when a measured value exceeds its limit; true when every SLO
// was measured and met; nullopt when there is no SLO, or some were not measured and none failed.
struct SloVerdict {
  std::optional<bool> met;
  std::vector<std::string> missed;        // "p95_ms 1200 > 1000"
  std::vector<std::string> unmeasured;    // keys
  std::string detail;                     // every SLO: "p95_ms: latency p95 = 12.3 ms <= 100 ms (met)"
  std::string summary() const;            // "met" | "missed: ..." | "no SLO" | "not measured: ..."
};
SloVerdict judge_slos(const std::vector<Slo>& slos,
                      const std::function<std::optional<double>(const Slo&)>& value_ms);

// One request against every SLO, as vLLM's goodput judges it: each SLO's metric of this request
// (its latency, ttft, tpot, queue wait or service time in ms) at most the SLO's limit, whatever the
// SLO's percentile; a metric the request does not have (nullopt: the tpot of a one-token request)
// is not judged. The one definition behind the stored goodput and slo_attainment (the run) and
// the readers that compute them for older stores from the requests table.
bool request_meets_slos(const std::vector<Slo>& slos,
                        const std::function<std::optional<double>(const std::string& metric)>& value_ms);

// Goodput and SLO attainment of a variant: completed requests meeting every SLO (above), per
// second of the run and as a share of the completed requests.
struct Goodput {
  int64_t requests = 0;  // completed (ok) requests judged
  int64_t met = 0;       // of them, meeting every SLO
  double duration_s = 0;
  double per_s() const { return met / duration_s; }
  double attainment() const { return static_cast<double>(met) / static_cast<double>(requests); }
};

nlohmann::json slos_to_json(const std::vector<Slo>& slos);
// Throws Error naming the field when the JSON is not what slos_to_json writes.
std::vector<Slo> slos_from_json(const nlohmann::json& j);

// A quality floor: a bound on one accuracy column of the variants table. Every floor a scenario
// can set is a row of quality_floor_kinds(); max_accuracy_drop = 0.01 is the floor
// accuracy_delta >= -0.01.
struct FloorKind {
  const char* key;        // the scenario key under [accuracy]: "min_top1_agreement"
  const char* column;     // the variants column it bounds: "top1_agreement"
  bool is_minimum;        // column >= bound (true) or column <= bound (false)
  double sign;            // bound = sign * the scenario's value (-1 for max_accuracy_drop)
};
const std::vector<FloorKind>& quality_floor_kinds();
const FloorKind* find_floor_kind(const std::string& key);  // nullptr when unknown

struct QualityFloor {
  std::string key;     // the scenario key: "max_accuracy_drop"
  double value = 0;    // as written: 0.01
  std::string column;  // "accuracy_delta"
  bool is_minimum = true;
  double bound = 0;    // on the column: -0.01

  // Makes the floor of a scenario key and value; throws Error on an unknown key.
  static QualityFloor make(const std::string& key, double value);
  bool met_by(double column_value) const {
    return is_minimum ? column_value >= bound : column_value <= bound;
  }
  std::string describe() const;  // "accuracy_delta >= -0.01 (max_accuracy_drop = 0.01)"
};

nlohmann::json floors_to_json(const std::vector<QualityFloor>& floors);
std::vector<QualityFloor> floors_from_json(const nlohmann::json& j);

// The knee of a stepped load: the highest offered rate whose step met every SLO. The steps run in
// rising rate order and stop at the first that breaks one, so the knee is found (`reached`) only
// when a step broke an SLO; when every step run met them, the rate the system holds at the SLOs
// lies at or above the highest rate tried, and `qps` is only a lower bound. The run finds it
// (find_knee) and stores variants.knee_qps and knee_reached; readers state it with describe().
struct Knee {
  std::optional<double> qps;  // NULL: no step met the SLOs
  bool reached = false;       // a step above qps broke an SLO (or the lowest did, qps NULL)
  // "20 qps" | "not reached below the highest rate tried (400 qps)" |
  // "none (the lowest rate tried broke an SLO)" | "not measured (no step completed)"
  std::string describe() const;
  // The table form: "20", ">= 400", "none", "-".
  std::string cell() const;
};
// One step as run: its offered rate and its SLO verdict (nullopt, no SLO or one not measured,
// does not meet them).
struct KneeStep {
  double rate_qps = 0;
  std::optional<bool> slo_met;
};
// The knee of the steps run, in the order run (the run stops after the first that breaks an SLO).
Knee find_knee(const std::vector<KneeStep>& steps);

}  // namespace cibench
