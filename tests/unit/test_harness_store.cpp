// The store: versioned schema, NULL-with-reason counters enforced by the schema, stale runs
// marked incomplete, provenance readable.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <vector>
#include <fstream>

#include "harness/lib/store.h"
#include "harness/lib/sysinfo.h"
#include "harness/schema/run_ref.h"

namespace cibench {
namespace {

std::string temp_db(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("cibench_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

Fields minimal_run(int64_t pid) {
  return {{"status", std::string("running")}, {"started_utc", utc_now_iso()},
          {"scenario_name", std::string("t")}, {"scenario_hash", std::string("0")},
          {"scenario_toml", std::string("")},  {"model_spec", std::string("sut:null")},
          {"pid", pid},                        {"hostname", collect_system_info().hostname}};
}

TEST(HarnessStore, SchemaIsVersionedAndWal) {
  const std::string p = temp_db("a.sqlite");
  Store s(p);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_EQ(sql_to_string(s.query("PRAGMA journal_mode").rows[0][0]), "wal");
  EXPECT_EQ(s.query("SELECT version FROM schema_migrations").rows.size(), static_cast<size_t>(kSchemaVersion));
  // Reopening does not re-apply migrations.
  Store again(p);
  EXPECT_EQ(again.schema_version(), kSchemaVersion);
}

// The migrations list is the schema: versions 1..kSchemaVersion in order, each described.
TEST(HarnessStore, MigrationsAreNumberedInOrderUpToTheSchemaVersion) {
  const auto& m = migrations();
  ASSERT_EQ(m.size(), static_cast<size_t>(kSchemaVersion));
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].version, static_cast<int>(i + 1));
    EXPECT_GT(std::string(m[i].description).size(), 10u);
  }
}

// Several processes opening one new store at once (a fleet writing one file): every one opens it,
// each migration is applied exactly once, and every process's run is stored.
TEST(HarnessStore, ProcessesOpeningANewStoreAtOnceMigrateItOnce) {
  for (int round = 0; round < 3; ++round) {
    const std::string p = temp_db("race" + std::to_string(round) + ".sqlite");
    constexpr int kProcs = 6;
    std::vector<pid_t> kids;
    for (int i = 0; i < kProcs; ++i) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        int rc = 0;
        try {
          Store s(p);
          Store::Transaction t(s);
          s.insert("runs", minimal_run(getpid()));
          t.commit();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "process %d: %s\n", i, e.what());
          rc = 1;
        }
        _exit(rc);
      }
      kids.push_back(pid);
    }
    for (pid_t k : kids) {
      int status = 0;
      waitpid(k, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    Store s(p);
    EXPECT_EQ(s.schema_version(), kSchemaVersion);
    EXPECT_EQ(s.query("SELECT version FROM schema_migrations").rows.size(), static_cast<size_t>(kSchemaVersion));
    EXPECT_EQ(std::get<int64_t>(s.query("SELECT COUNT(*) FROM runs").rows[0][0]), kProcs);
  }
}

TEST(HarnessStore, CountersNeedAValueOrAReasonNeverBoth) {
  Store s(temp_db("b.sqlite"));
  const int64_t run = s.insert("runs", minimal_run(getpid()));
  const int64_t v = s.insert("variants", {{"run_id", run}, {"variant_index", int64_t{0}},
                                          {"label", std::string("x")}, {"status", std::string("ok")}});
  EXPECT_NO_THROW(s.insert("counters", {{"variant_id", v}, {"name", std::string("cycles")},
                                        {"phase", std::string("all")}, {"scope", std::string("total")},
                                        {"value", sql_null()}, {"source", std::string("papi")},
                                        {"unavailable_reason", std::string("PAPI_ENOEVNT")}}));
  // NULL without a reason, or a value with a reason, violate the CHECK constraint.
  EXPECT_THROW(s.insert("counters", {{"variant_id", v}, {"name", std::string("cycles")},
                                     {"phase", std::string("all")}, {"scope", std::string("total")},
                                     {"value", sql_null()}, {"source", std::string("papi")}}),
               StoreError);
  EXPECT_THROW(s.insert("counters", {{"variant_id", v}, {"name", std::string("cycles")},
                                     {"phase", std::string("all")}, {"scope", std::string("total")},
                                     {"value", 1.0}, {"source", std::string("papi")},
                                     {"unavailable_reason", std::string("x")}}),
               StoreError);
}

TEST(HarnessStore, RunsOfDeadProcessesAreMarkedIncomplete) {
  const std::string p = temp_db("c.sqlite");
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // now a pid that no longer exists
  {
    Store s(p);
    const int64_t dead = s.insert("runs", minimal_run(child));
    s.insert("variants", {{"run_id", dead}, {"variant_index", int64_t{0}}, {"label", std::string("x")},
                          {"status", std::string("running")}});
    s.insert("runs", minimal_run(getpid()));  // this process: alive, stays running
  }
  Store s(p);
  auto r = s.query("SELECT status FROM runs ORDER BY run_id");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(sql_to_string(r.rows[0][0]), "incomplete");
  EXPECT_EQ(sql_to_string(r.rows[1][0]), "running");
  EXPECT_EQ(sql_to_string(s.query("SELECT status FROM variants").rows[0][0]), "incomplete");
  EXPECT_EQ(s.resolve_run("last"), 2);
  EXPECT_EQ(s.resolve_run("last~1"), 1);
  EXPECT_THROW(s.resolve_run("7"), StoreError);
}

TEST(HarnessStore, SystemInfoKeepsReasonsForUnreadableKnobs) {
  // A fake sysfs root with nothing in it: every knob is unknown with a reason naming the file.
  const auto root = std::filesystem::temp_directory_path() / ("cibench_fake_sys_" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "sys/kernel/mm/transparent_hugepage");
  { std::ofstream(root / "sys/kernel/mm/transparent_hugepage/enabled") << "always [madvise] never\n"; }
  const SystemInfo s = collect_system_info(root.string());
  EXPECT_FALSE(s.governor.value.has_value());
  EXPECT_NE(s.governor.reason.find("scaling_governor: absent"), std::string::npos) << s.governor.reason;
  EXPECT_FALSE(s.turbo.value.has_value());
  EXPECT_FALSE(s.turbo.reason.empty());
  ASSERT_TRUE(s.thp.value.has_value());
  EXPECT_EQ(*s.thp.value, "madvise");
  EXPECT_FALSE(s.cpu_model.empty());
  EXPECT_GT(s.logical_cpus, 0);
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

// Another program's database is never touched: no tables added, no switch to WAL; a version no
// cibench writes is named; a FIFO or folder is refused before it is opened.
TEST(HarnessStoreForeign, OtherDatabasesAndOddFilesAreRefusedUntouched) {
  const std::string path = temp_db("foreign.sqlite");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  for (bool create : {true, false}) {
    try {
      Store s(path, create);
      ADD_FAILURE() << "a foreign database was opened as a store";
    } catch (const StoreError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": not a cibench results database (schema version 0 with tables people); "
                                              "cibench writes only to its own stores: give a new path");
    }
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT (SELECT group_concat(name) FROM sqlite_master), (SELECT journal_mode FROM pragma_journal_mode)",
                                 -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "people");
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), "delete");
    sqlite3_finalize(st);
    ASSERT_EQ(sqlite3_exec(db, "DROP TABLE people; PRAGMA user_version = -1;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_THROW(
      {
        try {
          Store s(path);
        } catch (const StoreError& e) {
          EXPECT_NE(std::string(e.what()).find("PRAGMA user_version is -1, which no cibench writes"), std::string::npos)
              << e.what();
          throw;
        }
      },
      StoreError);
  std::filesystem::remove(path);
  Store fresh(path);  // an empty file or a new path is a new store
  EXPECT_EQ(fresh.schema_version(), kSchemaVersion);

  const std::string fifo = temp_db("fifo.sqlite");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    Store s(fifo);
    ADD_FAILURE() << "a FIFO was opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO, socket or device)"), std::string::npos) << e.what();
  }
  std::filesystem::remove(fifo);
  const auto folder = std::filesystem::path(temp_db("folder.sqlite"));
  std::filesystem::create_directories(folder);
  EXPECT_THROW(Store(folder.string(), false), StoreError);
  std::filesystem::remove_all(folder);
}

// A store written by a newer cibench is refused naming both versions, and left byte for byte as
// it was: not switched to WAL, no -wal or -shm made beside it.
TEST(HarnessStoreForeign, NewerStoreIsRefusedAndLeftUntouched) {
  const std::string path = temp_db("newer.sqlite");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE runs (run_id INTEGER PRIMARY KEY); PRAGMA user_version = 99;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = bytes(path);
  for (bool create : {true, false}) {
    try {
      Store s(path, create);
      ADD_FAILURE() << "a newer store was opened";
    } catch (const StoreError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": schema version 99 is newer than this cibench understands (" +
                                           std::to_string(kSchemaVersion) + "); upgrade cibench");
    }
  }
  EXPECT_EQ(bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

TEST(HarnessStoreRunRef, OneGrammarForRunNames) {
  EXPECT_EQ(RunRef::parse("last").back, 0);
  EXPECT_FALSE(RunRef::parse("last").by_id());
  EXPECT_EQ(RunRef::parse("last~3").back, 3);
  EXPECT_EQ(RunRef::parse("12").id, 12);
  for (const char* bad : {"last~-1", "last~", "last~x", "0", "-3", "", "1e3", "12 ", "last~99999999999999999"}) {
    try {
      RunRef::parse(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), str("run '", bad, "': expected a run id, 'last' or 'last~N' with N >= 0"));
    }
  }
}

}  // namespace
}  // namespace cibench
