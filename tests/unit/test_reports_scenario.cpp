// The reports follow the scenario: the default axes, every quality floor and the ranking come from
// the run's own SLOs and floors (a classifier's max_accuracy_drop with the task accuracy and its
// interval; throughput against the SLO latency when there is no accuracy), stepped runs are judged
// at every step with the knee stated and charted on the SLO metrics, unavailable counters collapse
// to one line per reason beside the measured software counters, and report.md opens with a lead
// table of what was measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

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

std::string temp_path(const std::string& name) { return test::fresh_db_path("reports_scenario", name); }

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

Fields run_fields(const std::string& name, const std::string& pattern, const std::vector<Slo>& slos,
                  const std::vector<QualityFloor>& floors) {
  Fields f = test::fixture_run(name, "[scenario]\nname = '" + name + "'\n", "hostA", "2026-01-01T00:00:00Z", pattern);
  f.emplace_back("slos_json", slos_to_json(slos).dump());
  f.emplace_back("floors_json", floors_to_json(floors).dump());
  return f;
}

Slo slo(const std::string& key, double limit) {
  Slo s = *parse_slo_key(key);
  s.limit_ms = limit;
  return s;
}

Fields variant(int64_t run, int index, int step, const std::string& format, Fields more) {
  Fields v{{"run_id", run}, {"variant_index", int64_t{index}}, {"step_index", int64_t{step}},
           {"label", format + " t1 w2"}, {"status", std::string("ok")}, {"format", format},
           {"sparsity", 0.0}, {"threads", int64_t{1}}, {"workers", int64_t{2}}, {"queries", int64_t{500}},
           {"duration_s", 10.0}, {"valid", int64_t{1}}};
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// classifier-realtime's shape: SLOs p50 <= 20 and p99 <= 50 ms, max_accuracy_drop = 0.01, every
// variant with top-1 agreement 1 (the default y of old) and the task accuracy with its interval.
TEST(ReportsScenario, ClassifierFloorAxesRankingAndTaskAccuracyInterval) {
  const std::string path = temp_path("classifier.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("classifier-realtime", "server", {slo("p50_ms", 20), slo("p99_ms", 50)},
                                      {QualityFloor::make("max_accuracy_drop", 0.01)}));
    const struct { const char* format; double p50, p99, acc, lo, hi, delta; } rows[] = {
        {"f32", 10.3, 78.6, 0.813073, 0.787844, 0.8394, 0.0},
        {"int8", 6.4, 29.4, 0.813073, 0.787844, 0.8394, 0.0},
        {"w8a7", 8.5, 32.4, 0.7982, 0.7718, 0.8245, -0.0149},
    };
    int i = 0;
    for (const auto& r : rows)
      s.insert("variants", variant(run, i++, 0, r.format,
                                   {{"latency_p50_ms", r.p50}, {"latency_p95_ms", r.p99 * 0.8}, {"latency_p99_ms", r.p99},
                                    {"achieved_qps", 51.8}, {"offered_qps", 50.0}, {"top1_agreement", 1.0},
                                    {"task_accuracy", r.acc}, {"task_accuracy_lo", r.lo}, {"task_accuracy_hi", r.hi},
                                    {"ref_task_accuracy", 0.813073}, {"accuracy_delta", r.delta},
                                    {"accuracy_delta_lo", r.delta - 0.01}, {"accuracy_delta_hi", r.delta + 0.005}}));
  }
  Db db(path);
  EXPECT_EQ(reports::default_axes(db, {run}), (std::pair<std::string, std::string>{"latency_p99_ms", "accuracy_delta"}));
  const ReportData d = collect_report(db, {run});
  EXPECT_EQ(d.tradeoff.floor_source, "scenario: max_accuracy_drop");
  EXPECT_DOUBLE_EQ(*d.tradeoff.floor, -0.01);
  const auto ranked = rank_variants(d);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].v.format, "int8");  // meets the floor and both SLOs
  EXPECT_EQ(ranked[0].floor_verdict, "meets floors");
  // Then the two that fail one criterion each, by the SLO latency: w8a7 (p99 32.4, a drop of 0.0149 >
  // 0.01), f32 (p99 78.6 > 50, floor met).
  EXPECT_EQ(ranked[2].v.format, "f32");
  EXPECT_EQ(ranked[2].slo_verdict, "missed: p99_ms 78.6 > 50");
  EXPECT_EQ(ranked[2].floor_verdict, "meets floors");
  EXPECT_EQ(ranked[1].v.format, "w8a7");
  EXPECT_EQ(ranked[1].slo_verdict, "met");
  EXPECT_NE(ranked[1].floor_verdict.find("below: accuracy_delta -0.0149 < -0.01 (max_accuracy_drop = 0.01)"),
            std::string::npos)
      << ranked[1].floor_verdict;
  const std::string mdn = render_markdown(d), html = render_html(d);
  for (const std::string* doc : {&mdn, &html}) {
    // The task accuracy and its interval (Markdown escapes the brackets).
    EXPECT_NE(doc->find(doc == &mdn ? "0.8131 \\[0.7878, 0.8394\\]" : "0.8131 [0.7878, 0.8394]"), std::string::npos);
    EXPECT_NE(doc->find("quality floor accuracy_delta &gt;= -0.01 (max_accuracy_drop = 0.01): 2 of 3 variants meet it"),
              std::string::npos);
    EXPECT_EQ(doc->find("no quality floor"), std::string::npos);
  }
}

// Every floor kind the scenario language has is judged on its own column, whatever the y axis.
TEST(ReportsScenario, EveryFloorKindIsJudged) {
  for (const FloorKind& k : quality_floor_kinds()) {
    const std::string path = temp_path(std::string("floor_") + k.key + ".sqlite");
    int64_t run = 0, vid = 0;
    const double value = 0.5;
    const QualityFloor f = QualityFloor::make(k.key, value);
    {
      Store s(path);
      run = s.insert("runs", run_fields("floors", "server", {slo("p95_ms", 100)}, {f}));
      // A value on the wrong side of the bound by 0.1.
      const double broken = f.is_minimum ? f.bound - 0.1 : f.bound + 0.1;
      vid = s.insert("variants", variant(run, 0, 0, "int8", {{"latency_p95_ms", 10.0}, {k.column, broken}}));
      s.insert("variants", variant(run, 1, 0, "f32", {{"latency_p95_ms", 20.0}, {k.column, f.bound}}));
    }
    Db db(path);
    const auto vs = db.variants({run});
    ASSERT_EQ(vs.size(), 2u);
    const FloorsVerdict bad = reports::judge_floors(db, vs[0]);
    ASSERT_EQ(vs[0].variant_id, vid);
    ASSERT_TRUE(bad.met) << k.key;
    EXPECT_FALSE(*bad.met) << k.key;
    EXPECT_NE(bad.summary().find(k.key), std::string::npos) << bad.summary();
    EXPECT_TRUE(reports::judge_floors(db, vs[1]).met.value_or(false)) << k.key;  // exactly on the bound
    // The trade-off on latency and top-1 agreement (not this floor's column) still greys it.
    const Tradeoff t = reports::tradeoff(db, {run}, "latency_p95_ms", k.column);
    for (const auto& p : t.points) EXPECT_EQ(p.meets_floor, p.v.variant_id != vid) << k.key;
  }
}

// thread-sweep's shape: no accuracy, an SLO on tpot p95; the question is tokens/s.
TEST(ReportsScenario, WithoutAccuracyThroughputIsRankedAgainstTheSloLatency) {
  const std::string path = temp_path("threads.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("thread-sweep", "closed_loop", {slo("tpot_p95_ms", 250)}, {}));
    const struct { int t, w; double tok, tpot; } rows[] = {{1, 1, 9.6, 180}, {2, 1, 14.1, 120}, {1, 2, 15.9, 230}, {2, 2, 12.0, 300}};
    int i = 0;
    for (const auto& r : rows) {
      Fields v = variant(run, i++, 0, "int8", {{"tokens_per_s", r.tok}, {"tpot_p50_ms", r.tpot * 0.9}, {"tpot_p95_ms", r.tpot},
                                               {"latency_p95_ms", r.tpot * 16}, {"achieved_qps", r.tok / 16}});
      for (auto& [k, x] : v) {
        if (k == "threads") x = int64_t{r.t};
        if (k == "workers") x = int64_t{r.w};
        if (k == "label") x = "int8 t" + std::to_string(r.t) + " w" + std::to_string(r.w);
      }
      s.insert("variants", v);
    }
  }
  Db db(path);
  EXPECT_EQ(reports::default_axes(db, {run}), (std::pair<std::string, std::string>{"tpot_p95_ms", "tokens_per_s"}));
  const ReportData d = collect_report(db, {run});
  const auto ranked = rank_variants(d);
  ASSERT_EQ(ranked.size(), 4u);
  std::vector<std::string> order;
  for (const auto& r : ranked) {
    EXPECT_GT(r.rank, 0) << r.v.short_name();
    order.push_back(r.v.short_name());
  }
  // By tokens/s among those meeting tpot p95 <= 250, then the one missing it.
  EXPECT_EQ(order, (std::vector<std::string>{"int8 t1 w2", "int8 t2 w1", "int8 t1 w1", "int8 t2 w2"}));
  const std::string mdn = render_markdown(d);
  EXPECT_EQ(mdn.find("no top-1 agreement measured"), std::string::npos);
  EXPECT_NE(mdn.find("| rank | variant | time per output token p95 (ms) | throughput (tokens/s) |"), std::string::npos);
  EXPECT_NE(mdn.find("| 1 | int8 t1 w2 | 230 | 15.9 |"), std::string::npos);
}

// A stepped run: every step judged, the knee stated, the load charts on the SLO metrics.
TEST(ReportsScenario, SteppedRunJudgesEveryStepStatesTheKneeAndChartsTheSloMetrics) {
  const std::string path = temp_path("stepped.sqlite");
  int64_t run = 0, run_all = 0;
  {
    Store s(path);
    for (int which = 0; which < 2; ++which) {
      const int64_t r = s.insert("runs", run_fields("chat", "stepped", {slo("ttft_p99_ms", 1000), slo("tpot_p95_ms", 100)}, {}));
      (which ? run_all : run) = r;
      const double rates[] = {0.5, 1, 2, 4};
      for (int st = 0; st < 4; ++st) {
        // The first run breaks ttft at 4 qps; the second meets both SLOs at every rate.
        const double ttft = which == 0 && st == 3 ? 1500 : 200 + 100 * st;
        s.insert("variants", variant(r, 0, st, "f32", {{"offered_qps", rates[st]}, {"achieved_qps", rates[st] * 0.98},
                                                       {"pattern", std::string("stepped")},
                                                       {"ttft_p50_ms", ttft / 2}, {"ttft_p95_ms", ttft * 0.9},
                                                       {"ttft_p99_ms", ttft}, {"tpot_p95_ms", 40.0 + st},
                                                       {"latency_p95_ms", 3000.0 + st}, {"tokens_per_s", 30.0 * rates[st]}}));
      }
    }
  }
  Db db(path);
  const ReportData d = collect_report(db, {run});
  EXPECT_TRUE(d.tradeoff.per_step);
  EXPECT_EQ(d.tradeoff.points.size(), 4u);
  const auto ranked = rank_variants(d);
  ASSERT_EQ(ranked.size(), 4u);
  size_t missed = 0;
  for (const auto& r : ranked) missed += r.slo_verdict.rfind("missed", 0) == 0;
  EXPECT_EQ(missed, 1u);  // the 4 qps step, judged on its own
  EXPECT_EQ(ranked.back().v.get("offered_qps"), 4.0);
  const LoadSweep ls = reports::load_sweep(db, run, "ttft");
  EXPECT_EQ(*ls.curves[0].knee(), 2.0);
  const std::string html = render_html(d), mdn = render_markdown(d);
  EXPECT_NE(mdn.find("knee 2 qps: the highest offered rate meeting every SLO (the next, 4 qps, missed: ttft_p99_ms 1500 &gt; 1000)"),
            std::string::npos);
  EXPECT_NE(html.find("time to first token against offered load"), std::string::npos);
  EXPECT_NE(html.find("time per output token against offered load"), std::string::npos);
  EXPECT_NE(html.find("SLO ttft_p99_ms 1000 ms"), std::string::npos);
  EXPECT_NE(html.find("SLO tpot_p95_ms 100 ms"), std::string::npos);
  EXPECT_EQ(html.find(": latency against offered load"), std::string::npos);  // no SLO bounds end-to-end latency
  const std::string all = render_markdown(collect_report(db, {run_all}));
  EXPECT_NE(all.find("knee not reached below the highest rate tried (4 qps)"), std::string::npos);
}

// A machine without a PMU: one line per distinct reason, and the software counters measured.
TEST(ReportsScenario, CountersCollapseReasonsAndShowSoftwareCounters) {
  const std::string path = temp_path("counters.sqlite");
  int64_t run = 0;
  const std::string why = "papi: PAPI_ENOEVNT: event does not exist (PAPI_TOT_INS); perf_event: no PMU";
  {
    Store s(path);
    run = s.insert("runs", run_fields("counters", "server", {}, {}));
    for (int i = 0; i < 6; ++i) {
      const int64_t v = s.insert("variants", variant(run, i, 0, i % 2 ? "int8" : "f32", {{"latency_p95_ms", 10.0 + i},
                                                                                       {"counters_mode", std::string("separate")}}));
      auto row = [&](const std::string& name, std::optional<double> value, const std::string& reason, const std::string& scope) {
        Fields f{{"variant_id", v}, {"name", name}, {"phase", std::string("all")}, {"scope", scope},
                 {"unit", std::string("count")}, {"source", std::string(value ? "perf_event" : "none")}};
        if (value) f.push_back({"value", *value});
        else f.push_back({"unavailable_reason", reason});
        s.insert("counters", f);
      };
      for (const char* n : {"ipc", "l1d_mpki", "l2_mpki", "l3_mpki", "branch_mpki"}) row(n, std::nullopt, "needs instructions: " + why, "total");
      row("energy_j", std::nullopt, "no RAPL: /sys/class/powercap absent", "package");
      row("task_clock_ms", 812.5 + i, "", "total");
      row("context_switches", 40.0 + i, "", "total");
      row("page_faults", 1200.0, "", "total");
      row("cpu_migrations", 3.0, "", "total");
    }
  }
  Db db(path);
  const ReportData d = collect_report(db, {run});
  const std::string html = render_html(d), mdn = render_markdown(d);
  for (const std::string* doc : {&html, &mdn}) {
    EXPECT_EQ(count_of(*doc, "needs instructions: " + why), 1u);
    EXPECT_NE(doc->find("IPC, L1D misses / 1000 instr, L2 misses / 1000 instr, L3 misses / 1000 instr, branch misses / "
                        "1000 instr (all 6 variants): needs instructions: " + why),
              std::string::npos);
    EXPECT_NE(doc->find("task clock (ms)"), std::string::npos);
    EXPECT_NE(doc->find("context switches"), std::string::npos);
    EXPECT_NE(doc->find("CPU migrations"), std::string::npos);
    EXPECT_EQ(doc->find("unavailable: needs"), std::string::npos);  // no per-cell reasons
  }
  EXPECT_NE(mdn.find("| f32 t1 w2 | separate | 812.5 | 40 | 1200 | 3 |"), std::string::npos);
}

// A stepped run of many variants (a classifier sweep): the load chart draws one line per variant
// at the SLO's highest percentile with the knees as markers (vertical knee lines and their labels
// piled up), the CDF at most 16 curves and says so, and a legend with no room left says how many
// entries it leaves out.
TEST(ReportsScenario, ManyVariantsStayReadable) {
  const std::string path = temp_path("many.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("sweep", "stepped", {slo("p50_ms", 20), slo("p99_ms", 50)}, {}));
    const double rates[] = {25, 50, 100};
    for (int i = 0; i < 18; ++i)
      for (int st = 0; st < 3; ++st) {
        const double p99 = st < 2 ? 30.0 + i : 80.0 + i;  // every variant breaks p99 at 100 qps
        const int64_t v = s.insert("variants", variant(run, i, st, i % 2 ? "int8" : "f32",
                                                       {{"offered_qps", rates[st]}, {"pattern", std::string("stepped")},
                                                        {"latency_p50_ms", 5.0}, {"latency_p99_ms", p99},
                                                        {"latency_p95_ms", p99 * 0.9}}));
        if (st == 0) {
          Store::Transaction t(s);
          std::vector<std::vector<SqlValue>> rows;
          for (int q = 0; q < 20; ++q)
            rows.push_back({v, int64_t{q}, int64_t{q}, int64_t{0}, int64_t{1}, 40.0 * q, 0.0, 5.0 + q, 5.0 + q});
          s.insert_many("requests", {"variant_id", "seq", "query_index", "worker", "ok", "scheduled_ms", "queue_ms",
                                     "service_ms", "latency_ms"},
                        rows);
          t.commit();
        }
      }
  }
  Db db(path);
  const std::string html = render_html(collect_report(db, {run}));
  const size_t at = html.find("latency against offered load");
  ASSERT_NE(at, std::string::npos);
  const std::string load = html.substr(at, html.find("</svg>", at) - at);
  EXPECT_NE(load.find("(p99, one line per variant)"), std::string::npos);
  EXPECT_NE(load.find("(the first 16 of 18 variants)"), std::string::npos);
  EXPECT_EQ(count_of(load, "class=\"vline\""), 0u);
  EXPECT_EQ(count_of(load, " p50\""), 0u);  // no p50 lines
  EXPECT_EQ(count_of(load, " p99\""), 16u);
  const size_t k = load.find("data-name=\"knee (highest rate meeting every SLO)\"");
  ASSERT_NE(k, std::string::npos);
  EXPECT_EQ(count_of(load.substr(k, load.find("</g>\n", k) - k), "class=\"point\""), 16u);  // a knee (50 qps) per curve
  EXPECT_EQ(load.find("... and "), std::string::npos);  // 16 lines and the knee entry fit the legend
  // A legend with more entries than room says how many it leaves out.
  svg::Chart crowded;
  for (int i = 0; i < 30; ++i) {
    svg::Series sr;
    sr.name = "s";
    sr.name += std::to_string(i);  // (GCC 12 warns -Wrestrict, wrongly, on "s" + std::to_string(i))
    sr.kind = svg::Series::Kind::line;
    sr.pts = {{1, double(i)}, {2, double(i + 1)}};
    crowded.series.push_back(sr);
  }
  const std::string cr = svg::render(crowded);
  const size_t more = cr.find("... and ");
  ASSERT_NE(more, std::string::npos);
  const int left_out = std::stoi(cr.substr(more + 8));
  EXPECT_GT(left_out, 0);
  EXPECT_EQ(count_of(cr, ">s"), static_cast<size_t>(30 - left_out));  // the entries drawn: "s0" ...
  const size_t c = html.find("Latency distribution (CDF) (the first 16 of 18 variants)");
  ASSERT_NE(c, std::string::npos);
  const std::string cdf = html.substr(c, html.find("</svg>", c) - c);
  EXPECT_EQ(count_of(cdf, "class=\"series\""), 16u);
  std::set<std::string> colours;  // 16 curves, 16 colours
  for (size_t p = cdf.find("class=\"series\""); p != std::string::npos; p = cdf.find("class=\"series\"", p + 1)) {
    const size_t st = cdf.find("stroke=\"", p) + 8;
    colours.insert(cdf.substr(st, 7));
  }
  EXPECT_EQ(colours.size(), 16u);
}

// Scaling of a classifier run with the result cache off and on at the same threads x workers:
// one line per setting (it drew a vertical line from the cache-off point to the cache-on one).
TEST(ReportsScenario, ScalingKeepsCacheOffAndOnApart) {
  const std::string path = temp_path("scaling_cache.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("scaling-cache", "server", {}, {}));
    int index = 0;
    for (int workers : {1, 2})
      for (int cache : {0, 1}) {
        Fields v = variant(run, index++, 0, "f32", {{"achieved_qps", 20.0 + 10 * cache + workers},
                                                   {"latency_p95_ms", 40.0 - 10 * cache},
                                                   {"cache_enabled", int64_t{cache}}});
        for (auto& [k, val] : v) {
          if (k == "threads") val = int64_t{3 - workers};
          if (k == "workers") val = int64_t{workers};
        }
        s.insert("variants", v);
      }
  }
  Db db(path);
  const auto sc = reports::scaling(db, {run});
  std::vector<std::string> names;
  for (const auto& s : sc) {
    names.push_back(s.name);
    EXPECT_EQ(s.points.size(), 1u) << s.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"f32 w1", "f32 w1 cache", "f32 w2", "f32 w2 cache"}));
  // Every variant on 2 cores: the report says so instead of charting lines of one point each.
  const std::string html = render_html(collect_report(db, {run}));
  EXPECT_EQ(html.find("Throughput against threads x workers"), std::string::npos);
  EXPECT_NE(html.find("Every variant ran on 2 cores (threads x workers: 1x2, 2x1): no scaling to chart."),
            std::string::npos);
}

// report.md opens with one pasteable row per configuration: what was measured only, n beside the
// percentiles, VALID / INVALID with the reason, the achieved against the target rate, goodput.
TEST(ReportsScenario, MarkdownOpensWithTheLeadTable) {
  const std::string fixture = temp_path("lead_fixture.sqlite");
  const auto fx = test::make_reports_fixture(fixture);
  Db db(fixture);
  const std::string mdn = render_markdown(collect_report(db, {fx.run_formats}));
  const size_t head = mdn.find("| configuration | n | req/s (target) | output tok/s | TTFT ms mean / p50 / p99 | E2E ms mean / p50 / p99 | goodput req/s | SLO attainment | result |");
  ASSERT_NE(head, std::string::npos) << mdn.substr(0, 800);
  EXPECT_LT(head, mdn.find("## Verdicts"));
  EXPECT_LT(head, mdn.find("- **Run "));
  EXPECT_EQ(mdn.find("prefill t/s"), std::string::npos);  // not measured by a scenario run
  // f32 t2: 200 requests, 190 of them at most 100 ms (p95 SLO; ttft all under 500) in 10 s: the
  // fixture predates the stored goodput, so it is computed from the requests with the run's rule.
  EXPECT_NE(mdn.find("| f32 t2 w1 | 200 | 10 (2) | 240 | n/a / n/a / 35 | 80 / 70 / 120 | 19 | 95 % | VALID |"), std::string::npos)
      << mdn.substr(0, 1500);
  EXPECT_NE(mdn.find("| f32 t1 w1 | 200 |"), std::string::npos);
  EXPECT_NE(mdn.find("INVALID: SLO missed: p95_ms 150 &gt; 100"), std::string::npos) << mdn.substr(0, 2000);

  // A bench run: prefill and decode t/s with their stddev.
  const std::string path = temp_path("bench.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("bench", "single_stream", {}, {}));
    s.insert("variants", {{"run_id", run}, {"variant_index", int64_t{0}}, {"step_index", int64_t{0}},
                          {"label", std::string("int8 t2")}, {"status", std::string("ok")}, {"format", std::string("int8")},
                          {"threads", int64_t{2}}, {"prefill_tokens_per_s", 812.3}, {"prefill_tokens_per_s_sd", 4.1},
                          {"decode_tokens_per_s", 95.2}, {"decode_tokens_per_s_sd", 0.8}});
  }
  Db bench(path);
  const std::string b = render_markdown(collect_report(bench, {run}));
  EXPECT_NE(b.find("| configuration | prefill t/s | decode t/s |"), std::string::npos) << b.substr(0, 600);
  EXPECT_NE(b.find("| int8 t2 | 812.3 ± 4.1 | 95.2 ± 0.8 |"), std::string::npos) << b.substr(0, 600);
}

// A generative run stored with schema 7: ITL with its count of gaps beside TTFT and TPOT, goodput
// and SLO attainment as the run stored them (no requests needed), NULL with a reason stays n/a.
TEST(ReportsScenario, LeadTableShowsItlAndTheStoredGoodput) {
  const std::string path = temp_path("serving.sqlite");
  int64_t run = 0;
  {
    Store s(path);
    run = s.insert("runs", run_fields("serving", "server", {slo("ttft_p99_ms", 500)}, {}));
    s.insert("variants", variant(run, 0, 0, "int8", {{"achieved_qps", 4.0}, {"offered_qps", 4.0}, {"tokens_per_s", 96.0},
                                                      {"ttft_mean_ms", 120.0}, {"ttft_p50_ms", 110.0}, {"ttft_p99_ms", 300.0},
                                                      {"tpot_mean_ms", 21.0}, {"tpot_p50_ms", 20.0}, {"tpot_p99_ms", 30.0},
                                                      {"itl_count", int64_t{11500}}, {"itl_mean_ms", 21.5},
                                                      {"itl_p50_ms", 20.0}, {"itl_p99_ms", 45.0},
                                                      {"goodput_qps", 3.6}, {"slo_attainment", 0.9}}));
    s.insert("variants", variant(run, 1, 0, "f32", {{"achieved_qps", 4.0}, {"ttft_mean_ms", 200.0}, {"ttft_p50_ms", 190.0},
                                                     {"ttft_p99_ms", 400.0},
                                                     {"itl_reason", std::string("no request produced two or more tokens")},
                                                     {"goodput_reason", std::string("not every request was kept")}}));
  }
  Db db(path);
  const std::string mdn = render_markdown(collect_report(db, {run}));
  EXPECT_NE(mdn.find("| configuration | n | req/s (target) | output tok/s | TTFT ms mean / p50 / p99 | TPOT ms mean / p50 / p99 | "
                     "ITL ms mean / p50 / p99 (n) | goodput req/s | SLO attainment | result |"),
            std::string::npos)
      << mdn.substr(0, 1200);
  EXPECT_NE(mdn.find("| int8 t1 w2 | 500 | 4 (4) | 96 | 120 / 110 / 300 | 21 / 20 / 30 | 21.5 / 20 / 45 (n=11500) | 3.6 | 90 % |"),
            std::string::npos)
      << mdn.substr(0, 1500);
  EXPECT_NE(mdn.find("| f32 t1 w2 | 500 | 4 | n/a | 200 / 190 / 400 | n/a | n/a | n/a | n/a |"), std::string::npos)
      << mdn.substr(0, 1500);
}

}  // namespace
}  // namespace cibench::reports
