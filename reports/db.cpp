#include "reports/db.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <variant>

#include "harness/schema/run_ref.h"
#include "harness/schema/sql_value.h"
#include "harness/schema/sqlite_error.h"
#include "reports/format.h"

namespace cibench::reports {
namespace {


std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_ci(const std::string& hay, const std::string& needle) {
  return needle.empty() || lower(hay).find(lower(needle)) != std::string::npos;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string as_text(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt_num(*d, 6);
  return std::get<std::string>(v);
}

std::optional<double> as_num(const SqlValue& v) { return sql_number(v); }

int64_t as_int(const SqlValue& v, int64_t dflt = 0) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  return dflt;
}

std::string in_list(size_t n) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s + ")";
}

// The columns read by this file, per table (a database lacking one is too old for it).
const std::vector<std::pair<std::string, std::vector<std::string>>>& required_columns() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> r{
      {"runs", {"run_id", "status", "started_utc", "finished_utc", "error", "scenario_name",
                "scenario_toml", "question", "pattern", "model_spec", "hostname", "cpu_model",
                "isa_active", "cibench_commit"}},
      {"variants", {"variant_id", "run_id", "variant_index", "step_index", "label", "status", "error",
                    "format", "sparsity", "threads", "workers", "offered_qps", "achieved_qps",
                    "queries", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "counters_mode",
                    "counters_queries", "top1_agreement", "kl_mean", "ppl_ratio", "task_accuracy",
                    "knee_qps", "slo_met"}},
      {"counters", {"variant_id", "name", "phase", "scope", "value", "unit", "source",
                    "unavailable_reason"}},
      {"requests", {"variant_id", "ok", "latency_ms"}},
      {"histograms", {"variant_id", "metric", "bucket_low_ns", "bucket_high_ns", "count"}},
  };
  return r;
}

}  // namespace
// ---- runs and variants -----------------------------------------------------------------------

std::optional<double> Variant::get(const std::string& column) const {
  auto it = num.find(column);
  if (it == num.end()) return std::nullopt;
  return it->second;
}

std::string Variant::text_of(const std::string& column) const {
  auto it = text.find(column);
  if (it != text.end()) return it->second;
  auto n = num.find(column);
  if (n != num.end()) return fmt_num(n->second, 6);
  return "";
}

std::string RunInfo::origin() const {
  if (kind == "scenario") return "scenario " + scenario_name;
  return command.empty() ? "cibench " + kind : command;
}
// ---- TOML scalars ----------------------------------------------------------------------------

std::map<std::string, std::string> scan_toml_scalars(const std::string& toml) {
  std::map<std::string, std::string> out;
  std::istringstream in(toml);
  std::string line, section;
  int depth = 0;  // open brackets of a multi-line array or inline table being skipped
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (depth > 0) {
      for (char c : t) depth += (c == '[' || c == '{') ? 1 : (c == ']' || c == '}') ? -1 : 0;
      continue;
    }
    if (t.empty() || t[0] == '#') continue;
    if (t[0] == '[') {
      if (t.size() > 1 && t[1] == '[') { section = ""; continue; }  // arrays of tables: not read
      const size_t e = t.find(']');
      section = trim(t.substr(1, e == std::string::npos ? std::string::npos : e - 1));
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(t.substr(0, eq));
    if (key.size() >= 2 && (key[0] == '"' || key[0] == '\'')) key = key.substr(1, key.size() - 2);
    std::string val = trim(t.substr(eq + 1));
    if (val.empty()) continue;
    if (val[0] == '[' || val[0] == '{') {
      for (char c : val) depth += (c == '[' || c == '{') ? 1 : (c == ']' || c == '}') ? -1 : 0;
      continue;
    }
    if (val[0] == '"' || val[0] == '\'') {
      const size_t close = val.find(val[0], 1);
      val = val.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    } else {
      const size_t hash = val.find('#');
      if (hash != std::string::npos) val = trim(val.substr(0, hash));
    }
    out[section.empty() ? key : section + "." + key] = val;
  }
  return out;
}

// ---- the database ----------------------------------------------------------------------------

struct Db::Rows {
  std::vector<std::string> cols;
  std::vector<std::vector<SqlValue>> rows;
  int col(const std::string& name) const {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return static_cast<int>(i);
    return -1;
  }
};

namespace {
struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
};
}  // namespace

Db::Rows Db::select(const std::string& sql, const std::vector<std::string>& params) {
  Stmt s;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.st, nullptr);
  if (rc != SQLITE_OK) throw DbError(str(path_, ": ", sqlite_error_text(db_, path_), " (in: ", sql.substr(0, 60), ")"));
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& p = params[i];
    // Integers are bound as integers so that comparisons with INTEGER columns are exact.
    char* end = nullptr;
    const long long v = std::strtoll(p.c_str(), &end, 10);
    if (!p.empty() && *end == '\0' && p.find_first_not_of("-0123456789") == std::string::npos)
      sqlite3_bind_int64(s.st, static_cast<int>(i + 1), v);
    else
      sqlite3_bind_text(s.st, static_cast<int>(i + 1), p.data(), static_cast<int>(p.size()), SQLITE_TRANSIENT);
  }
  Rows r;
  const int nc = sqlite3_column_count(s.st);
  for (int i = 0; i < nc; ++i) r.cols.emplace_back(sqlite3_column_name(s.st, i));
  while ((rc = sqlite3_step(s.st)) == SQLITE_ROW) r.rows.push_back(sqlite_row(s.st));
  if (rc != SQLITE_DONE) throw DbError(str(path_, ": ", sqlite_error_text(db_, path_)));
  return r;
}

Db::Db(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw DbError(str(path, ": no such results database (`cibench run SCENARIO` creates it)"));
  if (fs::is_directory(path, ec)) throw DbError(str(path, ": is a folder, not a results database"));
  const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(str(path, ": cannot open: ", msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  // A WAL store where no -shm can be made (a folder we may not write, a full disk) whose last
  // writer checkpointed it (no -wal left) is read as it stands: immutable, without locks.
  if (sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if ((code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_FULL) &&
        (!fs::exists(path + "-wal", ec) || fs::file_size(path + "-wal", ec) == 0)) {
      sqlite3_close(db_);
      db_ = nullptr;
      if (sqlite3_open_v2(("file:" + path + "?immutable=1").c_str(), &db_,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
        const std::string msg = db_ ? sqlite_error_text(db_, path) : "cannot open";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DbError(str(path, ": cannot open: ", msg));
      }
    }
  }
  try {
    std::set<std::string> tables;
    try {
      version_ = static_cast<int>(as_int(select("PRAGMA user_version").rows.at(0).at(0)));
      for (const auto& row : select("SELECT name FROM sqlite_master WHERE type='table'").rows)
        tables.insert(as_text(row[0]));
    } catch (const DbError&) {
      const int code = sqlite3_extended_errcode(db_) & 0xff;
      if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        throw DbError(str(path, ": not a readable SQLite database (", sqlite3_errmsg(db_),
                          "); is it a cibench results file?"));
      throw DbError(str(path, ": cannot read: ", sqlite_error_text(db_, path)));
    }
    if (tables.empty())
      throw DbError(str(path, ": the database is empty (no cibench tables); `cibench run SCENARIO --db ",
                        path, "` writes one"));
    if (!tables.count("runs") || !tables.count("variants"))
      throw DbError(str(path, ": not a cibench results database (no 'runs' and 'variants' tables)"));
    if (version_ < kReadsSchemaVersion)
      throw DbError(str(path, ": database schema version ", version_,
                        " is older than this cibench reads (", kReadsSchemaVersion, ")"));
    for (const auto& [table, cols] : required_columns()) {
      if (!tables.count(table))
        throw DbError(str(path, ": database schema version ", version_, " is older than this cibench reads (",
                          kReadsSchemaVersion, "): no table '", table, "'"));
      std::set<std::string> have;
      for (const auto& row : select("PRAGMA table_info(" + table + ")").rows) have.insert(as_text(row[1]));
      for (const auto& c : cols)
        if (!have.count(c))
          throw DbError(str(path, ": database schema version ", version_, " is older than this cibench reads (",
                            kReadsSchemaVersion, "): table '", table, "' has no column '", c, "'"));
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Db::~Db() { sqlite3_close(db_); }

int64_t Db::data_version() { return as_int(select("PRAGMA data_version").rows.at(0).at(0)); }

namespace {
RunInfo run_from(const std::vector<std::string>& cols, const std::vector<SqlValue>& row) {
  RunInfo r;
  auto get = [&](const char* name) -> const SqlValue* {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return &row[i];
    return nullptr;
  };
  auto text = [&](const char* name) { const SqlValue* v = get(name); return v ? as_text(*v) : std::string(); };
  r.run_id = get("run_id") ? as_int(*get("run_id")) : 0;
  r.status = text("status");
  r.started_utc = text("started_utc");
  r.finished_utc = text("finished_utc");
  r.error = text("error");
  r.scenario_name = text("scenario_name");
  r.question = text("question");
  r.pattern = text("pattern");
  r.model_spec = text("model_spec");
  r.hostname = text("hostname");
  r.cpu_model = text("cpu_model");
  r.isa_active = text("isa_active");
  r.cibench_commit = text("cibench_commit");
  r.host_type = text("host_type");
  r.kind = text("kind");
  if (r.kind.empty()) r.kind = "scenario";
  r.command = text("command");
  r.variants = get("n_variants") ? as_int(*get("n_variants")) : 0;
  return r;
}
// The runs columns RunInfo reads; kind and command exist from schema 5 (earlier runs are all
// scenario runs).
std::string run_columns(int version) {
  return str("r.run_id, r.status, r.started_utc, r.finished_utc, r.error, r.scenario_name, r.question, "
             "r.pattern, r.model_spec, r.hostname, r.cpu_model, r.isa_active, r.cibench_commit, ",
             version >= 5 ? "r.kind, r.command, " : "'scenario' AS kind, NULL AS command, ",
             version >= 14 ? "r.host_type, " : "NULL AS host_type, ",
             "(SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id) AS n_variants");
}
}  // namespace

std::vector<RunInfo> Db::runs(const RunFilter& f) {
  Rows rs = select(str("SELECT ", run_columns(version_), " FROM runs r ORDER BY r.run_id DESC"));
  std::vector<RunInfo> out;
  for (const auto& row : rs.rows) {
    RunInfo r = run_from(rs.cols, row);
    const std::string day = r.started_utc.substr(0, 10);
    if (!contains_ci(r.scenario_name, f.scenario)) continue;
    if (!f.host.empty() && !contains_ci(r.hostname, f.host) && !contains_ci(r.cpu_model, f.host) &&
        !contains_ci(r.host_type, f.host))
      continue;
    if (!contains_ci(r.model_spec, f.model)) continue;
    if (!f.date_from.empty() && day < f.date_from.substr(0, 10)) continue;
    if (!f.date_to.empty() && day > f.date_to.substr(0, 10)) continue;
    out.push_back(std::move(r));
  }
  return out;
}

RunInfo Db::run(int64_t run_id) {
  Rows rs = select(str("SELECT ", run_columns(version_), " FROM runs r WHERE r.run_id = ?"), {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run ", run_id));
  return run_from(rs.cols, rs.rows[0]);
}

int64_t Db::resolve_run(const std::string& ref) {
  RunRef r;
  try {
    r = RunRef::parse(ref);
  } catch (const Error& e) {
    throw DbError(e.what());
  }
  if (r.by_id()) {
    run(r.id);  // throws when absent
    return r.id;
  }
  Rows rs = select("SELECT run_id FROM runs ORDER BY run_id DESC LIMIT 1 OFFSET ?", {std::to_string(r.back)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run '", ref, "'"));
  return as_int(rs.rows[0][0]);
}

std::vector<std::pair<std::string, std::string>> Db::provenance(int64_t run_id) {
  Rows rs = select("SELECT * FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str(path_, ": no run ", run_id));
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < rs.cols.size(); ++i) {
    if (rs.cols[i] == "scenario_toml") continue;  // long; shown separately
    const std::string v = as_text(rs.rows[0][i]);
    if (!v.empty()) out.emplace_back(rs.cols[i], v);
  }
  return out;
}

std::string Db::scenario_toml(int64_t run_id) {
  Rows rs = select("SELECT scenario_toml FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  return rs.rows.empty() ? std::string() : as_text(rs.rows[0][0]);
}

std::optional<nlohmann::json> Db::run_json(int64_t run_id, const char* column) {
  Rows rs = select("SELECT * FROM runs WHERE run_id = ?", {std::to_string(run_id)});
  if (rs.rows.empty()) throw DbError(str("no run ", run_id, " in ", path_));
  for (size_t i = 0; i < rs.cols.size(); ++i)
    if (rs.cols[i] == column) {
      const auto* t = std::get_if<std::string>(&rs.rows[0][i]);
      if (!t) return std::nullopt;
      try {
        return nlohmann::json::parse(*t);
      } catch (const nlohmann::json::exception& e) {
        throw DbError(str(path_, ": run ", run_id, ": runs.", column, " is not JSON: ", e.what()));
      }
    }
  return std::nullopt;  // a store older than schema 4
}

namespace {
// Decodes a stored JSON column with the schema's decoder, naming the run on a bad value.
template <typename T>
T decode_stored(const std::string& path, int64_t run_id, const nlohmann::json& j,
                T (*decode)(const nlohmann::json&)) {
  try {
    return decode(j);
  } catch (const Error& e) {
    throw DbError(str(path, ": run ", run_id, ": ", e.what()));
  }
}

double leading_number(const std::string& text, bool* ok) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  *ok = end != text.c_str();
  return v;
}
}  // namespace

std::vector<Slo> Db::slos(int64_t run_id) {
  if (auto j = run_json(run_id, "slos_json")) return decode_stored(path_, run_id, *j, &slos_from_json);
  // Runs written before schema 4: the stored scenario's [slo] keys, same grammar as the parser.
  std::vector<Slo> out;
  for (const auto& [k, text] : scan_toml_scalars(scenario_toml(run_id))) {
    if (k.rfind("slo.", 0) != 0) continue;
    auto s = parse_slo_key(k.substr(4));
    bool ok = false;
    if (s) s->limit_ms = leading_number(text, &ok);
    if (ok) out.push_back(*s);
  }
  return out;
}

std::vector<QualityFloor> Db::floors(int64_t run_id) {
  if (auto j = run_json(run_id, "floors_json")) return decode_stored(path_, run_id, *j, &floors_from_json);
  // Runs written before schema 4: the stored scenario's [accuracy] floor keys.
  std::vector<QualityFloor> out;
  const auto scalars = scan_toml_scalars(scenario_toml(run_id));
  for (const FloorKind& k : quality_floor_kinds()) {
    auto it = scalars.find(std::string("accuracy.") + k.key);
    bool ok = false;
    const double v = it == scalars.end() ? 0 : leading_number(it->second, &ok);
    if (ok) out.push_back(QualityFloor::make(k.key, v));
  }
  return out;
}

std::optional<std::pair<std::string, double>> Db::scenario_floor(int64_t run_id, const std::string& y_key) {
  for (const QualityFloor& f : floors(run_id))
    if (f.column == y_key) return std::pair<std::string, double>{f.key, f.bound};
  return std::nullopt;
}

std::vector<Variant> Db::variants(const std::vector<int64_t>& run_ids) {
  std::vector<Variant> out;
  if (run_ids.empty()) return out;
  std::vector<std::string> params;
  for (int64_t id : run_ids) params.push_back(std::to_string(id));
  Rows rs = select("SELECT * FROM variants WHERE run_id IN " + in_list(run_ids.size()) +
                       " ORDER BY run_id, variant_index, step_index",
                   params);
  for (const auto& row : rs.rows) {
    Variant v;
    for (size_t i = 0; i < rs.cols.size(); ++i) {
      const std::string& c = rs.cols[i];
      const SqlValue& val = row[i];
      if (auto n = as_num(val)) v.num[c] = *n;
      else if (auto* s = std::get_if<std::string>(&val)) v.text[c] = *s;
    }
    v.variant_id = static_cast<int64_t>(v.get("variant_id").value_or(0));
    v.run_id = static_cast<int64_t>(v.get("run_id").value_or(0));
    v.variant_index = static_cast<int64_t>(v.get("variant_index").value_or(0));
    v.step_index = static_cast<int64_t>(v.get("step_index").value_or(0));
    v.label = v.text_of("label");
    v.status = v.text_of("status");
    v.error = v.text_of("error");
    v.format = v.text_of("format");
    v.sparsity = v.get("sparsity");
    if (auto t = v.get("threads")) v.threads = static_cast<int64_t>(*t);
    if (auto w = v.get("workers")) v.workers = static_cast<int64_t>(*w);
    out.push_back(std::move(v));
  }
  return out;
}
std::vector<double> Db::request_latencies(int64_t variant_id, const std::string& metric) {
  static const std::set<std::string> ok{"latency", "queue", "service", "ttft", "tpot"};
  if (!ok.count(metric)) throw DbError(str("unknown latency metric '", metric, "'"));
  const std::string c = metric + "_ms";
  Rows rs = select(str("SELECT ", c, " FROM requests WHERE variant_id = ? AND ok = 1 AND ", c,
                       " IS NOT NULL ORDER BY ", c),
                   {std::to_string(variant_id)});
  std::vector<double> v;
  v.reserve(rs.rows.size());
  for (const auto& row : rs.rows)
    if (auto x = as_num(row[0])) v.push_back(*x);
  return v;
}
std::optional<double> RequestRow::metric(const std::string& name) const {
  if (name == "latency") return latency_ms;
  if (name == "queue") return queue_ms;
  if (name == "service") return service_ms;
  if (name == "ttft") return ttft_ms;
  if (name == "tpot") return tpot_ms;
  return std::nullopt;
}

std::vector<RequestRow> Db::requests(int64_t variant_id, std::optional<int> limit) {
  const std::string id = std::to_string(variant_id);
  Rows rs = limit ? select("SELECT * FROM requests WHERE variant_id = ? ORDER BY scheduled_ms, query_index LIMIT ?",
                           {id, std::to_string(std::max(0, *limit))})
                  : select("SELECT * FROM requests WHERE variant_id = ?", {id});
  auto at = [&](const char* name) { return rs.col(name); };
  const int c_query = at("query_index"), c_seq = at("seq"), c_ok = at("ok"), c_sched = at("scheduled_ms"),
            c_lat = at("latency_ms"), c_queue = at("queue_ms"), c_service = at("service_ms"), c_ttft = at("ttft_ms"),
            c_tpot = at("tpot_ms"), c_prompt = at("prompt_tokens"), c_output = at("output_tokens");
  std::vector<RequestRow> out;
  out.reserve(rs.rows.size());
  for (const auto& row : rs.rows) {
    auto num = [&](int c) { return c < 0 ? std::nullopt : as_num(row[static_cast<size_t>(c)]); };
    auto count = [&](int c) -> std::optional<int64_t> {
      if (auto n = num(c)) return static_cast<int64_t>(*n);
      return std::nullopt;
    };
    RequestRow r;
    r.query_index = c_query < 0 ? 0 : as_int(row[static_cast<size_t>(c_query)]);
    r.seq = c_seq < 0 ? 0 : as_int(row[static_cast<size_t>(c_seq)]);
    r.ok = c_ok < 0 || as_int(row[static_cast<size_t>(c_ok)]) == 1;
    r.scheduled_ms = num(c_sched).value_or(0);
    r.latency_ms = num(c_lat);
    r.queue_ms = num(c_queue);
    r.service_ms = num(c_service);
    r.ttft_ms = num(c_ttft);
    r.tpot_ms = num(c_tpot);
    r.prompt_tokens = count(c_prompt);
    r.output_tokens = count(c_output);
    out.push_back(r);
  }
  return out;
}

int64_t Db::request_count(int64_t variant_id) {
  return as_int(select("SELECT COUNT(*) FROM requests WHERE variant_id = ?", {std::to_string(variant_id)}).rows.at(0).at(0));
}

std::vector<HistogramBucket> Db::histogram(int64_t variant_id, const std::string& metric) {
  Rows h = select("SELECT bucket_low_ns, bucket_high_ns, count FROM histograms WHERE variant_id = ? "
                  "AND metric = ? AND count > 0 ORDER BY bucket_low_ns",
                  {std::to_string(variant_id), metric});
  std::vector<HistogramBucket> out;
  out.reserve(h.rows.size());
  for (const auto& row : h.rows) out.push_back({as_int(row[0]), as_int(row[1]), as_int(row[2])});
  return out;
}

std::vector<PricedRow> Db::priced_rows(const std::string& scenario) {
  std::vector<PricedRow> out;
  if (version_ < 14) return out;  // no host types before schema 14
  for (const auto& r : select(kPricedRowsSql, {scenario}).rows) out.push_back(priced_row(r));
  return out;
}

std::vector<CounterRow> Db::counter_rows(const std::vector<int64_t>& run_ids) {
  std::vector<CounterRow> out;
  if (run_ids.empty()) return out;
  std::vector<std::string> params;
  for (int64_t id : run_ids) params.push_back(std::to_string(id));
  Rows rs = select("SELECT c.variant_id, c.name, c.value, c.unit, c.source, c.unavailable_reason "
                   "FROM counters c JOIN variants v ON v.variant_id = c.variant_id WHERE v.run_id IN " +
                       in_list(run_ids.size()) + " AND c.phase = 'all' AND c.scope IN ('total', 'package')",
                   params);
  for (const auto& row : rs.rows)
    out.push_back({as_int(row[0]), as_text(row[1]), as_num(row[2]), as_text(row[3]), as_text(row[4]), as_text(row[5])});
  return out;
}

}  // namespace cibench::reports
