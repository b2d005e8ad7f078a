#include "harness/lib/merge.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "harness/lib/run_record.h"
#include "harness/lib/scenario.h"  // fnv1a_hex
#include "harness/lib/store.h"
#include "harness/lib/sysinfo.h"   // utc_now_iso

namespace cibench {
namespace fs = std::filesystem;
namespace {

// A folder for the sources' copies, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cibench-merge-" + std::to_string(getpid()) + "-" + new_run_uid().substr(0, 8));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// What a read-only look at a file says about it, before anything else opens it.
struct Probe {
  int version = 0;
};

Probe probe_source(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw MergeError(str(path, ": no such file"));
  if (fs::is_directory(path, ec)) throw MergeError(str(path, ": is a folder, not a cibench store"));
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
  if (rc != SQLITE_OK) throw MergeError(str(path, ": cannot open: ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  sqlite3_busy_timeout(db, 10000);
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT (SELECT user_version FROM pragma_user_version), "
      "(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'variants', 'schema_migrations'))";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    const std::string msg = sqlite3_errmsg(db);
    throw MergeError(str(path, ": not a cibench store (", msg, ")"));
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> sguard(st, sqlite3_finalize);
  if (sqlite3_step(st) != SQLITE_ROW) throw MergeError(str(path, ": not a cibench store (", sqlite3_errmsg(db), ")"));
  Probe p;
  p.version = sqlite3_column_int(st, 0);
  const int tables = sqlite3_column_int(st, 1);
  if (p.version <= 0 || tables < 3)
    throw MergeError(str(path, ": not a cibench store (schema version ", p.version, ", ", tables,
                         " of the tables runs, variants and schema_migrations)"));
  if (p.version > kSchemaVersion)
    throw MergeError(str(path, ": schema version ", p.version, " is newer than this cibench reads (", kSchemaVersion,
                         "); merge with a newer cibench"));
  return p;
}

// A consistent copy of the source (its WAL included) at `to`, made through a read-only connection.
void copy_source(const std::string& path, const fs::path& to) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
  sqlite3_busy_timeout(db, 10000);
  std::string quoted = "'";
  for (char c : to.string()) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  quoted += "'";
  char* err = nullptr;
  if (sqlite3_exec(db, ("VACUUM INTO " + quoted).c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw MergeError(str(path, ": cannot be read: ", msg));
  }
}

std::string text_of(const QueryResult& r, size_t row, const std::string& col) {
  return sql_to_string(r.rows[row][r.col(col)]);
}

// What two stores must agree on to hold the same run: its status and end, and how many variants
// and requests it has.
struct Fingerprint {
  std::string status, finished;
  int64_t variants = 0, requests = 0;
  bool operator==(const Fingerprint& o) const {
    return status == o.status && finished == o.finished && variants == o.variants && requests == o.requests;
  }
  std::string text() const {
    return str(status, ", finished ", finished.empty() ? "-" : finished, ", ", variants, " variant rows, ", requests,
               " requests");
  }
};

Fingerprint fingerprint(Store& s, int64_t run_id) {
  const auto r = s.query(
      "SELECT status, finished_utc, (SELECT COUNT(*) FROM variants v WHERE v.run_id = r.run_id), "
      "(SELECT COUNT(*) FROM requests q JOIN variants v ON v.variant_id = q.variant_id WHERE v.run_id = r.run_id) "
      "FROM runs r WHERE r.run_id = ?",
      {run_id});
  Fingerprint f;
  f.status = sql_to_string(r.rows.at(0)[0]);
  f.finished = sql_to_string(r.rows.at(0)[1]);
  f.variants = std::get<int64_t>(r.rows.at(0)[2]);
  f.requests = std::get<int64_t>(r.rows.at(0)[3]);
  return f;
}

// The rows of `table` whose variant belongs to `run_id`, copied with their variant ids mapped.
int64_t copy_variant_rows(Store& src, Store& out, const std::string& table, int64_t run_id,
                          const std::map<int64_t, int64_t>& vmap) {
  const auto r = src.query(str("SELECT t.* FROM ", table, " t JOIN variants v ON v.variant_id = t.variant_id ",
                               "WHERE v.run_id = ? ORDER BY t.rowid"),
                           {run_id});
  if (r.rows.empty()) return 0;
  const size_t vc = r.col("variant_id");
  std::vector<std::vector<SqlValue>> rows;
  rows.reserve(r.rows.size());
  for (const auto& row : r.rows) {
    rows.push_back(row);
    rows.back()[vc] = vmap.at(std::get<int64_t>(row[vc]));
  }
  out.insert_many(table, r.columns, rows);
  return static_cast<int64_t>(rows.size());
}

struct Source {
  std::string path;  // as given
  std::string abs;   // absolute, as recorded in merge_sources
  int schema = 0;
  std::unique_ptr<Store> store;  // the migrated copy
};

// One host_types row into the output: added, or checked against the one there (same price and
// currency), naming `from` when they differ.
void merge_host_type(const Fields& row, Store& out, const std::string& from, const std::string& output) {
  std::string name, currency;
  double price = 0;
  for (const auto& [k, v] : row) {
    if (k == "name") name = sql_to_string(v);
    if (k == "currency") currency = sql_to_string(v);
    if (k == "price_per_hour") price = sql_number(v).value_or(-1);
  }
  const auto have = out.query("SELECT price_per_hour, currency FROM host_types WHERE name = ?", {name});
  if (have.rows.empty()) {
    out.insert("host_types", row);
    return;
  }
  const double p0 = *sql_number(have.rows[0][0]);
  const std::string c0 = sql_to_string(have.rows[0][1]);
  if (p0 != price || c0 != currency)
    throw MergeError(str(from, ": host type '", name, "' is priced ", price, " ", currency, "/h there and ", p0, " ", c0,
                         "/h in ", output, "; nothing merged (give both the same hosts file)"));
}

void merge_host_types(Source& s, Store& out, const std::string& output) {
  const auto r = s.store->query("SELECT * FROM host_types ORDER BY name");
  for (const auto& row : r.rows) {
    Fields f;
    for (size_t c = 0; c < r.columns.size(); ++c) f.push_back({r.columns[c], row[c]});
    merge_host_type(f, out, s.path, output);
  }
}

void merge_runs(Source& s, Store& out, const std::string& output, MergeResult& res) {
  Store& src = *s.store;
  const auto runs = src.query("SELECT * FROM runs ORDER BY run_id");
  const std::string now = utc_now_iso();
  for (size_t i = 0; i < runs.rows.size(); ++i) {
    const int64_t src_id = std::get<int64_t>(runs.rows[i][runs.col("run_id")]);
    const std::string identity =
        run_identity(text_of(runs, i, "run_uid"), text_of(runs, i, "hostname"), text_of(runs, i, "started_utc"),
                     text_of(runs, i, "pid") + "/" + std::to_string(src_id), text_of(runs, i, "scenario_hash"),
                     text_of(runs, i, "model_spec"));
    MergedRun m;
    m.source = s.path;
    m.source_run_id = src_id;
    m.identity = identity;
    const Fingerprint fp = fingerprint(src, src_id);
    const auto have = out.query("SELECT run_id FROM runs WHERE run_uid = ?", {identity});
    if (!have.rows.empty()) {
      m.run_id = std::get<int64_t>(have.rows[0][0]);
      const Fingerprint there = fingerprint(out, m.run_id);
      if (!(there == fp))
        throw MergeError(str(s.path, ": run ", src_id, " is run ", m.run_id, " of ", output, " (the same identity, ",
                             identity, ") with other contents: ", fp.text(), " here, ", there.text(), " there; ",
                             "nothing merged (merge into a new file to keep both)"));
      ++res.already;
      res.runs.push_back(m);
      continue;
    }
    Fields row;
    for (size_t c = 0; c < runs.columns.size(); ++c) {
      const std::string& col = runs.columns[c];
      if (col == "run_id") continue;
      row.push_back({col, col == "run_uid" ? SqlValue(identity) : runs.rows[i][c]});
    }
    m.run_id = out.insert("runs", row);
    m.added = true;
    ++res.added;
    // Where it came from: the runs this source had merged from elsewhere first, then this source.
    const auto nested = src.query(
        "SELECT source_path, source_run_id, source_schema, merged_utc FROM merge_sources WHERE run_id = ? ORDER BY rowid",
        {src_id});
    for (const auto& n : nested.rows)
      out.insert("merge_sources", {{"run_id", m.run_id}, {"source_path", n[0]}, {"source_run_id", n[1]},
                                   {"source_schema", n[2]}, {"merged_utc", n[3]}});
    out.insert("merge_sources", {{"run_id", m.run_id}, {"source_path", s.abs}, {"source_run_id", src_id},
                                 {"source_schema", int64_t{s.schema}}, {"merged_utc", now}});
    // Its variants under new ids; then the ids that point at a variant (the speculative baseline).
    const auto vs = src.query("SELECT * FROM variants WHERE run_id = ? ORDER BY variant_id", {src_id});
    std::map<int64_t, int64_t> vmap;
    const size_t vid = vs.col("variant_id");
    for (const auto& v : vs.rows) {
      Fields f;
      for (size_t c = 0; c < vs.columns.size(); ++c) {
        if (c == vid) continue;
        f.push_back({vs.columns[c], vs.columns[c] == "run_id" ? SqlValue(m.run_id) : v[c]});
      }
      const int64_t old_id = std::get<int64_t>(v[vid]);
      const int64_t new_id = out.insert("variants", f);
      vmap[old_id] = new_id;
      const auto nv = src.query(
          "SELECT source_path, source_variant_id FROM merge_variants WHERE variant_id = ? ORDER BY rowid", {old_id});
      for (const auto& n : nv.rows)
        out.insert("merge_variants", {{"variant_id", new_id}, {"source_path", n[0]}, {"source_variant_id", n[1]}});
      out.insert("merge_variants", {{"variant_id", new_id}, {"source_path", s.abs}, {"source_variant_id", old_id}});
    }
    const size_t base = vs.col("spec_baseline_variant_id");
    for (const auto& v : vs.rows) {
      const auto* b = std::get_if<int64_t>(&v[base]);
      if (!b) continue;
      auto it = vmap.find(*b);
      out.update("variants", "variant_id", vmap.at(std::get<int64_t>(v[vid])),
                 {{"spec_baseline_variant_id", it == vmap.end() ? sql_null() : SqlValue(it->second)}});
    }
    res.variants += static_cast<int64_t>(vs.rows.size());
    copy_variant_rows(src, out, "counters", src_id, vmap);
    res.requests += copy_variant_rows(src, out, "requests", src_id, vmap);
    copy_variant_rows(src, out, "histograms", src_id, vmap);
    res.runs.push_back(m);
  }
}

}  // namespace

std::string run_identity(const std::string& run_uid, const std::string& hostname, const std::string& started_utc,
                         const std::string& pid, const std::string& scenario_hash, const std::string& model_spec) {
  if (!run_uid.empty()) return run_uid;
  return "legacy:" + fnv1a_hex(hostname + "\n" + started_utc + "\n" + pid + "\n" + scenario_hash + "\n" + model_spec);
}

MergeResult merge_stores(const std::vector<std::string>& sources, const std::string& output,
                         const std::vector<Fields>& host_types) {
  if (sources.empty()) throw MergeError("cibench merge: no stores to merge");
  if (output.empty()) throw MergeError("cibench merge: no output store (-o FILE)");
  std::error_code ec;
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(output), ec);
  MergeResult res;
  TempDir tmp;
  // Every source is checked and copied before the output is opened: a bad source leaves it alone.
  std::vector<Source> srcs;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& p = sources[i];
    if (fs::exists(p, ec) && fs::exists(out_abs, ec) && fs::equivalent(p, out_abs, ec))
      throw MergeError(str(p, ": is the output too; merge into another file"));
    const Probe pr = probe_source(p);
    Source s;
    s.path = p;
    s.abs = fs::weakly_canonical(fs::absolute(p), ec).string();
    s.schema = pr.version;
    const fs::path copy = tmp.path / ("source-" + std::to_string(i) + ".sqlite");
    copy_source(p, copy);
    try {
      s.store = std::make_unique<Store>(copy.string(), false);  // migrates the copy to this schema
    } catch (const StoreError& e) {
      throw MergeError(str(p, ": cannot be read as a cibench store: ", e.what()));
    }
    res.sources.push_back({p, pr.version, std::get<int64_t>(s.store->query("SELECT COUNT(*) FROM runs").rows[0][0])});
    srcs.push_back(std::move(s));
  }
  const bool existed = fs::exists(output, ec);
  try {
    Store out(output);
    Store::Transaction t(out);
    for (const Fields& h : host_types) merge_host_type(h, out, "the hosts file", output);
    for (auto& s : srcs) {
      merge_host_types(s, out, output);
      merge_runs(s, out, output, res);
    }
    t.commit();
  } catch (...) {
    if (!existed)
      for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(output + suffix, ec);
    throw;
  }
  return res;
}

}  // namespace cibench
