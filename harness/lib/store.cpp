#include "harness/lib/store.h"

#include <signal.h>
#include <sys/statfs.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "engines/core/error.h"
#include "harness/lib/sysinfo.h"
#include "harness/schema/migrations.h"
#include "harness/schema/run_ref.h"
#include "harness/schema/sqlite_error.h"

namespace cibench {
namespace {

void check(int rc, sqlite3* db, const std::string& path, const std::string& what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw StoreError(str(path, ": ", what, ": ", db ? sqlite_error_text(db, path) : sqlite3_errstr(rc)));
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
  // A constructor that throws runs no destructor: close the connection here.
  try {
    open(create);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void Store::open(bool create) {
  namespace fs = std::filesystem;
  const std::string& path = path_;
  if (!create && !fs::exists(path)) throw StoreError(str(path, ": no such results database"));
  {
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st))
      throw StoreError(str(path, ": not a regular file (", fs::is_directory(st) ? "a folder" : "a FIFO, socket or device",
                           "); a results database is an SQLite file"));
  }
  // A reader (create = false) of a store it may not write (read-only file or folder, another
  // user's results) opens it read-only: nothing is migrated or marked, and anything needing a
  // write says so.
  if (!create) {
    const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    read_only_ = ::access(path.c_str(), W_OK) != 0 || ::access(parent.c_str(), W_OK) != 0;
  }
  if (read_only_) {
    open_read_only();
    return;
  }
  if (create) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
  }
  try {
    open_read_write(create);
  } catch (const StoreError&) {
    // A reader on a full disk (no room for the -shm file WAL needs) still reads a store whose
    // last writer checkpointed it (no -wal left): read-only, as it stands.
    std::error_code ec;
    const int code = db_ ? sqlite3_extended_errcode(db_) & 0xff : SQLITE_OK;
    const bool wal_empty = !fs::exists(path + "-wal", ec) || fs::file_size(path + "-wal", ec) == 0;
    if (create || (code != SQLITE_IOERR && code != SQLITE_FULL && code != SQLITE_CANTOPEN) || !wal_empty) throw;
    sqlite3_close(db_);
    db_ = nullptr;
    read_only_ = true;
    open_read_only();
  }
}

void Store::open_read_only() {
  open_db(path_, SQLITE_OPEN_READONLY, "cannot open read-only");
  // A WAL store in a folder we cannot write has no -shm to share: read the file as it stands
  // (immutable: no locks, which a folder nobody writes does not need).
  if (sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    open_db("file:" + path_ + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, "cannot open read-only");
  }
  check_owner();
  const int v = schema_version();
  if (v != kSchemaVersion)
    throw StoreError(str(path_, ": schema version ", v, ", this cibench reads ", kSchemaVersion,
                         "; the file is read-only here, so it cannot be migrated (open it once where it is writable)"));
}

std::string network_filesystem(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  struct statfs s;
  if (p.empty() || statfs(p.c_str(), &s) != 0) return "";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0x6969UL: return "nfs";
    case 0x517BUL: return "smb";
    case 0xFF534D42UL: return "cifs";
    case 0xFE534D42UL: return "smb2";
    case 0x0BD00BD0UL: return "lustre";
    case 0x47504653UL: return "gpfs";
    case 0x00C36400UL: return "ceph";
    case 0x5346414FUL: return "afs";
    default: return "";
  }
}

void Store::open_read_write(bool create) {
  // SQLite's WAL needs shared memory that network filesystems do not share between hosts: a store
  // written there by several hosts is corrupted silently. Each host writes its own store on local
  // disk and `cibench merge` combines them (docs/fleet.md).
  if (const std::string kind = network_filesystem(path_); !kind.empty() && !std::getenv("CIBENCH_ALLOW_NETWORK_STORE"))
    throw StoreError(str(path_, ": is on a network filesystem (", kind,
                         "); SQLite must not be written there (its WAL is not shared across hosts): write the store on "
                         "local disk and combine stores with cibench merge (CIBENCH_ALLOW_NETWORK_STORE=1 overrides)"));
  open_db(path_, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), "cannot open");
  check_owner();  // before anything is written to the file
  // Switching a new file to WAL takes an exclusive lock for which SQLite does not call the busy
  // handler: when other processes are opening the same new store, wait and retry (up to 10 s).
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    const int jrc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
    sqlite3_free(err);
    if (jrc == SQLITE_OK) break;
    if ((jrc != SQLITE_BUSY && jrc != SQLITE_LOCKED) || attempt >= 400) {
      exec("PRAGMA journal_mode = WAL");  // throws with the message
      break;
    }
    usleep(25000);
  }
  exec("PRAGMA synchronous = NORMAL");  // with WAL: a committed transaction survives a crash
  exec("PRAGMA foreign_keys = ON");
  migrate();
  mark_stale_runs();
}

Store::~Store() { sqlite3_close(db_); }

void Store::open_db(const std::string& name, int flags, const char* what) {
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite_error_text(db_, path_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(str(path_, ": ", what, ": ", msg));
  }
  sqlite3_busy_timeout(db_, 10000);
}

void Store::check_owner() {
  // One statement, so the version and the tables are one snapshot (another process may be
  // creating this store right now, in one transaction).
  const auto r = query(
      "SELECT (SELECT user_version FROM pragma_user_version), "
      "(SELECT group_concat(name, ', ') FROM (SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
      "AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 6)), "
      "(SELECT COUNT(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%')");
  const int64_t v = std::get<int64_t>(r.rows.at(0).at(0));
  const int64_t tables = std::get<int64_t>(r.rows.at(0).at(2));
  if (v < 0 || v > 1000)
    throw StoreError(str(path_, ": PRAGMA user_version is ", v, ", which no cibench writes: not a cibench results "
                            "database (or a damaged one); give a new path"));
  // A store written by a newer cibench is left exactly as it is (not even switched to WAL).
  if (v > kSchemaVersion)
    throw StoreError(str(path_, ": schema version ", v, " is newer than this cibench understands (",
                         kSchemaVersion, "); upgrade cibench"));
  // Version 0: an empty file (a new store) or another program's database, which cibench must not
  // add tables to or switch to WAL.
  if (v > 0 || tables == 0) return;
  throw StoreError(str(path_, ": not a cibench results database (schema version 0 with tables ",
                       sql_to_string(r.rows[0][1]), tables > 6 ? ", ..." : "",
                       "); cibench writes only to its own stores: give a new path"));
}

int Store::schema_version() {
  auto r = query("PRAGMA user_version");
  return static_cast<int>(std::get<int64_t>(r.rows.at(0).at(0)));
}

void Store::migrate() {
  int v = schema_version();
  if (v == 0) check_owner();  // (again: the journal switch may have waited for another writer)
  if (v > kSchemaVersion)
    throw StoreError(str(path_, ": schema version ", v, " is newer than this cibench understands (",
                         kSchemaVersion, "); upgrade cibench"));
  if (v == kSchemaVersion) return;
  // Read the version again under the write lock: another process opening the same new store may
  // have migrated it in between, and each migration must run exactly once.
  Transaction t(*this);
  v = schema_version();
  for (const Migration& m : migrations()) {
    if (m.version <= v) continue;
    exec(m.sql);
    insert("schema_migrations", {{"version", int64_t{m.version}},
                                 {"description", std::string(m.description)},
                                 {"applied_utc", utc_now_iso()}});
    exec(str("PRAGMA user_version = ", m.version));
  }
  t.commit();
}

void Store::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    if (const std::string full = sqlite_error_text(db_, path_); full.size() > msg.size() && full.rfind(msg, 0) == 0)
      msg = full;  // with the hint (a full disk, a damaged file)
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
  RunRef r;
  try {
    r = RunRef::parse(ref);
  } catch (const Error& e) {
    throw StoreError(e.what());
  }
  if (!r.by_id()) {
    auto q = query("SELECT run_id FROM runs ORDER BY run_id DESC LIMIT 1 OFFSET ?", {r.back});
    if (q.rows.empty()) throw StoreError(str(path_, ": no run '", ref, "'"));
    return std::get<int64_t>(q.rows[0][0]);
  }
  auto q = query("SELECT run_id FROM runs WHERE run_id = ?", {r.id});
  if (q.rows.empty()) throw StoreError(str(path_, ": no run ", r.id));
  return r.id;
}

}  // namespace cibench
