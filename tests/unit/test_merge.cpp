// cibench merge (harness/lib/merge.h) on the reports fixture and the speculative fixture: every
// run and row found again under new ids through the mapping tables, ids that point at a variant
// remapped, a second merge adding nothing, a collision or a bad source refused with the output as
// it was, an older schema migrated on a copy (the source left untouched), and the placement a run
// records (host type, Slurm job, CPU binding).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness/lib/merge.h"
#include "harness/lib/run_record.h"
#include "harness/lib/store.h"
#include "harness/schema/migrations.h"
#include "tests/gui/reports_fixture.h"

namespace cibench {
namespace {
namespace fs = std::filesystem;

int64_t count(Store& s, const std::string& sql, const std::vector<SqlValue>& p = {}) {
  return std::get<int64_t>(s.query(sql, p).rows.at(0).at(0));
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

std::string error_of(const std::vector<std::string>& src, const std::string& out) {
  try {
    merge_stores(src, out);
  } catch (const MergeError& e) {
    return e.what();
  }
  return "(no error)";
}

struct Stores {
  std::string a, b;
  test::ReportsFixture ids;
  test::SpeculativeFixture spec;
};
Stores make_stores(const std::string& prefix) {
  Stores s;
  s.a = test::fresh_db_path(prefix, "a.sqlite");
  s.b = test::fresh_db_path(prefix, "b.sqlite");
  s.ids = test::make_reports_fixture(s.a);
  s.spec = test::make_speculative_fixture(s.b);
  return s;
}

TEST(Merge, EveryRunAndRowIsFoundAgainUnderNewIds) {
  const Stores in = make_stores("merge_all");
  const std::string out = test::fresh_db_path("merge_all", "fleet.sqlite");
  const MergeResult r = merge_stores({in.a, in.b}, out);
  Store a(in.a, false), b(in.b, false), o(out, false);
  const int64_t runs_a = count(a, "SELECT COUNT(*) FROM runs"), runs_b = count(b, "SELECT COUNT(*) FROM runs");
  ASSERT_EQ(runs_b, 1);
  EXPECT_EQ(r.added, runs_a + runs_b);
  EXPECT_EQ(r.already, 0);
  EXPECT_EQ(count(o, "SELECT COUNT(*) FROM runs"), runs_a + runs_b);
  ASSERT_EQ(r.sources.size(), 2u);
  EXPECT_EQ(r.sources[0].schema, kSchemaVersion);
  // Each merged run maps back to its source run, with the same rows.
  for (const MergedRun& m : r.runs) {
    Store& src = m.source == in.a ? a : b;
    const auto map = o.query("SELECT source_path, source_run_id, source_schema FROM merge_sources WHERE run_id = ?",
                             {m.run_id});
    ASSERT_EQ(map.rows.size(), 1u);
    EXPECT_EQ(sql_to_string(map.rows[0][0]), fs::weakly_canonical(m.source).string());
    EXPECT_EQ(std::get<int64_t>(map.rows[0][1]), m.source_run_id);
    for (const char* col : {"scenario_name", "hostname", "started_utc", "status", "scenario_toml"})
      EXPECT_EQ(sql_to_string(o.query(std::string("SELECT ") + col + " FROM runs WHERE run_id = ?", {m.run_id}).rows[0][0]),
                sql_to_string(src.query(std::string("SELECT ") + col + " FROM runs WHERE run_id = ?", {m.source_run_id}).rows[0][0]))
          << col;
    // Variants: the same labels and latencies in the same order; each maps to its source row.
    const auto vo = o.query("SELECT variant_id, label, latency_p95_ms FROM variants WHERE run_id = ? ORDER BY variant_id",
                            {m.run_id});
    const auto vs = src.query(
        "SELECT variant_id, label, latency_p95_ms FROM variants WHERE run_id = ? ORDER BY variant_id", {m.source_run_id});
    ASSERT_EQ(vo.rows.size(), vs.rows.size());
    ASSERT_FALSE(vo.rows.empty());
    for (size_t i = 0; i < vo.rows.size(); ++i) {
      EXPECT_EQ(sql_to_string(vo.rows[i][1]), sql_to_string(vs.rows[i][1]));
      EXPECT_EQ(sql_to_string(vo.rows[i][2]), sql_to_string(vs.rows[i][2]));
      const auto mv = o.query("SELECT source_variant_id FROM merge_variants WHERE variant_id = ?", {vo.rows[i][0]});
      ASSERT_EQ(mv.rows.size(), 1u);
      EXPECT_EQ(std::get<int64_t>(mv.rows[0][0]), std::get<int64_t>(vs.rows[i][0]));
      for (const char* t : {"requests", "counters", "histograms"})
        EXPECT_EQ(count(o, std::string("SELECT COUNT(*) FROM ") + t + " WHERE variant_id = ?", {vo.rows[i][0]}),
                  count(src, std::string("SELECT COUNT(*) FROM ") + t + " WHERE variant_id = ?", {vs.rows[i][0]}))
            << t;
    }
  }
  EXPECT_GT(count(o, "SELECT COUNT(*) FROM requests"), 0);
  EXPECT_EQ(count(o, "SELECT COUNT(*) FROM requests"),
            count(a, "SELECT COUNT(*) FROM requests") + count(b, "SELECT COUNT(*) FROM requests"));
  // The speculative baseline points at the merged run's own off variant, not at the source's id.
  const auto base = o.query(
      "SELECT v.label, o.label, o.run_id = v.run_id FROM variants v JOIN variants o "
      "ON o.variant_id = v.spec_baseline_variant_id WHERE v.spec_baseline_variant_id IS NOT NULL");
  ASSERT_EQ(base.rows.size(), 4u);
  for (const auto& row : base.rows) {
    EXPECT_EQ(sql_to_string(row[1]), "w8a8 t1 w1 spec=off");
    EXPECT_EQ(std::get<int64_t>(row[2]), 1);
  }
  // Every merged run has an identity (the fixture's rows have none: derived, "legacy:").
  EXPECT_EQ(count(o, "SELECT COUNT(*) FROM runs WHERE run_uid LIKE 'legacy:%'"), runs_a + runs_b);
}

TEST(Merge, MergingAgainAddsNothingAndAMergedStoreKeepsTheChain) {
  const Stores in = make_stores("merge_again");
  const std::string out = test::fresh_db_path("merge_again", "fleet.sqlite");
  merge_stores({in.a, in.b}, out);
  const MergeResult again = merge_stores({in.b, in.a, in.a}, out);
  Store o(out, false);
  EXPECT_EQ(again.added, 0);
  EXPECT_EQ(again.already, static_cast<int64_t>(again.runs.size()));
  const int64_t runs = count(o, "SELECT COUNT(*) FROM runs");
  const int64_t variants = count(o, "SELECT COUNT(*) FROM variants");
  const int64_t requests = count(o, "SELECT COUNT(*) FROM requests");
  // The merged store into a new one: two steps of provenance per run, the original first.
  const std::string out2 = test::fresh_db_path("merge_again", "fleet2.sqlite");
  const MergeResult r2 = merge_stores({out}, out2);
  EXPECT_EQ(r2.added, runs);
  Store o2(out2, false);
  EXPECT_EQ(count(o2, "SELECT COUNT(*) FROM variants"), variants);
  EXPECT_EQ(count(o2, "SELECT COUNT(*) FROM requests"), requests);
  const auto chain = o2.query("SELECT source_path FROM merge_sources WHERE run_id = 1 ORDER BY rowid");
  ASSERT_EQ(chain.rows.size(), 2u);
  EXPECT_EQ(sql_to_string(chain.rows[0][0]), fs::weakly_canonical(in.a).string());
  EXPECT_EQ(sql_to_string(chain.rows[1][0]), fs::weakly_canonical(out).string());
  // And the originals into that one: the same identities, nothing added.
  EXPECT_EQ(merge_stores({in.a, in.b}, out2).added, 0);
  EXPECT_EQ(count(o2, "SELECT COUNT(*) FROM runs"), runs);
}

TEST(Merge, ACollisionOrABadSourceIsRefusedAndTheOutputIsAsItWas) {
  const Stores in = make_stores("merge_bad");
  const std::string out = test::fresh_db_path("merge_bad", "fleet.sqlite");
  merge_stores({in.a}, out);
  // The same run with other contents: a copy of A where run 1 is marked failed.
  const std::string a2 = test::fresh_db_path("merge_bad", "a2.sqlite");
  {
    Store s(in.a, false);
    s.exec("VACUUM INTO '" + a2 + "'");
  }
  {
    Store s(a2, false);
    s.update("runs", "run_id", 1, {{"status", std::string("failed")}});
  }
  const std::string before = bytes_of(out);
  std::string e = error_of({in.b, a2}, out);
  EXPECT_NE(e.find(a2 + ": run 1 is run 1 of " + out), std::string::npos) << e;
  EXPECT_NE(e.find("other contents: failed"), std::string::npos) << e;
  EXPECT_NE(e.find("nothing merged"), std::string::npos) << e;
  {
    Store o(out, false);  // B was not merged half-way either
    EXPECT_EQ(count(o, "SELECT COUNT(*) FROM runs WHERE scenario_name = 'fixture-speculative'"), 0);
  }
  // Not a store, a missing file, another program's database, a newer schema, the output itself.
  const std::string text = test::fresh_db_path("merge_bad", "notes.sqlite");
  std::ofstream(text) << "these are not the runs you are looking for\n";
  e = error_of({in.b, text}, out);
  EXPECT_NE(e.find(text + ": not a cibench store"), std::string::npos) << e;
  e = error_of({in.b, "/nonexistent/x.sqlite"}, out);
  EXPECT_NE(e.find("/nonexistent/x.sqlite: no such file"), std::string::npos) << e;
  const std::string other = test::fresh_db_path("merge_bad", "other.sqlite");
  raw_exec(other, "CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1);");
  e = error_of({other}, out);
  EXPECT_NE(e.find(other + ": not a cibench store (schema version 0"), std::string::npos) << e;
  const std::string newer = test::fresh_db_path("merge_bad", "newer.sqlite");
  { Store s(newer); }
  raw_exec(newer, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  e = error_of({in.b, newer}, out);
  EXPECT_NE(e.find(newer + ": schema version " + std::to_string(kSchemaVersion + 1) + " is newer"), std::string::npos)
      << e;
  e = error_of({in.b, out}, out);
  EXPECT_NE(e.find(out + ": is the output too"), std::string::npos) << e;
  // A host type priced differently in two stores.
  {
    Store s(in.b, false);
    s.insert("host_types", {{"name", std::string("small")}, {"price_per_hour", 0.10}, {"currency", std::string("USD")},
                            {"updated_utc", std::string("2026-12-07T00:00:00Z")}});
  }
  {
    Store s(a2, false);
    s.update("runs", "run_id", 1, {{"status", std::string("complete")}});  // no collision left
    s.insert("host_types", {{"name", std::string("small")}, {"price_per_hour", 0.25}, {"currency", std::string("USD")},
                            {"updated_utc", std::string("2026-12-07T00:00:00Z")}});
  }
  e = error_of({in.b, a2}, out);
  EXPECT_NE(e.find(a2 + ": host type 'small' is priced 0.25 USD/h there and 0.1 USD/h in " + out), std::string::npos)
      << e;
  EXPECT_EQ(bytes_of(out), before);
  // A new output is not left behind by a refused merge.
  const std::string fresh = test::fresh_db_path("merge_bad", "never.sqlite");
  e = error_of({in.b, text}, fresh);
  EXPECT_FALSE(fs::exists(fresh));
}

// A store of schema 13 (before run identities): merged through a migrated copy, the file itself
// left exactly as it was; merging it twice adds nothing.
TEST(Merge, AnOlderSchemaIsMigratedOnACopy) {
  const std::string old = test::fresh_db_path("merge_old", "v13.sqlite");
  std::string sql = "BEGIN;";
  for (const Migration& m : migrations())
    if (m.version <= 13)
      sql += std::string(m.sql) + ";INSERT INTO schema_migrations VALUES (" + std::to_string(m.version) + ", 'm', 'x');";
  sql += "PRAGMA user_version = 13;";
  sql += "INSERT INTO runs (run_id, status, started_utc, scenario_name, scenario_hash, scenario_toml, model_spec, "
         "hostname, pid) VALUES (7, 'complete', '2026-01-02T03:04:05Z', 'old', 'h', '', 'synthetic:tinystories-15m', "
         "'oldhost', 42);";
  sql += "INSERT INTO variants (run_id, variant_index, label, status, format, latency_p95_ms) VALUES "
         "(7, 0, 'f32 t1 w1', 'ok', 'f32', 12.5);";
  sql += "COMMIT;";
  raw_exec(old, sql);
  const std::string before = bytes_of(old);
  const std::string out = test::fresh_db_path("merge_old", "fleet.sqlite");
  const MergeResult r = merge_stores({old}, out);
  EXPECT_EQ(bytes_of(old), before);
  ASSERT_EQ(r.sources.size(), 1u);
  EXPECT_EQ(r.sources[0].schema, 13);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].source_run_id, 7);
  EXPECT_EQ(r.runs[0].identity.rfind("legacy:", 0), 0u);
  Store o(out, false);
  EXPECT_EQ(o.schema_version(), kSchemaVersion);
  EXPECT_EQ(sql_to_string(o.query("SELECT latency_p95_ms FROM variants").rows.at(0).at(0)), "12.5");
  EXPECT_EQ(std::get<int64_t>(o.query("SELECT source_schema FROM merge_sources").rows.at(0).at(0)), 13);
  EXPECT_EQ(merge_stores({old}, out).added, 0);
}

TEST(Merge, ARunRecordsItsIdentityHostTypeAndPlacement) {
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({5}), "5");
  EXPECT_EQ(cpu_list_text({}), "");
  const std::string u1 = new_run_uid(), u2 = new_run_uid();
  EXPECT_EQ(u1.size(), 32u);
  EXPECT_NE(u1, u2);
  setenv("CIBENCH_HOST_TYPE", "c7i.large", 1);
  setenv("SLURM_JOB_ID", "41", 1);
  setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  setenv("SLURM_CPUS_PER_TASK", "2", 1);
  setenv("CIBENCH_CPU_BIND", "cores", 1);
  const Fields f = placement_fields();
  unsetenv("CIBENCH_HOST_TYPE");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_CPUS_PER_TASK");
  unsetenv("CIBENCH_CPU_BIND");
  auto get = [&](const std::string& k) {
    for (const auto& [name, v] : f)
      if (name == k) return v;
    return SqlValue(std::string("(absent)"));
  };
  EXPECT_EQ(sql_to_string(get("host_type")), "c7i.large");
  EXPECT_EQ(sql_to_string(get("slurm_job_id")), "41");
  EXPECT_EQ(std::get<int64_t>(get("slurm_array_task_id")), 1);
  EXPECT_EQ(std::get<int64_t>(get("slurm_cpus_per_task")), 2);
  EXPECT_EQ(sql_to_string(get("cpu_bind")), "cores");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(get("slurm_partition")));
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(std::get<int64_t>(get("affinity_cpus")), CPU_COUNT(&set));
}

}  // namespace
}  // namespace cibench
