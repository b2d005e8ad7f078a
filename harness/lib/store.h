#pragma once
// The results store: SQLite (results/cibench.sqlite by default), WAL, a versioned schema
// (PRAGMA user_version + an ordered list of migrations; see docs/schema.md), and writes in
// short transactions so that a crash or SIGKILL leaves earlier runs intact. A run is inserted
// with status 'running' first; a store opened later marks the runs whose process is gone as
// 'incomplete' (same for their variants still 'running').
//
// NULL means "not measured": helpers below never turn a missing value into 0.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/core/error.h"
#include "harness/schema/migrations.h"
#include "harness/schema/sql_value.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cibench {

class StoreError : public Error {
 public:
  using Error::Error;
};

using Fields = std::vector<std::pair<std::string, SqlValue>>;

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<SqlValue>> rows;
  // Column index by name; throws when absent.
  size_t col(const std::string& name) const;
  nlohmann::json to_json() const;  // array of objects
};

std::string sql_to_string(const SqlValue& v);  // "" for NULL
nlohmann::json sql_to_json(const SqlValue& v);


// The kind of network filesystem `path` (or its nearest existing folder) lies on, by statfs:
// "nfs", "smb", "cifs", "smb2", "lustre", "gpfs", "ceph", "afs"; "" for any other (local disks,
// tmpfs, overlay, and filesystems that cannot be told apart reliably such as FUSE). A store is
// not opened for writing on one (Store throws) unless CIBENCH_ALLOW_NETWORK_STORE is set.
std::string network_filesystem(const std::string& path);

class Store {
 public:
  // Opens (creating folders and file when `create`), applies migrations, enables WAL and foreign
  // keys, and marks stale 'running' runs as 'incomplete'. Throws StoreError naming the path.
  explicit Store(const std::string& path, bool create = true);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  // Opened read-only (a reader, create = false, on a file or folder it may not write).
  bool read_only() const { return read_only_; }
  int schema_version();

  void exec(const std::string& sql);
  QueryResult query(const std::string& sql, const std::vector<SqlValue>& params = {});
  // INSERT INTO table (fields...) VALUES (...); returns the rowid.
  int64_t insert(const std::string& table, const Fields& fields);
  // UPDATE table SET fields... WHERE key = id.
  void update(const std::string& table, const std::string& key, int64_t id, const Fields& fields);
  // Many rows with the same columns through one prepared statement (caller holds a transaction).
  void insert_many(const std::string& table, const std::vector<std::string>& columns,
                   const std::vector<std::vector<SqlValue>>& rows);

  // RAII transaction: BEGIN IMMEDIATE; commit() or rollback on destruction.
  class Transaction {
   public:
    explicit Transaction(Store& s);
    ~Transaction();
    void commit();

   private:
    Store& s_;
    bool done_ = false;
  };

  // Marks 'running' runs whose process (pid on this host) no longer exists as 'incomplete'.
  // Returns how many were marked.
  int mark_stale_runs();

  // Resolves "RUN" as given on the command line: a run id, "last", or "last~N".
  int64_t resolve_run(const std::string& ref);

 private:
  void migrate();
  // sqlite3_open_v2 of `name` (the path or a URI) into db_ with a busy timeout; StoreError naming
  // the path and `what` on failure.
  void open_db(const std::string& name, int flags, const char* what);
  void open(bool create);               // the constructor's work
  void open_read_only();                // readers of a file or folder they may not write
  void open_read_write(bool create);    // WAL, migrations, stale-run marking
  // Throws StoreError unless the file is a cibench store or empty (no tables): never add tables
  // to another program's database.
  void check_owner();
  sqlite3* db_ = nullptr;
  bool read_only_ = false;
  std::string path_;
};

}  // namespace cibench
