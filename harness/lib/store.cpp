#include "harness/lib/store.h"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "engines/core/error.h"
#include "harness/lib/sysinfo.h"
#include "reports/sqlite_row.h"

namespace cibench {
namespace {

// ---- the schema: an ordered list of migrations; version N is the state after migration N ----
// Never edit a migration that has shipped: append a new one (and document it in docs/schema.md).
struct Migration {
  int version;
  const char* description;
  const char* sql;
};

const Migration kMigrations[] = {
    {1, "runs, variants (one row per variant result), counters (long), requests, histograms", R"SQL(
CREATE TABLE runs (
  run_id            INTEGER PRIMARY KEY,
  status            TEXT NOT NULL CHECK (status IN ('running','complete','incomplete','failed')),
  started_utc       TEXT NOT NULL,
  finished_utc      TEXT,
  error             TEXT,
  scenario_name     TEXT NOT NULL,
  scenario_path     TEXT,
  scenario_hash     TEXT NOT NULL,
  scenario_toml     TEXT NOT NULL,
  question          TEXT,
  overrides         TEXT,
  pattern           TEXT,
  seed_arrivals     INTEGER,
  seed_samples      INTEGER,
  seed_lengths      INTEGER,
  model_spec        TEXT NOT NULL,
  model_hash        TEXT,
  model_container   TEXT,
  model_params      INTEGER,
  cibench_version   TEXT,
  cibench_commit    TEXT,
  compiler          TEXT,
  cxx_flags         TEXT,
  build_type        TEXT,
  sanitizer         TEXT,
  hostname          TEXT,
  kernel            TEXT,
  cpu_vendor        TEXT,
  cpu_model         TEXT,
  cpu_flags         TEXT,
  isa_best          TEXT,
  isa_active        TEXT,
  logical_cpus      INTEGER,
  physical_cores    INTEGER,
  physical_cores_reason TEXT,
  mem_total_bytes   INTEGER,
  governor          TEXT,
  governor_reason   TEXT,
  turbo             TEXT,
  turbo_reason      TEXT,
  smt               TEXT,
  smt_reason        TEXT,
  thp               TEXT,
  thp_reason        TEXT,
  pid               INTEGER,
  warnings          TEXT
);
CREATE TABLE variants (
  variant_id        INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  variant_index     INTEGER NOT NULL,
  step_index        INTEGER NOT NULL DEFAULT 0,
  label             TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('running','ok','failed','incomplete')),
  error             TEXT,
  started_utc       TEXT,
  finished_utc      TEXT,
  format            TEXT,
  sparsity          REAL,
  threads           INTEGER,
  workers           INTEGER,
  kv_mode           TEXT,
  isa_requested     TEXT,
  isa_used          TEXT,
  pinning           TEXT,
  pattern           TEXT,
  offered_qps       REAL,
  clients           INTEGER,
  queries           INTEGER,
  failed_queries    INTEGER,
  duration_s        REAL,
  achieved_qps      REAL,
  prompt_tokens     INTEGER,
  output_tokens     INTEGER,
  tokens_per_s      REAL,
  latency_mean_ms REAL, latency_p50_ms REAL, latency_p90_ms REAL, latency_p95_ms REAL,
  latency_p99_ms REAL, latency_p999_ms REAL, latency_max_ms REAL,
  queue_mean_ms REAL, queue_p50_ms REAL, queue_p90_ms REAL, queue_p95_ms REAL,
  queue_p99_ms REAL, queue_p999_ms REAL, queue_max_ms REAL,
  service_mean_ms REAL, service_p50_ms REAL, service_p90_ms REAL, service_p95_ms REAL,
  service_p99_ms REAL, service_p999_ms REAL, service_max_ms REAL,
  ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p95_ms REAL,
  ttft_p99_ms REAL, ttft_p999_ms REAL, ttft_max_ms REAL,
  tpot_mean_ms REAL, tpot_p50_ms REAL, tpot_p90_ms REAL, tpot_p95_ms REAL,
  tpot_p99_ms REAL, tpot_p999_ms REAL, tpot_max_ms REAL,
  percentile_estimator TEXT,
  peak_rss_bytes    INTEGER,
  weight_bytes      INTEGER,
  kv_cache_bytes    INTEGER,
  valid             INTEGER,
  validity_reasons  TEXT,
  slo_met           INTEGER,
  slo_report        TEXT,
  knee_qps          REAL,
  counters_mode     TEXT,
  counters_queries  INTEGER,
  acc_kind          TEXT,
  acc_eval_set      TEXT,
  acc_tokens        INTEGER,
  kl_mean           REAL,
  kl_p99            REAL,
  top1_agreement    REAL,
  ppl               REAL,
  ppl_ref           REAL,
  ppl_ratio         REAL,
  task_accuracy     REAL,
  quality_verdict   TEXT,
  quality_reasons   TEXT,
  acc_unavailable_reason TEXT,
  UNIQUE (run_id, variant_index, step_index)
);
CREATE INDEX variants_run ON variants(run_id);
CREATE TABLE counters (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  phase             TEXT NOT NULL,
  scope             TEXT NOT NULL,
  value             REAL,
  unit              TEXT,
  source            TEXT NOT NULL,
  unavailable_reason TEXT,
  CHECK ((value IS NULL) = (unavailable_reason IS NOT NULL))
);
CREATE INDEX counters_variant ON counters(variant_id);
CREATE TABLE requests (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  query_index       INTEGER NOT NULL,
  worker            INTEGER NOT NULL,
  sample_index      INTEGER,
  prompt_tokens     INTEGER,
  output_tokens     INTEGER,
  ok                INTEGER NOT NULL,
  scheduled_ms      REAL NOT NULL,
  queue_ms          REAL,
  service_ms        REAL,
  latency_ms        REAL,
  ttft_ms           REAL,
  tpot_ms           REAL
);
CREATE INDEX requests_variant ON requests(variant_id);
CREATE TABLE histograms (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  metric            TEXT NOT NULL,
  bucket_low_ns     INTEGER NOT NULL,
  bucket_high_ns    INTEGER NOT NULL,
  count             INTEGER NOT NULL
);
CREATE INDEX histograms_variant ON histograms(variant_id);
CREATE TABLE schema_migrations (
  version           INTEGER PRIMARY KEY,
  description       TEXT NOT NULL,
  applied_utc       TEXT NOT NULL
);
)SQL"},
    {2, "variants: recipe, recipe_params, calibration, quantized_file (how the weights were made)", R"SQL(
ALTER TABLE variants ADD COLUMN recipe TEXT;
ALTER TABLE variants ADD COLUMN recipe_params TEXT;
ALTER TABLE variants ADD COLUMN calibration TEXT;
ALTER TABLE variants ADD COLUMN quantized_file TEXT;
)SQL"},
    {3, "variants: classifier serving (shape, batching, result cache, traffic duplicates) and task accuracy with bootstrap intervals", R"SQL(
ALTER TABLE variants ADD COLUMN shape TEXT;
ALTER TABLE variants ADD COLUMN pad_to INTEGER;
ALTER TABLE variants ADD COLUMN max_batch INTEGER;
ALTER TABLE variants ADD COLUMN max_wait_ms REAL;
ALTER TABLE variants ADD COLUMN batches INTEGER;
ALTER TABLE variants ADD COLUMN cache_enabled INTEGER;
ALTER TABLE variants ADD COLUMN cache_limit_entries INTEGER;
ALTER TABLE variants ADD COLUMN cache_limit_bytes INTEGER;
ALTER TABLE variants ADD COLUMN cache_hits INTEGER;
ALTER TABLE variants ADD COLUMN cache_misses INTEGER;
ALTER TABLE variants ADD COLUMN cache_hit_rate REAL;
ALTER TABLE variants ADD COLUMN cache_evictions INTEGER;
ALTER TABLE variants ADD COLUMN cache_entries INTEGER;
ALTER TABLE variants ADD COLUMN cache_bytes INTEGER;
ALTER TABLE variants ADD COLUMN cache_peak_bytes INTEGER;
ALTER TABLE variants ADD COLUMN traffic TEXT;
ALTER TABLE variants ADD COLUMN duplicate_rate REAL;
ALTER TABLE variants ADD COLUMN expected_duplicate_rate REAL;
ALTER TABLE variants ADD COLUMN task_accuracy_lo REAL;
ALTER TABLE variants ADD COLUMN task_accuracy_hi REAL;
ALTER TABLE variants ADD COLUMN macro_f1 REAL;
ALTER TABLE variants ADD COLUMN ref_task_accuracy REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta_lo REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta_hi REAL;
ALTER TABLE variants ADD COLUMN bootstrap_resamples INTEGER;
)SQL"},
};

void check(int rc, sqlite3* db, const std::string& path, const std::string& what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw StoreError(str(path, ": ", what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

void bind(sqlite3_stmt* st, int i, const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) sqlite3_bind_null(st, i);
  else if (auto* x = std::get_if<int64_t>(&v)) sqlite3_bind_int64(st, i, *x);
  else if (auto* d = std::get_if<double>(&v)) sqlite3_bind_double(st, i, *d);
  else {
    const std::string& s = std::get<std::string>(v);
    sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
}

struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
};

}  // namespace

size_t QueryResult::col(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return i;
  throw StoreError(str("no column '", name, "' in the result"));
}

std::string sql_to_string(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  if (auto* x = std::get_if<int64_t>(&v)) return std::to_string(*x);
  if (auto* d = std::get_if<double>(&v)) return str(*d);
  return std::get<std::string>(v);
}

nlohmann::json sql_to_json(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  if (auto* x = std::get_if<int64_t>(&v)) return *x;
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

nlohmann::json QueryResult::to_json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json o = nlohmann::json::object();
    for (size_t i = 0; i < columns.size(); ++i) o[columns[i]] = sql_to_json(r[i]);
    a.push_back(std::move(o));
  }
  return a;
}

Store::Store(const std::string& path, bool create) : path_(path) {
  namespace fs = std::filesystem;
  if (!create && !fs::exists(path)) throw StoreError(str(path, ": no such results database"));
  if (create) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
  }
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(str(path, ": cannot open: ", msg));
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA journal_mode = WAL");
  exec("PRAGMA synchronous = NORMAL");  // with WAL: a committed transaction survives a crash
  exec("PRAGMA foreign_keys = ON");
  migrate();
  mark_stale_runs();
}

Store::~Store() { sqlite3_close(db_); }

int Store::schema_version() {
  auto r = query("PRAGMA user_version");
  return static_cast<int>(std::get<int64_t>(r.rows.at(0).at(0)));
}

void Store::migrate() {
  const int v = schema_version();
  if (v > kSchemaVersion)
    throw StoreError(str(path_, ": schema version ", v, " is newer than this cibench understands (",
                         kSchemaVersion, "); upgrade cibench"));
  for (const Migration& m : kMigrations) {
    if (m.version <= v) continue;
    Transaction t(*this);
    exec(m.sql);
    insert("schema_migrations", {{"version", int64_t{m.version}},
                                 {"description", std::string(m.description)},
                                 {"applied_utc", utc_now_iso()}});
    exec(str("PRAGMA user_version = ", m.version));
    t.commit();
  }
}

void Store::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw StoreError(str(path_, ": ", msg, " (in: ", sql.substr(0, 80), ")"));
  }
}

QueryResult Store::query(const std::string& sql, const std::vector<SqlValue>& params) {
  Stmt s;
  check(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr), db_, path_, "prepare '" + sql.substr(0, 80) + "'");
  for (size_t i = 0; i < params.size(); ++i) bind(s.st, static_cast<int>(i + 1), params[i]);
  QueryResult r;
  const int nc = sqlite3_column_count(s.st);
  for (int i = 0; i < nc; ++i) r.columns.push_back(sqlite3_column_name(s.st, i));
  int rc;
  while ((rc = sqlite3_step(s.st)) == SQLITE_ROW) r.rows.push_back(sqlite_row(s.st));
  check(rc, db_, path_, "query");
  return r;
}

int64_t Store::insert(const std::string& table, const Fields& fields) {
  std::string cols, qs;
  for (size_t i = 0; i < fields.size(); ++i) {
    cols += (i ? "," : "") + fields[i].first;
    qs += i ? ",?" : "?";
  }
  Stmt s;
  const std::string sql = str("INSERT INTO ", table, " (", cols, ") VALUES (", qs, ")");
  check(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr), db_, path_, "prepare insert into " + table);
  for (size_t i = 0; i < fields.size(); ++i) bind(s.st, static_cast<int>(i + 1), fields[i].second);
  check(sqlite3_step(s.st), db_, path_, "insert into " + table);
  return sqlite3_last_insert_rowid(db_);
}

void Store::update(const std::string& table, const std::string& key, int64_t id, const Fields& fields) {
  if (fields.empty()) return;
  std::string set;
  for (size_t i = 0; i < fields.size(); ++i) set += (i ? "," : "") + fields[i].first + "=?";
  Stmt s;
  const std::string sql = str("UPDATE ", table, " SET ", set, " WHERE ", key, "=?");
  check(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr), db_, path_, "prepare update of " + table);
  for (size_t i = 0; i < fields.size(); ++i) bind(s.st, static_cast<int>(i + 1), fields[i].second);
  sqlite3_bind_int64(s.st, static_cast<int>(fields.size() + 1), id);
  check(sqlite3_step(s.st), db_, path_, "update " + table);
}

void Store::insert_many(const std::string& table, const std::vector<std::string>& columns,
                        const std::vector<std::vector<SqlValue>>& rows) {
  if (rows.empty()) return;
  std::string cols, qs;
  for (size_t i = 0; i < columns.size(); ++i) {
    cols += (i ? "," : "") + columns[i];
    qs += i ? ",?" : "?";
  }
  Stmt s;
  const std::string sql = str("INSERT INTO ", table, " (", cols, ") VALUES (", qs, ")");
  check(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr), db_, path_, "prepare insert into " + table);
  for (const auto& row : rows) {
    CIBENCH_CHECK(row.size() == columns.size(), "insert_many: row has ", row.size(), " values for ",
                  columns.size(), " columns");
    sqlite3_reset(s.st);
    for (size_t i = 0; i < row.size(); ++i) bind(s.st, static_cast<int>(i + 1), row[i]);
    check(sqlite3_step(s.st), db_, path_, "insert into " + table);
  }
}

Store::Transaction::Transaction(Store& s) : s_(s) { s_.exec("BEGIN IMMEDIATE"); }
Store::Transaction::~Transaction() {
  if (!done_) {
    try {
      s_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Store::Transaction::commit() {
  s_.exec("COMMIT");
  done_ = true;
}

int Store::mark_stale_runs() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  auto r = query("SELECT run_id, pid, hostname FROM runs WHERE status = 'running'");
  int n = 0;
  for (const auto& row : r.rows) {
    const int64_t id = std::get<int64_t>(row[0]);
    const auto* pid = std::get_if<int64_t>(&row[1]);
    const std::string h = sql_to_string(row[2]);
    if (h != host) continue;  // another machine's run (shared file): not ours to judge
    if (pid && *pid > 0 && (kill(static_cast<pid_t>(*pid), 0) == 0 || errno == EPERM))
      continue;  // still running
    Transaction t(*this);
    update("runs", "run_id", id,
           {{"status", std::string("incomplete")},
            {"error", std::string("the process ended before the run finished (killed or crashed); "
                                  "marked incomplete when the store was next opened")}});
    exec(str("UPDATE variants SET status='incomplete', error='interrupted' WHERE run_id=", id,
             " AND status='running'"));
    t.commit();
    ++n;
  }
  return n;
}

int64_t Store::resolve_run(const std::string& ref) {
  if (ref == "last" || ref.rfind("last~", 0) == 0) {
    int64_t back = 0;
    if (ref.size() > 5) back = std::stoll(ref.substr(5));
    auto r = query("SELECT run_id FROM runs ORDER BY run_id DESC LIMIT 1 OFFSET ?", {back});
    if (r.rows.empty()) throw StoreError(str(path_, ": no run '", ref, "'"));
    return std::get<int64_t>(r.rows[0][0]);
  }
  char* end = nullptr;
  const long long id = std::strtoll(ref.c_str(), &end, 10);
  if (ref.empty() || *end) throw StoreError(str("run '", ref, "': expected a run id, 'last' or 'last~N'"));
  auto r = query("SELECT run_id FROM runs WHERE run_id = ?", {static_cast<int64_t>(id)});
  if (r.rows.empty()) throw StoreError(str(path_, ": no run ", id));
  return id;
}

}  // namespace cibench
