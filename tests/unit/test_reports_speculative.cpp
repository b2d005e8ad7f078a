// The speculative-decoding analysis and `cibench report` (reports/analysis/speculative.h
// reports::speculative, reports/render/ speculative_charts and speculative_notes) on the fixture's
// speculative run (tests/gui/reports_fixture.h make_speculative_fixture): the series per drafter
// over k, the off baseline, the lowest TPOT p95, the row without a speed-up left off the speed-up
// chart and named with its reason, "—" (never 0) for what was not measured, and nothing at all for
// runs without a drafter.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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

struct Fx {
  std::string path;
  test::ReportsFixture ids;
  test::SpeculativeFixture spec;
};
// The reports fixture with the speculative run added.
const Fx& fx() {
  static Fx f = [] {
    Fx x;
    x.path = test::fresh_db_path("reports_speculative", "fixture.sqlite");
    x.ids = test::make_reports_fixture(x.path);
    x.spec = test::make_speculative_fixture(x.path);
    return x;
  }();
  return f;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

const svg::Series* series_named(const svg::Chart& c, const std::string& name) {
  for (const auto& s : c.series)
    if (s.name == name && s.kind == svg::Series::Kind::scatter) return &s;
  return nullptr;
}

bool has(const std::vector<std::string>& lines, const std::string& l) {
  return std::find(lines.begin(), lines.end(), l) != lines.end();
}

TEST(ReportsSpeculative, SeriesPerDrafterOverKWithTheOffBaselineAndTheBest) {
  Db db(fx().path);
  const Speculative sp = reports::speculative(db, {fx().spec.run});
  ASSERT_FALSE(sp.empty());
  EXPECT_FALSE(sp.several_builds);
  // One baseline: the off row.
  ASSERT_EQ(sp.baselines.size(), 1u);
  EXPECT_EQ(sp.baselines[0].v.variant_id, fx().spec.off);
  EXPECT_EQ(sp.baselines[0].build, "w8a8 t1 w1");
  EXPECT_EQ(sp.baselines[0].tpot_p95_ms, 60);
  // Two series (by drafter), each k = 2 then 4, of the same build as the baseline.
  ASSERT_EQ(sp.series.size(), 2u);
  const SpecSeries& lookup = sp.series[0];
  const SpecSeries& self = sp.series[1];
  EXPECT_EQ(lookup.name, "lookup:1-3");
  EXPECT_EQ(self.name, "self:int4_g128_a8");
  for (const SpecSeries* s : {&lookup, &self}) {
    EXPECT_EQ(s->run_id, fx().spec.run);
    EXPECT_EQ(s->build, "w8a8 t1 w1");
    EXPECT_EQ(sp.baseline_of(*s), &sp.baselines[0]);
    ASSERT_EQ(s->points.size(), 2u);
    EXPECT_EQ(s->points[0].k, 2);
    EXPECT_EQ(s->points[1].k, 4);
  }
  EXPECT_EQ(self.points[0].v.variant_id, fx().spec.self_k2);
  EXPECT_EQ(self.points[1].v.variant_id, fx().spec.self_k4);
  // The stored values as stored: speed-up = off / this, mean and p95.
  const SpecPoint& s2 = self.points[0];
  EXPECT_EQ(s2.drafter, "self:int4_g128_a8");
  EXPECT_EQ(s2.acceptance, 0.8);
  EXPECT_EQ(s2.mean_accepted_length, 2.6);
  EXPECT_EQ(s2.draft_share, 0.3);
  EXPECT_EQ(s2.verify_share, 0.6);
  EXPECT_EQ(s2.speedup, 50.0 / 40.0);
  EXPECT_EQ(s2.speedup_p95, 60.0 / 45.0);
  EXPECT_EQ(s2.tpot_p95_ms, 45);
  EXPECT_EQ(s2.ttft_p50_ms, 22);
  ASSERT_EQ(s2.by_position.size(), 2u);
  EXPECT_EQ(s2.by_position[0], 0.9);
  EXPECT_EQ(s2.by_position[1], 0.7);
  EXPECT_EQ(s2.summary(), "k=2: acceptance 0.8, mean accepted length 2.6, speed-up 1.25x (p95 1.33x), TPOT p95 45 ms");
  // lookup k=4: no speed-up (the reason kept), a null acceptance at position 4.
  const SpecPoint& l4 = lookup.points[1];
  EXPECT_EQ(l4.v.variant_id, fx().spec.lookup_k4);
  EXPECT_FALSE(l4.speedup.has_value());
  EXPECT_FALSE(l4.speedup_p95.has_value());
  EXPECT_EQ(l4.speedup_reason, test::kSpecSpeedupReason);
  ASSERT_EQ(l4.by_position.size(), 4u);
  EXPECT_EQ(l4.by_position[2], 0.2);
  EXPECT_FALSE(l4.by_position[3].has_value());
  EXPECT_EQ(l4.tpot_p95_ms, 66);
  // The best of each series and of the build: lookup k=2, 40 ms (speed-up 60 / 40 at p95).
  EXPECT_EQ(self.best(), &self.points[0]);
  EXPECT_EQ(lookup.best(), &lookup.points[0]);
  ASSERT_EQ(sp.best.size(), 1u);
  EXPECT_EQ(sp.at(sp.best[0]).v.variant_id, fx().spec.lookup_k2);
  EXPECT_EQ(sp.best[0].baseline, std::optional<size_t>(0));
  EXPECT_EQ(sp.best[0].text, "lowest TPOT p95: lookup:1-3 k=2, 40 ms (speed-up 1.5x at p95 over the off variant's 60 ms)");
  // The notes: the best, then the point without a speed-up and why.
  const std::string left_out = "lookup:1-3 k=4: speed-up not measured: " + std::string(test::kSpecSpeedupReason);
  EXPECT_EQ(sp.unplotted, std::vector<std::string>{left_out});
  EXPECT_EQ(sp.notes(), (std::vector<std::string>{sp.best[0].text + ".", left_out + "."}));
}

TEST(ReportsSpeculative, RunsWithoutADrafterHaveNoSpeculativeData) {
  Db db(fx().path);
  const auto& ids = fx().ids;
  for (int64_t run : {ids.run_formats, ids.run_formats_b, ids.run_threads, ids.run_stepped}) {
    const Speculative sp = reports::speculative(db, {run});
    EXPECT_TRUE(sp.empty()) << run;
    EXPECT_TRUE(sp.notes().empty()) << run;
  }
  const ReportData d = collect_report(db, {ids.run_formats});
  EXPECT_TRUE(speculative_charts(d).empty());
  EXPECT_TRUE(speculative_notes(d).empty());
  EXPECT_EQ(render_html(d).find("Speculative decoding"), std::string::npos);
  EXPECT_EQ(render_markdown(d).find("## Speculative decoding"), std::string::npos);
  // A store written before schema 10 has no speculative column at all.
  namespace fs = std::filesystem;
  const fs::path fixture = fs::path(CIBENCH_SOURCE_DIR) / "tests/fixtures/store-schema4.sqlite";
  const std::string old = test::fresh_db_path("reports_speculative", "schema4.sqlite");
  fs::copy_file(fixture, old);
  Db v4(old);
  std::vector<int64_t> runs;
  for (const RunInfo& r : v4.runs()) runs.push_back(r.run_id);
  ASSERT_FALSE(runs.empty());
  EXPECT_TRUE(speculative(v4, runs).empty());
  // Only off rows: nothing to show either.
  const std::string path = test::fresh_db_path("reports_speculative", "off-only.sqlite");
  const test::SpeculativeFixture s = test::make_speculative_fixture(path);
  {
    Store st(path);
    for (int64_t id : {s.self_k2, s.self_k4, s.lookup_k2, s.lookup_k4})
      st.update("variants", "variant_id", id, {{"speculative", std::string("off")}});
  }
  Db off_only(path);
  EXPECT_TRUE(speculative(off_only, {s.run}).empty());
}

TEST(ReportsSpeculative, ChartsLeaveOutWhatWasNotMeasuredAndMarkTheBest) {
  Db db(fx().path);
  const ReportData d = collect_report(db, {fx().spec.run});
  const auto charts = speculative_charts(d);
  ASSERT_EQ(charts.size(), 3u);
  // Speed-up against acceptance: lookup has k=2 only (k=4 has no speed-up), self both; 1.0x dashed.
  const svg::Chart& su = charts[0];
  ASSERT_EQ(su.hlines.size(), 1u);
  EXPECT_EQ(su.hlines[0].value, 1.0);
  const svg::Series* lk = series_named(su, "lookup:1-3");
  const svg::Series* sf = series_named(su, "self:int4_g128_a8");
  ASSERT_TRUE(lk && sf);
  ASSERT_EQ(lk->pts.size(), 1u);
  EXPECT_EQ(lk->pts[0].x, 0.5);
  EXPECT_EQ(lk->pts[0].y, 50.0 / 44.0);
  EXPECT_EQ(lk->labels, std::vector<std::string>{"k=2"});
  ASSERT_EQ(sf->pts.size(), 2u);
  EXPECT_EQ(sf->labels, (std::vector<std::string>{"k=2", "k=4"}));
  EXPECT_EQ(sf->pts[1].x, 0.6);
  EXPECT_EQ(sf->pts[1].y, 50.0 / 45.0);
  EXPECT_EQ(sf->tips[0], "self:int4_g128_a8 " + d.speculative.series[1].points[0].summary());
  // TPOT p95 against k: every point (k=4 of lookup too), the off variant at 60 ms, the best starred.
  const svg::Chart& tp = charts[1];
  ASSERT_EQ(tp.hlines.size(), 1u);
  EXPECT_EQ(tp.hlines[0].value, 60);
  EXPECT_EQ(tp.hlines[0].label, "off: 60 ms");
  ASSERT_TRUE(series_named(tp, "lookup:1-3"));
  EXPECT_EQ(series_named(tp, "lookup:1-3")->pts.size(), 2u);
  EXPECT_EQ(series_named(tp, "lookup:1-3")->pts[1].y, 66);
  const svg::Series* best = series_named(tp, "lowest TPOT p95");
  ASSERT_TRUE(best);
  ASSERT_EQ(best->pts.size(), 1u);
  EXPECT_EQ(best->pts[0].x, 2);
  EXPECT_EQ(best->pts[0].y, 40);
  EXPECT_EQ(best->tips, std::vector<std::string>{d.speculative.best[0].text});
  // Acceptance by position at each drafter's best k (k=2 for both).
  const svg::Chart& pos = charts[2];
  const svg::Series* lp = series_named(pos, "lookup:1-3 k=2");
  ASSERT_TRUE(lp);
  ASSERT_EQ(lp->pts.size(), 2u);
  EXPECT_EQ(lp->pts[0].x, 1);
  EXPECT_EQ(lp->pts[0].y, 0.6);
  EXPECT_EQ(lp->pts[1].y, 0.4);
  EXPECT_TRUE(series_named(pos, "self:int4_g128_a8 k=2"));
}

// Variants are named by what varies in the run: the drafter and k of a speculative run, not
// five points all named "w8a8".
TEST(ReportsSpeculative, VariantsAreNamedAndColouredByWhatVariesInTheRun) {
  Db db(fx().path);
  const std::vector<Variant> vs = db.variants({fx().spec.run});
  ASSERT_EQ(vs.size(), 5u);
  std::vector<const Variant*> ptrs;
  for (const auto& v : vs) ptrs.push_back(&v);
  // The short name carries the drafter (a draft model by its file name) and k.
  EXPECT_EQ(vs[0].short_name(), "w8a8 t1 w1");  // "spec=off", which every decoder row stores, only where it varies
  EXPECT_EQ(vs[1].short_name(), "w8a8 t1 w1 spec=self:int4_g128_a8 k=2");
  EXPECT_EQ(vs[4].short_name(), "w8a8 t1 w1 spec=lookup:1-3 k=4");
  EXPECT_EQ(name_without(vs[1], {"speculative", "draft_tokens"}), "w8a8 t1 w1");
  // One format: the colour is what varies (five keys, all different).
  const std::vector<std::string> keys = colour_keys(ptrs);
  EXPECT_EQ(keys[0], "spec=off");
  EXPECT_EQ(keys[3], "spec=lookup:1-3 k=2");
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), 5u);
  // A set of several formats keeps colouring by format (the report's colours per format).
  Variant f32 = vs[0], int8 = vs[0];
  f32.format = "f32";
  int8.format = "int8";
  int8.threads = 2;
  EXPECT_EQ(colour_keys({&f32, &int8}), (std::vector<std::string>{"f32", "int8"}));
  // Nothing varies: the format alone.
  EXPECT_EQ(colour_keys({&f32, &f32}), (std::vector<std::string>{"f32", "f32"}));
  EXPECT_EQ(colour_keys({&f32}), std::vector<std::string>{"f32"});

  // The report's trade-off chart: one series (and colour) per drafter and k, frontier points
  // labelled and every tooltip headed by the full name.
  const ReportData d = collect_report(db, {fx().spec.run});
  ASSERT_EQ(d.tradeoff.points.size(), 5u);
  const svg::Chart c = tradeoff_chart(d);
  std::set<std::string> colours;
  size_t scatter = 0;
  for (const auto& s : c.series)
    if (s.kind == svg::Series::Kind::scatter) {
      ++scatter;
      colours.insert(s.color);
      EXPECT_EQ(s.pts.size(), 1u) << s.name;
      EXPECT_NE(s.name, "w8a8");
      for (size_t i = 0; i < s.labels.size(); ++i)
        if (!s.labels[i].empty()) {
          EXPECT_EQ(s.labels[i].rfind("w8a8 t1 w1", 0), 0u) << s.labels[i];
        }
      EXPECT_EQ(s.tips[0].rfind("w8a8 t1 w1", 0), 0u) << s.tips[0];
    }
  EXPECT_EQ(scatter, 5u);
  EXPECT_EQ(colours.size(), 5u);
  EXPECT_TRUE(series_named(c, "spec=self:int4_g128_a8 k=4"));
  EXPECT_TRUE(series_named(c, "spec=off"));  // the baseline's key where the drafter varies
}

TEST(ReportsSpeculative, HtmlAndMarkdownTablesMarkTheBestAndDashWhatWasNotMeasured) {
  Db db(fx().path);
  const std::string out = test::fresh_db_path("reports_speculative", "report_out");
  const ReportFiles f = write_report(db, {fx().spec.run}, out);
  const std::string html = read_file(f.html), mdn = read_file(f.markdown);
  ASSERT_NE(html.find("<h2>Speculative decoding</h2>"), std::string::npos);
  ASSERT_NE(mdn.find("## Speculative decoding"), std::string::npos);
  const std::string sec = html.substr(html.find("<h2>Speculative decoding</h2>"));
  size_t svgs = 0;
  for (size_t p = sec.find("<svg"); p != std::string::npos && p < sec.find("<h2>", 5); p = sec.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 3u);
  const std::string head =
      "<th>variant</th><th>drafter</th><th>k</th><th>acceptance</th><th>mean accepted length</th>"
      "<th>acceptance by position</th><th>draft share</th><th>verify share</th><th>TTFT p50 ms</th><th>TPOT p50 ms</th>"
      "<th>TPOT p95 ms</th><th>speed-up (mean)</th><th>speed-up (p95)</th>";
  EXPECT_NE(sec.find(head), std::string::npos);
  // The best row marked (and highlighted in HTML).
  EXPECT_NE(sec.find("<tr class=\"frontier\"><td>w8a8 t1 w1 spec=lookup:1-3 k=2 (lowest TPOT p95)</td><td>lookup:1-3</td>"
                     "<td>2</td><td>0.5</td><td>2</td><td>0.6, 0.4</td><td>1 %</td><td>80 %</td><td>22</td><td>42.24</td>"
                     "<td>40</td><td>1.14x</td><td>1.5x</td></tr>"),
            std::string::npos)
      << sec.substr(0, 6000);
  EXPECT_NE(mdn.find("| w8a8 t1 w1 spec=lookup:1-3 k=2 (lowest TPOT p95) | lookup:1-3 | 2 | 0.5 | 2 | 0.6, 0.4 | 1 % | "
                     "80 % | 22 | 42.24 | 40 | 1.14x | 1.5x |"),
            std::string::npos);
  EXPECT_EQ(mdn.find("spec=self:int4_g128_a8 k=2 (lowest"), std::string::npos);  // one best only
  // The off row: its speculative columns "—" with the stored reason as a footnote, never 0.
  EXPECT_NE(sec.find("<td>w8a8 t1 w1 spec=off</td><td>off</td><td>— [1]</td><td>— [1]</td>"), std::string::npos);
  EXPECT_NE(sec.find("<li>[1] speculative off: nothing drafted</li>"), std::string::npos);
  // lookup k=4: no speed-up, "—" with its reason; a null acceptance at position 4 is "—" too.
  EXPECT_NE(sec.find("<td>w8a8 t1 w1 spec=lookup:1-3 k=4</td><td>lookup:1-3</td><td>4</td><td>0.3</td><td>2.2</td>"
                     "<td>0.5, 0.3, 0.2, —</td><td>1 %</td><td>80 %</td><td>24</td><td>52.8</td><td>66</td>"
                     "<td>— [2]</td><td>— [2]</td></tr>"),
            std::string::npos);
  EXPECT_NE(sec.find("<li>[2] speed-up: " + xml_escape(test::kSpecSpeedupReason) + "</li>"), std::string::npos);
  EXPECT_NE(mdn.find("| 24 | 52.8 | 66 | — \\[2\\] | — \\[2\\] |"), std::string::npos);
  EXPECT_NE(mdn.find("\\[2\\] speed-up: the off variant's TPOT was not stored when this row was"), std::string::npos);
  // The same notes in both documents.
  const ReportData d = collect_report(db, {fx().spec.run});
  ASSERT_EQ(speculative_notes(d).size(), 2u);
  for (const auto& n : speculative_notes(d)) {
    EXPECT_NE(sec.find("<li>" + xml_escape(n) + "</li>"), std::string::npos) << n;
    EXPECT_NE(mdn.find("- " + n), std::string::npos) << n;
  }
}

TEST(ReportsSpeculative, SeveralRunsAreToldApartAndJudgedEachOnItsOwn) {
  const std::string path = test::fresh_db_path("reports_speculative", "two-runs.sqlite");
  const test::SpeculativeFixture a = test::make_speculative_fixture(path);
  const test::SpeculativeFixture b = test::make_speculative_fixture(path);
  {
    // In run b, self k=4 is the fastest at p95.
    Store st(path);
    st.update("variants", "variant_id", b.self_k4, {{"tpot_p95_ms", 30.0}, {"spec_speedup_p95", 2.0}});
  }
  Db db(path);
  const Speculative sp = reports::speculative(db, {a.run, b.run});
  ASSERT_EQ(sp.series.size(), 4u);
  EXPECT_EQ(sp.series[0].name, "run " + std::to_string(a.run) + ": lookup:1-3");
  EXPECT_EQ(sp.series[3].name, "run " + std::to_string(b.run) + ": self:int4_g128_a8");
  ASSERT_EQ(sp.baselines.size(), 2u);
  ASSERT_EQ(sp.best.size(), 2u);
  EXPECT_EQ(sp.at(sp.best[0]).v.variant_id, a.lookup_k2);
  EXPECT_EQ(sp.at(sp.best[1]).v.variant_id, b.self_k4);
  EXPECT_EQ(sp.best[1].text, "lowest TPOT p95: self:int4_g128_a8 k=4, 30 ms (speed-up 2x at p95 over the off variant's 60 ms)");
  EXPECT_TRUE(has(sp.notes(), "run " + std::to_string(b.run) + ": " + sp.best[1].text + "."));
  // One table per run in the report.
  const ReportData d = collect_report(db, {a.run, b.run});
  const std::string mdn = render_markdown(d);
  EXPECT_NE(mdn.find("### Run " + std::to_string(a.run) + "\n\n| variant | drafter |"), std::string::npos);
  EXPECT_NE(mdn.find("### Run " + std::to_string(b.run) + "\n\n| variant | drafter |"), std::string::npos);
  EXPECT_NE(mdn.find("| w8a8 t1 w1 spec=self:int4_g128_a8 k=4 (lowest TPOT p95) |"), std::string::npos);
  EXPECT_EQ(speculative_charts(d)[1].hlines.size(), 2u);
  EXPECT_EQ(speculative_charts(d)[1].hlines[1].label, "run " + std::to_string(b.run) + ": off: 60 ms");
}

TEST(ReportsSpeculative, SeveralBuildsEachAgainstItsOwnOffVariant) {
  const std::string path = test::fresh_db_path("reports_speculative", "two-builds.sqlite");
  const test::SpeculativeFixture s = test::make_speculative_fixture(path);
  int64_t f32_off = 0, f32_self = 0;
  {
    // An f32 build in the same run: its off variant (TPOT p95 200 ms) and self-drafting at k=2
    // (150 ms). No spec_baseline_variant_id: the off row of the same build is its baseline.
    Store st(path);
    f32_off = test::speculative_variant(st, s.run, 5, {"off", 0, 0, 0, "", 0, 0, 180, 200, false}, "f32");
    f32_self = test::speculative_variant(st, s.run, 6, {"self:int4_g128_a8", 2, 0.7, 2.4, "[0.8,0.6]", 0.4, 0.5, 150, 150, false}, "f32");
    st.update("variants", "variant_id", f32_self, {{"spec_speedup", 1.2}, {"spec_speedup_p95", 200.0 / 150.0},
                                                   {"spec_speedup_reason", sql_null()}});
  }
  Db db(path);
  const Speculative sp = reports::speculative(db, {s.run});
  EXPECT_TRUE(sp.several_builds);
  ASSERT_EQ(sp.series.size(), 3u);
  EXPECT_EQ(sp.series[0].name, "lookup:1-3 (w8a8 t1 w1)");
  EXPECT_EQ(sp.series[1].name, "self:int4_g128_a8 (w8a8 t1 w1)");
  EXPECT_EQ(sp.series[2].name, "self:int4_g128_a8 (f32 t1 w1)");
  ASSERT_EQ(sp.baselines.size(), 2u);
  ASSERT_TRUE(sp.baseline_of(sp.series[2]));
  EXPECT_EQ(sp.baseline_of(sp.series[2])->v.variant_id, f32_off);
  EXPECT_EQ(sp.baseline_of(sp.series[0])->v.variant_id, s.off);
  // The lowest TPOT p95 of each build, each against its own off variant.
  ASSERT_EQ(sp.best.size(), 2u);
  EXPECT_EQ(sp.at(sp.best[0]).v.variant_id, s.lookup_k2);
  EXPECT_EQ(sp.at(sp.best[1]).v.variant_id, f32_self);
  EXPECT_EQ(sp.best[1].text, "lowest TPOT p95: self:int4_g128_a8 k=2, 150 ms (speed-up 1.33x at p95 over the off variant's 200 ms)");
  EXPECT_TRUE(has(sp.notes(), "f32 t1 w1: " + sp.best[1].text + "."));
  const auto charts = speculative_charts(collect_report(db, {s.run}));
  ASSERT_EQ(charts[1].hlines.size(), 2u);
  EXPECT_EQ(charts[1].hlines[1].label, "off (f32 t1 w1): 200 ms");
}

TEST(ReportsSpeculative, FailedRowsAreNamedAndABadPositionListIsRefused) {
  const std::string path = test::fresh_db_path("reports_speculative", "failed.sqlite");
  const test::SpeculativeFixture s = test::make_speculative_fixture(path);
  {
    Store st(path);
    st.insert("variants", {{"run_id", s.run}, {"variant_index", int64_t{5}}, {"step_index", int64_t{0}},
                           {"label", std::string("w8a8 t1 w1 spec=draft:/models/stories260K.bin k=8")},
                           {"status", std::string("failed")}, {"error", std::string("vocabulary mismatch: 512 vs 32000")},
                           {"format", std::string("w8a8")}, {"threads", int64_t{1}}, {"workers", int64_t{1}},
                           {"speculative", std::string("draft:/models/stories260K.bin")}, {"draft_tokens", int64_t{8}}});
  }
  {
    Db db(path);
    const Speculative sp = reports::speculative(db, {s.run});
    EXPECT_EQ(sp.series.size(), 2u);  // the failed drafter has no series
    EXPECT_TRUE(has(sp.unplotted, "draft:stories260K k=8: failed: vocabulary mismatch: 512 vs 32000"));
  }
  EXPECT_EQ(drafter_name("draft:/work/shared/models/stories260K/stories260K.bin"), "draft:stories260K");
  EXPECT_EQ(drafter_name("draft:stories260K"), "draft:stories260K");
  EXPECT_EQ(drafter_name("self:int4_g128_a8"), "self:int4_g128_a8");
  {
    Store st(path);
    st.update("variants", "variant_id", s.self_k4, {{"spec_acceptance_by_position", std::string("[0.9, \"high\"]")}});
  }
  Db db(path);
  try {
    reports::speculative(db, {s.run});
    FAIL() << "a position list with a string was accepted";
  } catch (const DbError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("variant " + std::to_string(s.self_k4)), std::string::npos) << m;
    EXPECT_NE(m.find("spec_acceptance_by_position"), std::string::npos) << m;
    EXPECT_NE(m.find("neither a number nor null"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace cibench::reports
