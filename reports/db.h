#pragma once
// The read side of the results store: runs, variants, requests, histograms and counters as
// stored, through the sqlite3 C API (no Qt, no engine, no harness beyond harness/schema). The
// analysis over these rows (trade-off and Pareto frontier, latency and load, counters, serving,
// speculative decoding, the compare's bootstrap) is in reports/analysis/, the rendering in
// reports/render/ and gui/: cibench-gui and `cibench report` show the same numbers from the same
// calls.
//
// A value that was not measured is std::nullopt all the way to the screen.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engines/core/error.h"
#include "harness/schema/cost.h"
#include "harness/schema/slo.h"

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
  std::string host_type;      // the fleet host type it ran as (schema 14; "" when none)
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
  std::string host;   // matches hostname, CPU model or host type
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

// ---- the database --------------------------------------------------------------------------

// One stored request (the requests table). A column the store does not have, or NULL, is nullopt.
struct RequestRow {
  int64_t query_index = 0;  // schedule order
  int64_t seq = 0;          // completion order
  bool ok = true;
  double scheduled_ms = 0;
  std::optional<double> latency_ms, queue_ms, service_ms, ttft_ms, tpot_ms;
  std::optional<int64_t> prompt_tokens, output_tokens;
  // The value of a latency metric (latency, queue, service, ttft, tpot); nullopt for another name.
  std::optional<double> metric(const std::string& name) const;
};

// One bucket of a stored latency histogram: [low_ns, high_ns), count requests.
struct HistogramBucket {
  int64_t low_ns = 0, high_ns = 0, count = 0;
};

// One stored counter of a variant (phase "all", scope total or package): a value, or NULL with the
// reason it could not be measured.
struct CounterRow {
  int64_t variant_id = 0;
  std::string name;
  std::optional<double> value;
  std::string unit, source, reason;
};

// A read-only connection: every SQL statement of reports/ is in db.cpp, and what it returns is the
// stored rows as they are; the analysis (analysis/) and the rendering build on these calls only.
// The constructor checks that the file exists, is an SQLite database, carries the cibench schema
// and is not older than kReadsSchemaVersion; otherwise it throws a DbError whose message says
// which (the GUI shows it as is).
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
  // The canonical scenario TOML stored with the run ("" when none).
  std::string scenario_toml(int64_t run_id);

  // Every variant row of the runs (every step), by run, variant and step.
  std::vector<Variant> variants(const std::vector<int64_t>& run_ids);

  // The completed requests' values of a latency metric (latency, queue, service, ttft, tpot),
  // ascending; throws DbError on another metric.
  std::vector<double> request_latencies(int64_t variant_id, const std::string& metric);
  // The variant's stored requests; with a limit, the first `limit` by scheduled arrival.
  std::vector<RequestRow> requests(int64_t variant_id, std::optional<int> limit = std::nullopt);
  int64_t request_count(int64_t variant_id);
  // The non-empty buckets of the variant's histogram of `metric`, by bucket_low_ns.
  std::vector<HistogramBucket> histogram(int64_t variant_id, const std::string& metric);
  // The counters of the runs' variants (phase "all", scope total or package).
  std::vector<CounterRow> counter_rows(const std::vector<int64_t>& run_ids);
  // Every variant row of `scenario`'s runs on a priced host type (harness/schema/cost.h
  // kPricedRowsSql; schema 14), all runs of the store; none in an older store.
  std::vector<PricedRow> priced_rows(const std::string& scenario);

 private:
  struct Rows;
  Rows select(const std::string& sql, const std::vector<std::string>& params = {});
  // A JSON column of the run; nullopt when NULL or when the store predates the column.
  std::optional<nlohmann::json> run_json(int64_t run_id, const char* column);

  sqlite3* db_ = nullptr;
  std::string path_;
  int version_ = 0;
};

// Minimal reader for the canonical scenario TOML stored with a run: "section.key" -> scalar
// text (strings unquoted). Arrays and inline tables are skipped.
std::map<std::string, std::string> scan_toml_scalars(const std::string& toml);

}  // namespace cibench::reports
