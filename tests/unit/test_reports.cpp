// The read side of the store (reports/db.h, reports/analysis/) and `cibench report`: runs and filters, the
// quality floor and Pareto frontier, latency CDFs, load sweeps, scaling, counters that stay
// unavailable, the compare's bootstrap, HTML/Markdown reports, and clear errors for empty, old
// and corrupt databases.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "harness/lib/compare.h"
#include "harness/lib/store.h"
#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"
#include "reports/report.h"
#include "reports/render/charts.h"
#include "reports/render/html_report.h"
#include "reports/render/markdown_report.h"
#include "reports/render/sections.h"
#include "reports/render/svg.h"
#include "tests/gui/reports_fixture.h"

namespace cibench::reports {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) { return test::fresh_db_path("reports", name); }

const test::ReportsFixture& fixture(std::string* path_out = nullptr) {
  static std::string path = temp_path("fixture.sqlite");
  static test::ReportsFixture fx = test::make_reports_fixture(path);
  if (path_out) *path_out = path;
  return fx;
}

std::string fixture_path() {
  std::string p;
  fixture(&p);
  return p;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

RunFilter filter(const char* scenario, const char* host, const char* model, const char* from, const char* to) {
  RunFilter f;
  f.scenario = scenario;
  f.host = host;
  f.model = model;
  f.date_from = from;
  f.date_to = to;
  return f;
}

ReportOptions resamples(int n) {
  ReportOptions o;
  o.compare_resamples = n;
  return o;
}

std::set<std::string> frontier_names(const Tradeoff& t) {
  std::set<std::string> s;
  for (size_t i : t.frontier) s.insert(t.points[i].v.short_name());
  return s;
}

TEST(Reports, ReadsTheSchemaTheHarnessWrites) {
  EXPECT_LE(kReadsSchemaVersion, kSchemaVersion);
  Db db(fixture_path());
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
}

// ---- the frontier on known point sets ----

TEST(Reports, ParetoFrontierLowerXHigherY) {
  // (latency, accuracy): lower x and higher y are better.
  const std::vector<Point> pts{{100, 1.0}, {60, 0.99}, {40, 0.97}, {45, 0.96}, {50, 0.98}, {120, 0.99}, {40, 0.95}};
  const auto f = pareto_frontier(pts, false, true);
  EXPECT_EQ(f, (std::vector<size_t>{2, 4, 1, 0}));  // by x: 40, 50, 60, 100
}

TEST(Reports, ParetoFrontierHigherXLowerYAndDuplicates) {
  // (throughput, KL): higher x and lower y are better; two identical best points are both kept.
  const std::vector<Point> pts{{10, 0.5}, {20, 0.3}, {20, 0.3}, {15, 0.1}, {5, 0.05}, {12, 0.2}};
  const auto f = pareto_frontier(pts, true, false);
  EXPECT_EQ(f, (std::vector<size_t>{4, 3, 1, 2}));
  EXPECT_TRUE(pareto_frontier({}, false, true).empty());
  EXPECT_EQ(pareto_frontier({{1, 1}}, false, true), std::vector<size_t>{0});
}

TEST(Reports, ParetoFrontierMatchesBruteForce) {
  uint64_t s = 12345;
  auto rnd = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return static_cast<double>(s >> 40 & 63); };
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Point> pts(1 + trial % 17);
    for (auto& p : pts) p = {rnd(), rnd()};
    for (bool xh : {false, true})
      for (bool yh : {false, true}) {
        std::set<size_t> expect;
        for (size_t i = 0; i < pts.size(); ++i) {
          bool dominated = false;
          for (size_t j = 0; j < pts.size(); ++j) {
            const double dx = xh ? pts[j].x - pts[i].x : pts[i].x - pts[j].x;  // > 0: j better
            const double dy = yh ? pts[j].y - pts[i].y : pts[i].y - pts[j].y;
            if (dx >= 0 && dy >= 0 && (dx > 0 || dy > 0)) dominated = true;
          }
          if (!dominated) expect.insert(i);
        }
        const auto got = pareto_frontier(pts, xh, yh);
        EXPECT_EQ(std::set<size_t>(got.begin(), got.end()), expect) << "trial " << trial;
        EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), [&](size_t a, size_t b) { return pts[a].x < pts[b].x; }));
      }
  }
}

// ---- runs, provenance, filters ----

TEST(Reports, RunsListAndFilters) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const auto all = db.runs();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.front().run_id, fx.run_stepped);  // newest first
  EXPECT_EQ(db.runs(filter("FORMATS", "", "", "", "")).size(), 2u);
  EXPECT_EQ(db.runs(filter("", "hostb", "", "", "")).size(), 1u);
  EXPECT_EQ(db.runs(filter("", "EPYC", "", "", "")).size(), 4u);  // matches the CPU model too
  EXPECT_EQ(db.runs(filter("", "", "nothing-like-this", "", "")).size(), 0u);
  EXPECT_EQ(db.runs(filter("", "", "", "2024-06-01", "2024-06-02")).size(), 2u);
  EXPECT_EQ(db.run(fx.run_formats).variants, 9);
  EXPECT_EQ(db.resolve_run("last"), fx.run_stepped);
  EXPECT_EQ(db.resolve_run("last~3"), fx.run_formats);
  EXPECT_THROW(db.resolve_run("99"), DbError);
  EXPECT_THROW(db.resolve_run("first"), DbError);

  const auto prov = db.provenance(fx.run_formats);
  auto find = [&](const std::string& k) {
    for (const auto& [key, v] : prov)
      if (key == k) return v;
    return std::string("<absent>");
  };
  EXPECT_EQ(find("hostname"), "hostA");
  EXPECT_EQ(find("cpu_model"), "AMD EPYC 7B13 (fixture)");
  EXPECT_EQ(find("governor_reason"), "no cpufreq in this VM");
  EXPECT_EQ(find("governor"), "<absent>");  // NULL is not shown as an empty value
}

// The writer and the readers share one definition of SLOs and quality floors
// (harness/schema/slo.h): a run stores the ones in force as typed JSON and the reports read them
// back, every metric and percentile form and every floor kind, including the classifier's
// max_accuracy_drop (a floor on the stored accuracy_delta column, whose stored value and bootstrap
// interval the trade-off uses). The run's scenario TOML says something else on purpose: the
// readers must not re-scan it when the typed columns are there.
TEST(Reports, StoredSlosAndEveryFloorKindReadBackTyped) {
  const std::string path = (fs::temp_directory_path() / ("cibench_schema_" + std::to_string(getpid()) + ".sqlite")).string();
  fs::remove(path);
  std::vector<Slo> slos;
  for (const char* key : {"p50_ms", "latency_p90_ms", "ttft_p99_ms", "tpot_p95_ms", "queue_p999_ms",
                          "service_p99_9_ms", "max_ms"}) {
    auto slo = parse_slo_key(key);
    ASSERT_TRUE(slo) << key;
    slo->limit_ms = 10.0 + static_cast<double>(slos.size());
    slos.push_back(*slo);
  }
  EXPECT_FALSE(parse_slo_key("p97_ms"));
  EXPECT_FALSE(parse_slo_key("ttft_p95"));
  std::vector<QualityFloor> floors;
  double value = 0.01;
  for (const FloorKind& k : quality_floor_kinds()) floors.push_back(QualityFloor::make(k.key, value += 0.01));
  ASSERT_EQ(floors.size(), 6u);
  EXPECT_THROW(QualityFloor::make("min_accuracy_delta", 0.1), Error);
  int64_t run = 0;
  {
    Store st(path);
    Fields f = test::fixture_run("typed", "[slo]\np95_ms = 1\n[accuracy]\nmin_top1_agreement = 0.5\n", "hostA",
                           "2026-01-01T00:00:00Z", "server");
    f.emplace_back("slos_json", slos_to_json(slos).dump());
    f.emplace_back("floors_json", floors_to_json(floors).dump());
    run = st.insert("runs", f);
    // Two classifier variants: f32 (the reference) and int8 with a stored delta and interval.
    for (int i = 0; i < 2; ++i)
      st.insert("variants", {{"run_id", run}, {"variant_index", int64_t{i}}, {"step_index", int64_t{0}},
                             {"label", std::string(i ? "int8 t1 w1" : "f32 t1 w1")}, {"status", std::string("ok")},
                             {"format", std::string(i ? "int8" : "f32")}, {"sparsity", 0.0},
                             {"threads", int64_t{1}}, {"workers", int64_t{1}}, {"latency_p95_ms", 5.0 + i},
                             {"task_accuracy", i ? 0.80 : 0.813}, {"accuracy_delta", i ? -0.013 : 0.0},
                             {"accuracy_delta_lo", i ? -0.02 : 0.0}, {"accuracy_delta_hi", i ? -0.005 : 0.0}});
  }
  Db db(path);
  const auto got = db.slos(run);
  ASSERT_EQ(got.size(), slos.size());
  const std::vector<std::string> columns{"latency_p50_ms", "latency_p90_ms", "ttft_p99_ms", "tpot_p95_ms",
                                         "queue_p999_ms", "service_p999_ms", "latency_max_ms"};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, slos[i].key);
    EXPECT_EQ(got[i].column(), columns[i]) << got[i].key;
    EXPECT_EQ(got[i].limit_ms, slos[i].limit_ms);
  }
  // Every SLO column exists in the variants table the store creates.
  {
    Store st(path);
    std::set<std::string> have;
    for (const auto& row : st.query("PRAGMA table_info(variants)").rows) have.insert(std::get<std::string>(row[1]));
    for (const auto& c : columns) EXPECT_TRUE(have.count(c)) << c;
    for (const FloorKind& k : quality_floor_kinds()) EXPECT_TRUE(have.count(k.column)) << k.column;
  }
  const auto fl = db.floors(run);
  ASSERT_EQ(fl.size(), floors.size());
  for (size_t i = 0; i < fl.size(); ++i) {
    EXPECT_EQ(fl[i].key, floors[i].key);
    EXPECT_EQ(fl[i].column, floors[i].column);
    EXPECT_DOUBLE_EQ(fl[i].bound, floors[i].bound);
  }
  const auto drop = db.scenario_floor(run, "accuracy_delta");
  ASSERT_TRUE(drop);
  EXPECT_EQ(drop->first, "max_accuracy_drop");
  EXPECT_DOUBLE_EQ(drop->second, -0.07);  // the sixth floor: value 0.07, a drop of at most 0.07
  EXPECT_DOUBLE_EQ(db.scenario_floor(run, "top1_agreement")->second, 0.02);  // not the TOML's 0.5
  // The trade-off on the stored delta: the floor from the run, the delta as stored.
  const Tradeoff t = reports::tradeoff(db, {run}, "latency_p95_ms", "accuracy_delta");
  EXPECT_EQ(t.floor_source, "scenario: max_accuracy_drop");
  ASSERT_EQ(t.points.size(), 2u);
  for (const auto& pt : t.points) {
    EXPECT_DOUBLE_EQ(pt.y, pt.v.format == "int8" ? -0.013 : 0.0);
    EXPECT_TRUE(pt.meets_floor);
  }
  fs::remove(path);
}

// Runs stored before the typed columns: the stored scenario read with the same definitions,
// including the forms the old readers missed (p99_9, the classifier's max_accuracy_drop).
TEST(Reports, OlderRunsFallBackToTheStoredScenarioWithTheSameGrammar) {
  const std::string path = (fs::temp_directory_path() / ("cibench_schema_old_" + std::to_string(getpid()) + ".sqlite")).string();
  fs::remove(path);
  int64_t run = 0;
  {
    Store st(path);
    run = st.insert("runs", test::fixture_run("old", "[slo]\nqueue_p99_9_ms = 20\n\n[accuracy]\nmax_accuracy_drop = 0.02\n"
                                               "min_task_accuracy = 0.7\n", "hostA", "2026-01-01T00:00:00Z", "server"));
  }
  Db db(path);
  const auto slos = db.slos(run);
  ASSERT_EQ(slos.size(), 1u);
  EXPECT_EQ(slos[0].column(), "queue_p999_ms");
  EXPECT_EQ(slos[0].limit_ms, 20);
  EXPECT_DOUBLE_EQ(db.scenario_floor(run, "accuracy_delta")->second, -0.02);
  EXPECT_DOUBLE_EQ(db.scenario_floor(run, "task_accuracy")->second, 0.7);
  fs::remove(path);
}

// Everything the readers show of a store, as lines: each run, its SLOs and floors, and every
// numeric column of every variant (to compare a store before and after a migration).
std::vector<std::string> read_everything(const std::string& path) {
  Db db(path);
  std::vector<std::string> out;
  for (const RunInfo& r : db.runs()) {
    out.push_back(r.scenario_name + " " + r.status + " " + r.kind);
    for (const Slo& s : db.slos(r.run_id)) out.push_back(s.key + "=" + fmt_num(s.limit_ms) + " on " + s.column());
    for (const QualityFloor& f : db.floors(r.run_id)) out.push_back(f.describe());
    for (const Variant& v : db.variants({r.run_id})) {
      std::string row = v.label + " " + v.status;
      for (const auto& [c, x] : v.num)
        if (c != "variant_id") row += " " + c + "=" + fmt_num(x, 8);
      out.push_back(row);
    }
  }
  return out;
}

// A store written by the previous release (schema 3: a quickstart run and a classifier run,
// tests/fixtures/store-schema3.sqlite, made by `cibench run` at that release) opens and reads: as
// is, read-only, and after the store has migrated it to the current schema, with the SLOs and
// floors recovered from the stored scenarios and every earlier value unchanged.
TEST(Reports, StoreFromTheLastReleaseOpensAndReadsBeforeAndAfterMigration) {
  const fs::path fixture = fs::path(CIBENCH_SOURCE_DIR) / "tests/fixtures/store-schema3.sqlite";
  ASSERT_TRUE(fs::exists(fixture)) << fixture;
  const fs::path dir = fs::temp_directory_path() / ("cibench_v3_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string old_path = (dir / "as-is.sqlite").string(), migrated = (dir / "migrated.sqlite").string();
  fs::copy_file(fixture, old_path, fs::copy_options::overwrite_existing);
  fs::copy_file(fixture, migrated, fs::copy_options::overwrite_existing);

  const auto read_all = read_everything;
  {
    Db db(old_path);
    EXPECT_EQ(db.schema_version(), 3);
    const auto runs = db.runs();
    ASSERT_EQ(runs.size(), 2u);
  }
  const auto before = read_all(old_path);
  {
    Store st(migrated);  // applies migrations 4 and 5
    EXPECT_EQ(st.schema_version(), kSchemaVersion);
  }
  const auto after = read_all(migrated);
  EXPECT_EQ(before, after);
  // What the old runs were judged by, recovered with the schema's definitions.
  Db db(migrated);
  int64_t quick = 0, classifier = 0;
  for (const RunInfo& r : db.runs()) (r.scenario_name == "quickstart" ? quick : classifier) = r.run_id;
  ASSERT_GT(quick, 0);
  ASSERT_GT(classifier, 0);
  std::map<std::string, std::string> cols;
  for (const Slo& s : db.slos(quick)) cols[s.key] = s.column();
  EXPECT_EQ(cols.at("p95_ms"), "latency_p95_ms");
  EXPECT_EQ(cols.at("ttft_p99_ms"), "ttft_p99_ms");
  std::map<std::string, std::string> ccols;
  for (const Slo& s : db.slos(classifier)) ccols[s.key] = s.column();
  EXPECT_EQ(ccols.at("p99_9_ms"), "latency_p999_ms");  // the form the old scanner dropped
  const auto drop = db.scenario_floor(classifier, "accuracy_delta");
  ASSERT_TRUE(drop);
  EXPECT_EQ(drop->first, "max_accuracy_drop");
  EXPECT_DOUBLE_EQ(drop->second, -0.01);
  const Tradeoff t = reports::tradeoff(db, {classifier}, "latency_p95_ms", "accuracy_delta");
  EXPECT_EQ(t.floor_source, "scenario: max_accuracy_drop");
  EXPECT_FALSE(t.points.empty());
  fs::remove_all(dir);
}

// A store written by the release before the commands' tables (schema 4, by e2e3876: a quickstart
// run and a classifier-realtime run, tests/fixtures/store-schema4.sqlite) reads the same before and
// after migration 5, its runs are scenario runs, the commands' new columns read as unmeasured, and
// its typed floors and SLOs are the ones stored.
TEST(Reports, StoreOfSchema4ReadsTheSameAfterMigration5) {
  const fs::path fixture = fs::path(CIBENCH_SOURCE_DIR) / "tests/fixtures/store-schema4.sqlite";
  ASSERT_TRUE(fs::exists(fixture)) << fixture;
  const fs::path dir = fs::temp_directory_path() / ("cibench_v4_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string old_path = (dir / "as-is.sqlite").string(), migrated = (dir / "migrated.sqlite").string();
  fs::copy_file(fixture, old_path, fs::copy_options::overwrite_existing);
  fs::copy_file(fixture, migrated, fs::copy_options::overwrite_existing);
  EXPECT_EQ(Db(old_path).schema_version(), 4);
  const auto before = read_everything(old_path);
  {
    Store st(migrated);
    EXPECT_EQ(st.schema_version(), kSchemaVersion);
    EXPECT_EQ(sql_to_string(st.query("SELECT group_concat(DISTINCT kind) FROM runs").rows.at(0).at(0)), "scenario");
    EXPECT_EQ(std::get<int64_t>(st.query("SELECT COUNT(*) FROM variants WHERE decode_tokens_per_s IS NOT NULL OR "
                                         "calib_rel_err IS NOT NULL").rows.at(0).at(0)),
              0);
  }
  EXPECT_EQ(before, read_everything(migrated));
  ASSERT_EQ(before.front().rfind("classifier-realtime complete scenario", 0), 0u) << before.front();
  Db db(migrated);
  for (const RunInfo& r : db.runs()) {
    EXPECT_EQ(r.kind, "scenario");
    EXPECT_FALSE(db.slos(r.run_id).empty()) << r.scenario_name;
    ASSERT_EQ(db.floors(r.run_id).size(), 1u) << r.scenario_name;
    EXPECT_EQ(db.floors(r.run_id)[0].key, r.scenario_name == "quickstart" ? "min_top1_agreement" : "max_accuracy_drop");
  }
  fs::remove_all(dir);
}

TEST(Reports, TomlScalarsSlosAndFloor) {
  const auto m = scan_toml_scalars("[a]\nx = 1.5 # c\ns = \"q\"\narr = [\n 1,\n 2\n]\n[b]\ny = 'z'\n");
  EXPECT_EQ(m.at("a.x"), "1.5");
  EXPECT_EQ(m.at("a.s"), "q");
  EXPECT_EQ(m.at("b.y"), "z");
  EXPECT_EQ(m.count("a.arr"), 0u);
  const auto& fx = fixture();
  Db db(fixture_path());
  const auto slos = db.slos(fx.run_formats);
  ASSERT_EQ(slos.size(), 2u);
  std::map<std::string, Slo> by;
  for (const auto& s : slos) by[s.key] = s;
  EXPECT_EQ(by.at("p95_ms").column(), "latency_p95_ms");
  EXPECT_EQ(by.at("p95_ms").limit_ms, 100);
  EXPECT_EQ(by.at("ttft_p99_ms").metric, "ttft");
  EXPECT_EQ(by.at("ttft_p99_ms").column(), "ttft_p99_ms");
  EXPECT_EQ(db.scenario_floor(fx.run_formats, "top1_agreement")->second, 0.95);
  EXPECT_EQ(db.scenario_floor(fx.run_formats, "ppl_ratio")->second, 1.05);
  EXPECT_FALSE(db.scenario_floor(fx.run_formats, "kl_mean"));
}

// ---- trade-off ----

TEST(Reports, TradeoffFloorFrontierAndUnplotted) {
  const auto& fx = fixture();
  Db db(fixture_path());
  EXPECT_EQ(reports::default_axes(db, {fx.run_formats}), (std::pair<std::string, std::string>{"latency_p95_ms", "top1_agreement"}));
  const Tradeoff t = reports::tradeoff(db, {fx.run_formats}, "latency_p95_ms", "top1_agreement");
  ASSERT_TRUE(t.floor);
  EXPECT_DOUBLE_EQ(*t.floor, 0.95);
  EXPECT_EQ(t.floor_source, "scenario: min_top1_agreement");
  EXPECT_EQ(t.points.size(), 7u);
  EXPECT_EQ(t.unplotted.size(), 2u);  // f32 t1 (no accuracy) and the failed variant
  std::set<std::string> below;
  for (const auto& p : t.points)
    if (!p.meets_floor) below.insert(p.v.short_name());
  EXPECT_EQ(below, (std::set<std::string>{"int4 t2 w1", "int8 sp0.5 t2 w1"}));
  EXPECT_EQ(frontier_names(t), (std::set<std::string>{"int8 t2 w1", "bf16 sp0.5 t2 w1", "bf16 t2 w1", "f32 t2 w1"}));
  ASSERT_EQ(t.frontier.size(), 4u);
  EXPECT_EQ(t.points[t.frontier[0]].v.variant_id, fx.v_int8);  // ordered by x
  EXPECT_EQ(t.points[t.frontier[3]].v.variant_id, fx.v_f32);
  for (const auto& [v, why] : t.unplotted) {
    if (v.variant_id == fx.v_f32_t1) {
      EXPECT_NE(why.find("accuracy not run"), std::string::npos) << why;
    } else {
      EXPECT_NE(why.find("failed"), std::string::npos) << why;
    }
  }
  // A floor set by the user moves points across it and changes the frontier.
  const Tradeoff t2 = reports::tradeoff(db, {fx.run_formats}, "latency_p95_ms", "top1_agreement", 0.985);
  EXPECT_EQ(t2.floor_source, "set by the user");
  EXPECT_EQ(frontier_names(t2), (std::set<std::string>{"bf16 t2 w1", "f32 t2 w1"}));
  // Lower-is-better y: the floor is a ceiling (ppl_ratio <= 1.05 from the scenario).
  const Tradeoff t3 = reports::tradeoff(db, {fx.run_formats}, "achieved_qps", "ppl_ratio");
  EXPECT_DOUBLE_EQ(*t3.floor, 1.05);
  // Every floor of the run applies: ppl_ratio <= 1.05 on the axis and top-1 agreement >= 0.95.
  for (const auto& p : t3.points)
    EXPECT_EQ(p.meets_floor, p.y <= 1.05 && *p.v.get("top1_agreement") >= 0.95) << p.v.short_name();
  // Memory axis in MiB.
  const Tradeoff t4 = reports::tradeoff(db, {fx.run_formats}, "peak_rss_bytes", "top1_agreement");
  EXPECT_DOUBLE_EQ(t4.points[0].x, 64.0);
  // Hover text carries the full configuration.
  const std::string cfg = t.points[t.frontier[0]].v.config();
  // Numbered from 1 as everywhere shown: int8 t2 is the run's third variant (index 2).
  EXPECT_EQ(cfg.rfind("run " + std::to_string(fx.run_formats) + ", variant 3\n", 0), 0u) << cfg;
  EXPECT_NE(cfg.find("format: int8"), std::string::npos);
  EXPECT_NE(cfg.find("threads: 2"), std::string::npos);
  EXPECT_NE(cfg.find("isa_used: avx2"), std::string::npos);
}

// ---- latency, load, scaling ----

TEST(Reports, LatencyCdfFromRequestsOrHistogram) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const CdfSeries r = reports::latency_cdf(db, fx.v_f32);
  EXPECT_EQ(r.source, "requests");
  EXPECT_EQ(r.count, 200);
  ASSERT_FALSE(r.points.empty());
  EXPECT_DOUBLE_EQ(r.points.back().y, 1.0);
  EXPECT_TRUE(std::is_sorted(r.points.begin(), r.points.end(), [](const Point& a, const Point& b) { return a.x < b.x; }));
  // The 190th of 200 latencies is the nearest-rank p95 (the fixture puts it at 100 ms).
  const auto at95 = std::find_if(r.points.begin(), r.points.end(), [](const Point& p) { return p.y >= 0.95; });
  EXPECT_NEAR(at95->x, 100.0, 1e-9);
  const CdfSeries h = reports::latency_cdf(db, fx.v_int8);
  EXPECT_EQ(h.source, "histogram");
  EXPECT_EQ(h.count, 100);
  ASSERT_EQ(h.points.size(), 10u);
  EXPECT_DOUBLE_EQ(h.points[0].x, 24.0);
  EXPECT_DOUBLE_EQ(h.points[0].y, 0.1);
  EXPECT_DOUBLE_EQ(h.points[9].x, 60.0);
  EXPECT_TRUE(reports::latency_cdf(db, fx.v_w8a8).points.empty());  // neither stored
}

TEST(Reports, LoadSweepAndScaling) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const LoadSweep ls = reports::load_sweep(db, fx.run_stepped);
  ASSERT_EQ(ls.curves.size(), 1u);
  ASSERT_EQ(ls.curves[0].steps.size(), 4u);
  EXPECT_EQ(ls.curves[0].steps[2].offered_qps, 4);
  EXPECT_EQ(*ls.curves[0].steps[3].p95_ms, 300);
  EXPECT_EQ(*ls.curves[0].knee_qps, 4);
  ASSERT_EQ(ls.slos.size(), 1u);
  EXPECT_EQ(ls.slos[0].limit_ms, 100);
  EXPECT_EQ(ls.curves[0].name, "f32 t2 w1");  // the curve, without a rate
  // Another metric: the fixture stores ttft p95/p99 (0.3 / 0.35 x latency p95) but no ttft p50.
  const LoadSweep tt = reports::load_sweep(db, fx.run_stepped, "ttft");
  EXPECT_EQ(tt.metric, "ttft");
  ASSERT_EQ(tt.curves[0].steps.size(), 4u);
  EXPECT_NEAR(*tt.curves[0].steps[3].p95_ms, 90, 1e-9);
  EXPECT_FALSE(tt.curves[0].steps[3].p50_ms.has_value());
  EXPECT_THROW(reports::load_sweep(db, fx.run_stepped, "latency_p95_ms; DROP TABLE runs"), DbError);

  // One line per worker count: 1x1 and 2x1 on "f32 w1", 1x2 and 2x2 on "f32 w2".
  const auto sc = reports::scaling(db, {fx.run_threads});
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].name, "f32 w1");
  EXPECT_EQ(sc[1].name, "f32 w2");
  std::vector<std::pair<int64_t, int64_t>> tw;
  for (const auto& s : sc)
    for (const auto& p : s.points) tw.emplace_back(p.threads, p.workers);
  EXPECT_EQ(tw, (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}}));
  EXPECT_DOUBLE_EQ(*sc[1].points[1].p95_ms, 75);
  EXPECT_FALSE(scaling_plots_decode(sc));  // a scenario run plots queries/s
}

// ---- counters ----

TEST(Reports, CountersUnavailableStayUnavailable) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const auto cs = reports::counters(db, {fx.run_formats});
  const CounterSummary* f32 = nullptr;
  const CounterSummary* bf16 = nullptr;
  for (const auto& c : cs) {
    if (c.v.variant_id == fx.v_f32) f32 = &c;
    if (c.v.variant_id == fx.v_bf16) bf16 = &c;
  }
  ASSERT_TRUE(f32 && bf16);
  for (const auto& n : counter_names()) {
    const CounterValue& v = f32->values.at(n);
    EXPECT_FALSE(v.value) << n;  // never a zero
    EXPECT_FALSE(v.reason.empty()) << n;
  }
  EXPECT_NE(f32->values.at("ipc").reason.find("PAPI_ENOEVNT"), std::string::npos);
  EXPECT_NE(f32->values.at("energy_per_request_j").reason.find("RAPL"), std::string::npos);
  EXPECT_DOUBLE_EQ(*bf16->values.at("ipc").value, 1.5);
  EXPECT_DOUBLE_EQ(*bf16->values.at("l1d_mpki").value, 12.0);
  EXPECT_DOUBLE_EQ(*bf16->values.at("energy_per_request_j").value, 3.0 / 4);  // separate pass: 4 queries
  EXPECT_FALSE(bf16->values.at("l2_mpki").value);  // not recorded at all: a reason, not a zero
  EXPECT_NE(bf16->values.at("l2_mpki").reason.find("not recorded"), std::string::npos);
}

// ---- compare ----

TEST(Reports, BootstrapOfAKnownShift) {
  std::vector<double> a, b;
  for (int i = 0; i < 300; ++i) {
    a.push_back(50 + (i * 37 % 100) * 0.1);
    b.push_back(a.back() + 5);
  }
  EXPECT_DOUBLE_EQ(sample_stat(a, 100), *std::max_element(a.begin(), a.end()));
  EXPECT_DOUBLE_EQ(sample_stat({3, 1, 2, 4}, 50), 2);  // nearest rank: ceil(0.5 * 4) = 2nd
  auto [lo, hi] = bootstrap_diff_ci(a, b, 50, 500, 0.95, 7);
  EXPECT_LE(lo, 5.0 + 1e-9);
  EXPECT_GE(hi, 5.0 - 1e-9);
  EXPECT_GT(lo, 3.0);
  EXPECT_LT(hi, 7.0);
  auto same = bootstrap_diff_ci(a, a, 0, 500, 0.95, 7);
  EXPECT_LT(same.first, 0);
  EXPECT_GT(same.second, 0);
  EXPECT_EQ(bootstrap_diff_ci(a, b, 95, 200, 0.95, 3), bootstrap_diff_ci(a, b, 95, 200, 0.95, 3));  // seeded
}

TEST(Reports, CompareTwoRuns) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const Comparison c = reports::compare_runs(db, fx.run_formats, fx.run_formats_b, 300);
  EXPECT_EQ(c.a.hostname, "hostA");
  EXPECT_EQ(c.b.hostname, "hostB");
  EXPECT_TRUE(c.only_in_a.empty());
  EXPECT_TRUE(c.only_in_b.empty());
  bool saw_f32_p95 = false, saw_int8 = false, saw_qps = false, saw_w8a8 = false;
  for (const auto& r : c.rows) {
    if (r.variant.rfind("f32 t2", 0) == 0 && r.metric == "latency p95 (ms)") {
      saw_f32_p95 = true;
      EXPECT_DOUBLE_EQ(*r.a, 100.0);  // the 190th of 200 requests
      EXPECT_DOUBLE_EQ(*r.diff, 10.0);
      ASSERT_TRUE(r.ci_low && r.ci_high);
      EXPECT_TRUE(r.significant());  // every request of B is 5 to 10 ms slower
      EXPECT_GT(*r.ci_low, 0);
    }
    if (r.variant.rfind("int8 t2", 0) == 0 && r.metric == "latency p95 (ms)") {
      saw_int8 = true;  // histogram only: expanded at bucket midpoints, identical in both runs
      EXPECT_DOUBLE_EQ(*r.diff, 0.0);
      EXPECT_NE(r.note.find("histogram"), std::string::npos);
    }
    if (r.variant.rfind("w8a8", 0) == 0 && r.metric == "latency p95 (ms)") {
      saw_w8a8 = true;
      EXPECT_FALSE(r.ci_low);  // nothing per request stored
      EXPECT_NE(r.note.find("not stored"), std::string::npos);
    }
    if (r.metric == "throughput (queries/s)") {
      saw_qps = true;
      EXPECT_FALSE(r.ci_low);
    }
  }
  EXPECT_TRUE(saw_f32_p95 && saw_int8 && saw_qps && saw_w8a8);
}

// The numbers of `cibench compare --json` (its own code path, run as the command) are reports::compare_runs's,
// which the report and the GUI show: identical intervals for the same samples, seed and resamples.
TEST(Reports, CompareCommandGivesTheNumbersOfDbCompare) {
  const std::string exe = std::string(CIBENCH_BINARY_DIR) + "/bin/cibench";
  if (!fs::exists(exe)) GTEST_SKIP() << exe << " not built";
  const auto& fx = fixture();
  Db db(fixture_path());
  const Comparison c = reports::compare_runs(db, fx.run_formats, fx.run_formats_b, 400, 9);
  const std::string out = temp_path("compare.json");
  const std::string cmd = exe + " compare " + std::to_string(fx.run_formats) + " " + std::to_string(fx.run_formats_b) +
                          " --resamples 400 --seed 9 --json --db " + fixture_path() + " > " + out + " 2>" + out + ".err";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(out + ".err");
  const nlohmann::json h = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(h["rows"].size(), c.rows.size());
  int intervals = 0, tpot = 0;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const auto& e = h["rows"][i];
    const CompareRow& r = c.rows[i];
    EXPECT_EQ(e["variant"].get<std::string>(), r.variant);
    EXPECT_EQ(e["metric"].get<std::string>(), r.metric);
    if (!r.ci_low) continue;
    EXPECT_EQ(e["a"].get<double>(), *r.a) << r.variant << " " << r.metric;
    EXPECT_EQ(e["b"].get<double>(), *r.b);
    EXPECT_EQ(e["ci_low"].get<double>(), *r.ci_low) << r.variant << " " << r.metric;
    EXPECT_EQ(e["ci_high"].get<double>(), *r.ci_high) << r.variant << " " << r.metric;
    EXPECT_EQ(e["n_a"].get<int64_t>(), *r.n_a);
    EXPECT_EQ(e["n_b"].get<int64_t>(), *r.n_b);
    ++intervals;
    tpot += r.metric.rfind("tpot", 0) == 0;
  }
  EXPECT_GE(intervals, 10);  // f32 and bf16 (latency, ttft, tpot) and int8 (latency), p50 and p95
  EXPECT_EQ(tpot, 4);
}

// The interval does not depend on the order the samples were read in: the fixture stores tpot in
// completion order (not sorted), and the compare's interval is the one of the sorted samples.
TEST(Reports, CompareIntervalDoesNotDependOnTheOrderOfTheRows) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const Comparison c = reports::compare_runs(db, fx.run_formats, fx.run_formats_b, 300, 5);
  Store st(fixture_path(), false);
  auto rows_as_stored = [&](int64_t run) {
    const auto q = st.query("SELECT r.tpot_ms FROM requests r JOIN variants v ON v.variant_id = r.variant_id "
                            "WHERE v.run_id = ? AND v.format = 'f32' AND v.threads = 2 ORDER BY r.rowid", {run});
    std::vector<double> out;
    for (const auto& row : q.rows) out.push_back(std::get<double>(row[0]));
    return out;
  };
  const auto a = rows_as_stored(fx.run_formats), b = rows_as_stored(fx.run_formats_b);
  ASSERT_EQ(a.size(), 200u);
  ASSERT_FALSE(std::is_sorted(a.begin(), a.end()));  // stored out of order
  const CompareRow* row = nullptr;
  for (const auto& r : c.rows)
    if (r.variant.rfind("f32 t2", 0) == 0 && r.metric == "tpot p50 (ms)") row = &r;
  ASSERT_TRUE(row);
  const PercentileDiff d = percentile_diff(a, b, 50, 300, 5);
  EXPECT_EQ(*row->ci_low, d.lo);
  EXPECT_EQ(*row->ci_high, d.hi);
  auto sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  EXPECT_EQ(bootstrap_diff_ci(sa, sb, 50, 300, 0.95, 5), std::make_pair(d.lo, d.hi));
  std::reverse(sa.begin(), sa.end());
  const PercentileDiff rev = percentile_diff(sa, b, 50, 300, 5);
  EXPECT_EQ(rev.lo, d.lo);
  EXPECT_EQ(rev.hi, d.hi);
  // And the harness's name for it gives the same numbers.
  const BootstrapCI h = bootstrap_percentile_diff(a, b, 50, 300, 5);
  EXPECT_EQ(h.lo, d.lo);
  EXPECT_EQ(h.hi, d.hi);
}

TEST(Reports, PercentileIsTheSampleMaximumByTheArithmeticOfNearestRank) {
  // ceil(p/100 n) = n  <=>  n < 1 / (1 - p/100)
  EXPECT_TRUE(percentile_is_max(95, 19));
  EXPECT_FALSE(percentile_is_max(95, 20));
  EXPECT_TRUE(percentile_is_max(99, 99));
  EXPECT_FALSE(percentile_is_max(99, 100));
  EXPECT_TRUE(percentile_is_max(50, 1));
  EXPECT_FALSE(percentile_is_max(50, 2));
  EXPECT_TRUE(percentile_is_max(99.9, 999));
  EXPECT_FALSE(percentile_is_max(99.9, 1000));
  EXPECT_EQ(min_n_below_max(95), 20u);
  for (size_t n = 1; n < 300; ++n) {
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
    EXPECT_EQ(percentile_is_max(95, n), sample_stat(v, 95) == v.back()) << n;
  }
}

// Six requests per side (quickstart's minimum): p95 is each sample's maximum, said beside n.
TEST(Reports, CompareShowsNAndChangeAndWarnsWhenP95IsTheMaximum) {
  const std::string path = temp_path("small_compare.sqlite");
  int64_t runs[2];
  {
    Store s(path);
    for (int r = 0; r < 2; ++r) {
      runs[r] = s.insert("runs", test::fixture_run("fixture-formats", test::fixture_formats_toml(), "hostA",
                                                   r ? "2024-05-02T10:00:00Z" : "2024-05-01T10:00:00Z", "server"));
      const int64_t v = test::fixture_variant(s, runs[r], 0, 0, {"f32", 0, 2, 1, 100, 1.0}, 0, 2.0);
      s.update("variants", "variant_id", v, {{"queries", int64_t{6}}});
      for (int i = 0; i < 6; ++i)
        s.insert("requests", {{"variant_id", v}, {"seq", int64_t{i}}, {"query_index", int64_t{i}}, {"worker", int64_t{0}},
                              {"ok", int64_t{1}}, {"scheduled_ms", 100.0 * i}, {"queue_ms", 0.0},
                              {"service_ms", 10.0 * (i + 1) + 5.0 * r}, {"latency_ms", 10.0 * (i + 1) + 5.0 * r}});
    }
  }
  Db db(path);
  const Comparison c = reports::compare_runs(db, runs[0], runs[1], 200, 1);
  EXPECT_TRUE(c.warnings.empty());
  const CompareRow *p95 = nullptr, *p50 = nullptr, *rss = nullptr;
  for (const auto& r : c.rows) {
    if (r.metric == "latency p95 (ms)") p95 = &r;
    if (r.metric == "latency p50 (ms)") p50 = &r;
    if (r.metric.rfind("peak RSS", 0) == 0) rss = &r;
  }
  ASSERT_TRUE(p95 && p50 && rss);
  EXPECT_EQ(*p95->n_a, 6);
  EXPECT_EQ(*p95->n_b, 6);
  EXPECT_DOUBLE_EQ(*p95->a, 60.0);  // the maximum
  EXPECT_DOUBLE_EQ(*p95->change_pct, 100.0 * 5 / 60);
  EXPECT_NE(p95->warning.find("sample maximum"), std::string::npos) << p95->warning;
  EXPECT_NE(p95->warning.find("n >= 20"), std::string::npos) << p95->warning;
  EXPECT_TRUE(p50->warning.empty()) << p50->warning;  // the 3rd of 6
  EXPECT_DOUBLE_EQ(*p50->change_pct, 100.0 * 5 / 30);
  EXPECT_EQ(rss->metric, "peak RSS (MiB)");
  EXPECT_DOUBLE_EQ(*rss->a, 64.0);
  const nlohmann::json j = comparison_json(c);
  bool warned = false;
  for (const auto& r : j["rows"]) warned = warned || r.contains("warning");
  EXPECT_TRUE(warned);
  const std::string mdn = render_markdown(collect_report(db, {runs[0], runs[1]}, resamples(100)));
  EXPECT_NE(mdn.find("60 (n=6)"), std::string::npos);
  EXPECT_NE(mdn.find("+8.3%"), std::string::npos);
}

// Runs of different scenarios and models are compared only with a warning said first; failed
// variants are named; the GUI's "B" is never silently another scenario's run.
TEST(Reports, CompareWarnsAcrossScenariosAndNamesFailedVariants) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const Comparison same = reports::compare_runs(db, fx.run_formats, fx.run_formats_b, 100);
  EXPECT_TRUE(same.warnings.empty());
  ASSERT_EQ(same.failed.size(), 2u);  // int4_sym_g32 failed in both runs
  EXPECT_NE(same.failed[0].find("A: int4_sym_g32 t2 w1"), std::string::npos) << same.failed[0];
  EXPECT_NE(same.failed[0].find("no kernel for this format"), std::string::npos) << same.failed[0];
  const Comparison other = reports::compare_runs(db, fx.run_formats, fx.run_threads, 100);
  ASSERT_FALSE(other.warnings.empty());
  EXPECT_FALSE(other.same_scenario);
  EXPECT_NE(other.warnings[0].find("fixture-formats"), std::string::npos);
  EXPECT_NE(other.warnings[0].find("fixture-threads"), std::string::npos);
  EXPECT_EQ(reports::comparable_runs(db, fx.run_formats), std::vector<int64_t>{fx.run_formats_b});
  EXPECT_TRUE(reports::comparable_runs(db, fx.run_threads).empty());
  const ReportData d = collect_report(db, {fx.run_formats, fx.run_threads}, resamples(50));
  const std::string html = render_html(d), mdn = render_markdown(d);
  const size_t warn_md = mdn.find("**WARNING (compare): different scenarios");
  ASSERT_NE(warn_md, std::string::npos);
  EXPECT_LT(warn_md, mdn.find("## Verdicts"));
  const size_t warn_html = html.find("WARNING (compare): different scenarios");
  ASSERT_NE(warn_html, std::string::npos);
  EXPECT_LT(warn_html, html.find("<h2>Verdicts"));
  EXPECT_NE(mdn.find("failed: A: int4_sym_g32 t2 w1"), std::string::npos);
}

// ---- reports ----

TEST(Reports, HtmlAndMarkdownCarryTheSameFrontier) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const std::string out = temp_path("report_out");
  const ReportFiles f = write_report(db, {fx.run_formats}, out);
  const std::string html = read_file(f.html), mdn = read_file(f.markdown);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // no JS needed
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("data-name=\"Pareto frontier\""), std::string::npos);
  EXPECT_NE(html.find("quality floor 0.95"), std::string::npos);
  // The CDF of times within a decade (20 to 100 ms) is on a linear axis, not a log one with two labels.
  {
    const size_t at = html.find("Latency distribution (CDF)");
    ASSERT_NE(at, std::string::npos);
    const std::string cdf = html.substr(at, html.find("</svg>", at) - at);
    EXPECT_EQ(cdf.find("(log scale)"), std::string::npos);
    size_t labels = 0;
    for (size_t p = cdf.find("text-anchor=\"middle\">"); p != std::string::npos; p = cdf.find("text-anchor=\"middle\">", p + 1))
      labels += std::isdigit(static_cast<unsigned char>(cdf[p + std::strlen("text-anchor=\"middle\">")])) != 0;
    EXPECT_GE(labels, 3u);
  }
  // The frontier's configuration cells keep one line per key, the variant numbered from 1.
  EXPECT_NE(html.find("<td>run " + std::to_string(fx.run_formats) + ", variant 3<br>label: int8 t2 w1"), std::string::npos);
  // The frontier table of both documents lists exactly the query layer's frontier.
  const Tradeoff t = reports::tradeoff(db, {fx.run_formats}, "latency_p95_ms", "top1_agreement");
  auto section = [](const std::string& s, const std::string& from, const std::string& to) {
    const size_t a = s.find(from);
    return a == std::string::npos ? std::string() : s.substr(a, s.find(to, a) - a);
  };
  const std::string md_front = section(mdn, "## Pareto frontier", "## Variants ranked");
  const std::string html_front = section(html, "<h3>Frontier</h3>", "<h2>Variants ranked");
  for (const auto& p : t.points) {
    const bool in_md = md_front.find("| " + p.v.short_name() + " |") != std::string::npos;
    const bool in_html = html_front.find("<td>" + p.v.short_name() + "</td>") != std::string::npos;
    EXPECT_EQ(in_md, p.on_frontier) << p.v.short_name();
    EXPECT_EQ(in_html, p.on_frontier) << p.v.short_name();
  }
  // Ranked: frontier variants meeting floor and SLOs first; the unplaced ones last with rank '-'.
  const ReportData d = collect_report(db, {fx.run_formats});
  const auto ranked = rank_variants(d);
  ASSERT_EQ(ranked.size(), 9u);
  EXPECT_EQ(ranked[0].v.variant_id, fx.v_int8);
  EXPECT_TRUE(ranked[0].on_frontier);
  EXPECT_EQ(ranked[8].rank, 0);
  for (const auto& r : ranked) {
    if (r.v.variant_id == fx.v_f32_t1) {
      EXPECT_EQ(r.slo_verdict, "missed: p95_ms 150 > 100");
    }
  }
  // The same ranked rows in both documents.
  for (const auto& r : ranked) {
    EXPECT_NE(mdn.find("| " + (r.rank ? std::to_string(r.rank) : std::string("-")) + " | " + r.v.short_name() + " |"),
              std::string::npos)
        << r.v.short_name();
  }
  // Counters: unavailable with the reason in both, once per reason, naming the variants (from 1,
  // of the run's 9: the failed 9th has no counters).
  EXPECT_NE(mdn.find("IPC (variant 1 of 9): needs instructions and cycles: PAPI_ENOEVNT"),
            std::string::npos);
  EXPECT_NE(html.find("IPC (variant 1 of 9): needs instructions and cycles: PAPI_ENOEVNT"),
            std::string::npos);
}

// Which variants a set of rows is, as the counters' unavailable lines say it: numbered from 1 of
// the run's variants, ranges collapsed, "all" only when every variant (and step) is in it.
TEST(Reports, VariantSetTextNamesTheVariantsExactly) {
  auto v = [](int64_t run, int64_t index, int64_t step) {
    Variant x;
    x.variant_id = run * 100 + index * 10 + step;
    x.run_id = run, x.variant_index = index, x.step_index = step;
    return x;
  };
  std::vector<Variant> all;
  for (int i = 0; i < 8; ++i) all.push_back(v(1, i, 0));
  auto pick = [&](std::initializer_list<int> idx) {
    std::vector<Variant> out;
    for (int i : idx) out.push_back(all[static_cast<size_t>(i)]);
    return out;
  };
  EXPECT_EQ(variant_set_text(all, all), "all 8 variants");
  EXPECT_EQ(variant_set_text(pick({0, 1, 2, 4}), all), "variants 1-3, 5 of 8");
  EXPECT_EQ(variant_set_text(pick({3}), all), "variant 4 of 8");
  EXPECT_EQ(variant_set_text(pick({0, 1, 3, 4, 5, 6, 7}), all), "variants 1, 2, 4-8 of 8");
  EXPECT_EQ(variant_set_text({}, all), "no variant");
  EXPECT_EQ(variant_set_text(pick({0}), pick({0})), "the only variant");  // not "all 1 variant"
  // A run whose 3rd variant has no row (it failed before storing counters): never "all".
  std::vector<Variant> gap = pick({0, 1, 3});
  EXPECT_EQ(variant_set_text(gap, gap), "variants 1, 2, 4 of 4");
  // Stepped: a variant with only some of its steps.
  std::vector<Variant> stepped{v(2, 0, 0), v(2, 0, 1), v(2, 0, 2), v(2, 1, 0), v(2, 1, 1), v(2, 1, 2)};
  EXPECT_EQ(variant_set_text(stepped, stepped), "all 2 variants");
  EXPECT_EQ(variant_set_text({stepped[0], stepped[1], stepped[2], stepped[4]}, stepped),
            "variant 1, variant 2 (step 2 of 3) of 2");
  EXPECT_EQ(variant_set_text({stepped[0], stepped[1]}, stepped), "variant 1 (steps 1, 2 of 3) of 2");
  // Several runs: one part per run that has some; one phrase when every variant of every run.
  std::vector<Variant> both = all;
  both.insert(both.end(), stepped.begin(), stepped.end());
  EXPECT_EQ(variant_set_text(both, both), "all 10 variants of 2 runs");
  std::vector<Variant> some = pick({0, 1});
  some.insert(some.end(), stepped.begin(), stepped.end());
  EXPECT_EQ(variant_set_text(some, both), "run 1: variants 1, 2 of 8; run 2: all 2 variants");
  EXPECT_EQ(variant_set_text(stepped, both), "run 2: all 2 variants");
}

// The unavailable counters of the fixture: a reason that some variants have for one counter and
// others for another is not "all" variants for each; each counter's variants are named.
TEST(Reports, CounterGapsNameTheVariantsOfEachCounter) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const auto rows = reports::counters(db, {fx.run_formats});
  const auto gaps = counter_gaps(rows, db.variants({fx.run_formats}));
  std::vector<std::string> lines;
  for (const auto& g : gaps) lines.push_back(g.text());
  // f32 t2 (1) and bf16 t2 (2) have IPC rows (f32's unavailable); variants 3-8 have no counter row
  // at all; nobody has L2, L3 or branch rows; the failed 9th has no counters.
  const std::string not_recorded = "not recorded for this variant (counters off or not run)";
  const auto nr = std::find_if(gaps.begin(), gaps.end(), [&](const CounterGap& g) { return g.reason == not_recorded; });
  ASSERT_NE(nr, gaps.end()) << ::testing::PrintToString(lines);
  EXPECT_EQ(nr->text(), "IPC, L1D misses / 1000 instr, energy (J), task clock (ms), context switches, page faults, "
                        "CPU migrations (variants 3-8 of 9); L2 misses / 1000 instr, L3 misses / 1000 instr, branch "
                        "misses / 1000 instr (variants 1-8 of 9): " + not_recorded);
  for (const auto& l : lines) EXPECT_EQ(l.find("all "), std::string::npos) << l;
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "energy (J) (variant 1 of 9): no RAPL: /sys/class/powercap not present"),
            lines.end())
      << ::testing::PrintToString(lines);
}

TEST(Reports, ReportOfTwoRunsHasTheCompareAndCharts) {
  const auto& fx = fixture();
  Db db(fixture_path());
  const ReportData d = collect_report(db, {fx.run_formats, fx.run_formats_b}, resamples(100));
  ASSERT_TRUE(d.comparison);
  const std::string html = render_html(d), mdn = render_markdown(d);
  EXPECT_NE(html.find("Compare: run"), std::string::npos);
  EXPECT_NE(mdn.find("## Compare: run"), std::string::npos);
  const ReportData st = collect_report(db, {fx.run_stepped});
  const std::string sh = render_html(st);
  EXPECT_NE(sh.find("latency against offered load"), std::string::npos);
  EXPECT_NE(sh.find("SLO p95_ms 100 ms"), std::string::npos);
  const std::string th = render_html(collect_report(db, {fx.run_threads}));
  EXPECT_NE(th.find("Throughput against threads x workers"), std::string::npos);
}

TEST(Reports, SvgChartBasics) {
  svg::Chart c;
  c.title = "t <&>";
  svg::Series s;
  s.name = "a";
  s.pts = {{1, 2}, {3, 4}};
  c.series.push_back(s);
  c.hlines.push_back({3, "floor", "#f00"});
  const std::string out = svg::render(c);
  EXPECT_EQ(out.rfind("<svg", 0), 0u);
  EXPECT_NE(out.find("t &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n') > 3, true);
  size_t circles = 0;
  for (size_t p = out.find("<circle"); p != std::string::npos; p = out.find("<circle", p + 1)) ++circles;
  EXPECT_EQ(circles, 3u);  // two points and the legend marker
  const auto lt = svg::ticks(0.5, 200, true);
  EXPECT_EQ(lt, (std::vector<double>{0.5, 1, 2, 5, 10, 20, 50, 100, 200}));
  EXPECT_EQ(svg::ticks(20, 130, true), (std::vector<double>{20, 30, 50, 70, 100}));
  EXPECT_EQ(svg::ticks(0.9, 2.1, false, true), (std::vector<double>{1, 2}));
  const auto t = svg::ticks(0, 1, false);
  EXPECT_EQ(t.front(), 0);
  EXPECT_DOUBLE_EQ(t.back(), 1);
  EXPECT_NE(svg::render(svg::Chart{}).find("no data to draw"), std::string::npos);
}

// Labels along an axis are all distinct, whatever the range: a narrow one needs more decimals
// (51.75 and 51.8 both read "51.8" to 3 digits), a lone value is shown as itself, huge and tiny
// ranges use exponents, negative ones keep their sign and zero is never "-0".
TEST(Reports, SvgTickLabelsAreDistinctForAnyRange) {
  auto distinct = [](std::vector<std::string> l) {
    std::sort(l.begin(), l.end());
    return std::adjacent_find(l.begin(), l.end()) == l.end();
  };
  struct Range {
    double lo, hi;
  };
  for (const Range r : {Range{51.74, 51.86}, Range{51.8, 51.8}, Range{0, 1}, Range{-5, -1}, Range{-0.3, 0.2},
                        Range{1e9, 1e9 + 0.001}, Range{0, 3e12}, Range{1e-9, 5e-9}, Range{-2e8, 2e8},
                        Range{0.99990, 0.99996}, Range{1e15, 1e15 + 1}, Range{-1e300, 1e300}}) {
    const auto t = svg::ticks(r.lo, r.hi, false);
    ASSERT_FALSE(t.empty()) << r.lo << " " << r.hi;
    EXPECT_LE(t.size(), 12u) << r.lo << " " << r.hi;
    for (double v : t) {
      EXPECT_GE(v, r.lo - (r.hi - r.lo) * 1e-9) << r.lo << " " << r.hi;
      EXPECT_LE(v, r.hi + (r.hi - r.lo) * 1e-9) << r.lo << " " << r.hi;
    }
    const auto l = svg::tick_labels(t, false);
    ASSERT_EQ(l.size(), t.size());
    EXPECT_TRUE(distinct(l)) << r.lo << " " << r.hi << ": " << ::testing::PrintToString(l);
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_NE(l[i].rfind("-0", 0) == 0 && std::stod(l[i]) == 0, true) << l[i];
      // Each label reads as its tick to within half the spacing of the ticks.
      const double spacing = t.size() > 1 ? std::fabs(t[1] - t[0]) : std::max(std::fabs(t[0]) * 1e-6, 1e-300);
      EXPECT_NEAR(std::stod(l[i]), t[i], spacing / 2) << l[i];
    }
  }
  // The case that repeated "51.8": every label has the decimals the step needs.
  EXPECT_EQ(svg::tick_labels(svg::ticks(51.74, 51.86, false), false),
            (std::vector<std::string>{"51.74", "51.76", "51.78", "51.80", "51.82", "51.84", "51.86"}));
  EXPECT_EQ(svg::tick_labels(svg::ticks(0, 10, false), false),
            (std::vector<std::string>{"0", "2", "4", "6", "8", "10"}));
  EXPECT_EQ(svg::tick_labels(svg::ticks(-0.5, 0.5, false), false),
            (std::vector<std::string>{"-0.4", "-0.2", "0.0", "0.2", "0.4"}));
  // One value: one tick, labelled as the value.
  EXPECT_EQ(svg::ticks(51.8, 51.8, false), (std::vector<double>{51.8}));
  EXPECT_EQ(svg::tick_labels({51.83}, false), (std::vector<std::string>{"51.83"}));
  // Not finite: no tick.
  EXPECT_TRUE(svg::ticks(0, INFINITY, false).empty());
  EXPECT_TRUE(svg::ticks(NAN, 1, false).empty());
  // Log axes: 1-2-5 labels as short as they can be; a narrow log range still distinct.
  EXPECT_EQ(svg::tick_labels(svg::ticks(0.5, 200, true), true),
            (std::vector<std::string>{"0.5", "1", "2", "5", "10", "20", "50", "100", "200"}));
  EXPECT_TRUE(distinct(svg::tick_labels(svg::ticks(1.0001, 1.0003, true), true)));
  // A chart of one narrow series (a classifier's throughput at one thread count) draws every y
  // label once; so does a chart of one point (its range is padded around the value).
  auto y_labels = [](const std::string& out) {
    std::vector<std::string> l;
    for (size_t p = out.find("text-anchor=\"end\">"); p != std::string::npos; p = out.find("text-anchor=\"end\">", p + 1)) {
      const size_t b = p + std::strlen("text-anchor=\"end\">");
      l.push_back(out.substr(b, out.find('<', b) - b));
    }
    return l;
  };
  svg::Chart c;
  svg::Series s;
  s.kind = svg::Series::Kind::line;
  s.pts = {{1, 51.78}, {2, 51.83}};
  c.series.push_back(s);
  const auto narrow = y_labels(svg::render(c));
  EXPECT_GE(narrow.size(), 3u);
  EXPECT_TRUE(distinct(narrow)) << ::testing::PrintToString(narrow);
  c.series[0].pts = {{4, 51.8}};
  const auto one = y_labels(svg::render(c));
  EXPECT_GE(one.size(), 2u);
  EXPECT_TRUE(distinct(one)) << ::testing::PrintToString(one);
  // Non-negative values (latencies from 10 to 1800 ms, accuracies from 0.01) never get a
  // negative tick: the padding stops at 0.
  c.series[0].pts = {{10, 0.01}, {1800, 0.9}};
  const std::string out = svg::render(c);
  for (const auto& l : y_labels(out)) EXPECT_NE(l[0], '-') << l;
  for (size_t p = out.find("text-anchor=\"middle\">"); p != std::string::npos; p = out.find("text-anchor=\"middle\">", p + 1))
    EXPECT_NE(out[p + std::strlen("text-anchor=\"middle\">")], '-') << out.substr(p, 40);
}

// ---- bad databases ----

std::string open_error(const std::string& path) {
  try {
    Db db(path);
    db.runs();
  } catch (const DbError& e) {
    return e.what();
  }
  return "";
}

TEST(Reports, MissingEmptyOldAndCorruptDatabasesGiveClearMessages) {
  EXPECT_NE(open_error(temp_path("absent.sqlite")).find("no such results database"), std::string::npos);

  const std::string empty = temp_path("empty.sqlite");
  std::ofstream(empty).close();
  EXPECT_NE(open_error(empty).find("the database is empty"), std::string::npos);

  const std::string garbage = temp_path("garbage.sqlite");
  {
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 400; ++i) out << "this is not an SQLite file ";
  }
  EXPECT_NE(open_error(garbage).find("not a readable SQLite database"), std::string::npos) << open_error(garbage);

  // An older schema: tables without a user_version.
  const std::string old = temp_path("old.sqlite");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(old.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE runs (run_id INTEGER PRIMARY KEY, status TEXT); CREATE TABLE variants (variant_id INTEGER PRIMARY KEY);",
                 nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  EXPECT_NE(open_error(old).find("database schema version 0 is older than this cibench reads (" +
                                 std::to_string(kReadsSchemaVersion) + ")"),
            std::string::npos)
      << open_error(old);

  // Same version number but a column this code reads is missing: named in the message.
  const std::string dropped = temp_path("dropped.sqlite");
  {
    Store s(dropped);
    s.exec("ALTER TABLE variants DROP COLUMN knee_qps");
  }
  const std::string msg = open_error(dropped);
  EXPECT_NE(msg.find("is older than this cibench reads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("knee_qps"), std::string::npos) << msg;

  // A real database with its pages overwritten: an error, not a crash.
  const std::string broken = temp_path("broken.sqlite");
  test::make_reports_fixture(broken);
  {
    std::fstream f(broken, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 2);
    for (int i = 0; i < 4096 * 4; ++i) f.put(static_cast<char>(i * 7));
  }
  std::string err;
  try {
    Db db(broken);
    for (const auto& r : db.runs()) {
      reports::tradeoff(db, {r.run_id}, "latency_p95_ms", "top1_agreement");
      reports::counters(db, {r.run_id});
      for (const auto& v : db.variants({r.run_id})) reports::latency_cdf(db, v.variant_id);
    }
  } catch (const DbError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("malformed"), std::string::npos) << err;

  // A database with the schema and no runs: empty results, no error.
  const std::string none = temp_path("none.sqlite");
  { Store s(none); }
  Db db(none);
  EXPECT_TRUE(db.runs().empty());
  EXPECT_TRUE(reports::tradeoff(db, {}, "latency_p95_ms", "top1_agreement").points.empty());
  EXPECT_THROW(db.resolve_run("last"), DbError);
}

// ---- the command ----

// A classifier run with the result cache off and on at two offered rates: the report pairs each
// cache-on variant with its cache-off twin and shows the duplicate rate beside the hit rate.
TEST(Reports, ResultCacheTablePairsCacheOnWithItsTwin) {
  const std::string path = temp_path("cache.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", test::fixture_run("fixture-cache", "[load]\npattern = \"stepped\"\n\n[slo]\np50_ms = 20\n",
                                             "hostA", "2024-06-04T09:00:00Z", "stepped"));
    int index = 0;
    for (int cache = 0; cache < 2; ++cache) {
      for (int step = 0; step < 2; ++step) {
        const double rate = step ? 100 : 50, p95 = (cache ? 6.0 : 10.0) * (step ? 2 : 1);
        const int64_t v =
            test::fixture_variant(s, run, index, step, {"w8a7", 0, 1, 2, p95, 0.99}, 0, rate);
        Fields f{{"cache_enabled", int64_t{cache}}, {"shape", std::string("dynamic")},
                 {"traffic", std::string("zipf s=1.1 over 872")}, {"duplicate_rate", 0.66},
                 {"expected_duplicate_rate", 0.68}};
        if (cache)
          f.insert(f.end(), {{"cache_hits", int64_t{130}}, {"cache_misses", int64_t{70}},
                             {"cache_hit_rate", 0.65}, {"cache_peak_bytes", int64_t{40960}}});
        s.update("variants", "variant_id", v, f);
      }
      ++index;
    }
    // The cache-on variant climbed one step further than its cache-off twin.
    const int64_t v = test::fixture_variant(s, run, 1, 2, {"w8a7", 0, 1, 2, 30.0, -1}, 0, 150);
    s.update("variants", "variant_id", v,
             {{"cache_enabled", int64_t{1}}, {"shape", std::string("dynamic")},
              {"traffic", std::string("zipf s=1.1 over 872")}, {"duplicate_rate", 0.7},
              {"expected_duplicate_rate", 0.7}, {"cache_hit_rate", 0.7}, {"cache_peak_bytes", int64_t{40960}}});
  }
  Db db(path);
  const ReportData d = collect_report(db, {run});
  const std::string md = render_markdown(d);
  const size_t at = md.find("## Result cache");
  ASSERT_NE(at, std::string::npos) << md;
  const std::string section = md.substr(at, md.find("## Counters") - at);
  // One row per cache-on variant (2 rates), named without "cache", with its twin's figures first.
  EXPECT_NE(section.find("| w8a7 t1 w2 @50qps | zipf s=1.1 over 872 | 0.66 / 0.68 | 0.65 | 40 | 7 / 4.2 | 12 / 7.2 |"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("| w8a7 t1 w2 @100qps |"), std::string::npos) << section;
  EXPECT_EQ(section.find("cache @"), std::string::npos) << section;
  EXPECT_NE(section.find("| w8a7 t1 w2 @150qps | zipf s=1.1 over 872 | 0.7 / 0.7 | 0.7 | 40 | not run / 21 |"),
            std::string::npos)
      << section;
  EXPECT_NE(render_html(d).find("<h2>Result cache</h2>"), std::string::npos);
  // Runs without cache variants have no such section.
  const auto& fx = fixture();
  Db fdb(fixture_path());
  EXPECT_EQ(render_markdown(collect_report(fdb, {fx.run_formats})).find("## Result cache"), std::string::npos);
}

TEST(Reports, ReportCommandWritesBothFiles) {
  const std::string exe = std::string(CIBENCH_BINARY_DIR) + "/bin/cibench";
  if (!fs::exists(exe)) GTEST_SKIP() << exe << " not built";
  const auto& fx = fixture();
  const std::string out = temp_path("cmd_out");
  const std::string cmd = exe + " report " + std::to_string(fx.run_formats) + " last --out " + out + " --db " +
                          fixture_path() + " > " + out + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(out + ".log");
  EXPECT_TRUE(fs::exists(out + "/report.html"));
  EXPECT_TRUE(fs::exists(out + "/report.md"));
  EXPECT_NE(read_file(out + ".log").find("report.html"), std::string::npos);
  const std::string bad = exe + " report 1 --out " + out + " --db " + temp_path("absent2.sqlite") + " > " + out +
                          ".err 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(read_file(out + ".err").find("no such results database"), std::string::npos);
}

}  // namespace
}  // namespace cibench::reports

namespace cibench::reports {
namespace {

// Stored text never becomes markup in report.md, and an existing report.html that is a symlink
// is replaced, its target left as it was.
TEST(ReportsHostile, MarkdownEscapesStoredTextAndSymlinksAreNotWrittenThrough) {
  const std::string path = temp_path("hostile.sqlite");
  int64_t run = 0;
  {
    Store st(path);
    Fields r = test::fixture_run("<script>alert(1)</script>", "[scenario]\nname = 'x'\n", "host|a", "2026-01-01T00:00:00Z",
                                 "server");
    for (auto& [k, v] : r)
      if (k == "question") v = std::string("*bold* [link](http://x) `code`\n# heading");
    run = st.insert("runs", r);
  }
  const fs::path out = fs::path(temp_path("hostile_report"));
  fs::remove_all(out);
  fs::create_directories(out);
  const std::string target = temp_path("precious.txt");
  {
    std::ofstream t(target);
    t << "keep me";
  }
  fs::create_symlink(target, out / "report.html");
  Db db(path);
  const ReportFiles f = write_report(db, {run}, out.string());
  EXPECT_FALSE(fs::is_symlink(out / "report.html"));
  std::ifstream t(target);
  std::string kept((std::istreambuf_iterator<char>(t)), {});
  EXPECT_EQ(kept, "keep me");
  std::ifstream m(f.markdown);
  const std::string md((std::istreambuf_iterator<char>(m)), {});
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_NE(md.find("scenario **&lt;script&gt;alert(1)&lt;/script&gt;**"), std::string::npos) << md.substr(0, 600);
  EXPECT_NE(md.find("Question: *\\*bold\\* \\[link\\](http://x) \\`code\\`; # heading*"), std::string::npos)
      << md.substr(0, 600);
  std::ifstream h(f.html);
  const std::string html((std::istreambuf_iterator<char>(h)), {});
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace cibench::reports
