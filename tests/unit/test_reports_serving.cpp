// The serving analysis and `cibench report` (reports/analysis/serving.h reports::serving and
// reports::timeline, reports/render/ serving_charts and serving_notes) on the fixture's serving run:
// the series and their knees, the SLO lines, unmeasured values kept unmeasured, the timeline bars'
// extents from the stored request rows, and nothing at all for runs without serving rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
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
  test::ServingFixture serving;
};
// The reports fixture with the serving run added.
const Fx& fx() {
  static Fx f = [] {
    Fx x;
    x.path = test::fresh_db_path("reports_serving", "fixture.sqlite");
    x.ids = test::make_reports_fixture(x.path);
    x.serving = test::make_serving_fixture(x.path);
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
    if (s.name == name && s.in_legend) return &s;
  return nullptr;
}

const svg::Chart* chart_titled(const std::vector<svg::Chart>& cs, const std::string& prefix) {
  for (const auto& c : cs)
    if (c.title.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

TEST(ReportsServing, SeriesKneesAndSloMetrics) {
  Db db(fx().path);
  const Serving sv = reports::serving(db, {fx().serving.run});
  ASSERT_EQ(sv.series.size(), 3u);
  EXPECT_EQ(sv.common, "w8a8 t1 w1");
  EXPECT_EQ(sv.series[0].name, "batching=none");
  EXPECT_EQ(sv.series[1].name, "b8 batching=static");
  EXPECT_EQ(sv.series[2].name, "b8 batching=continuous");
  EXPECT_EQ(sv.series[0].batching, "none");
  EXPECT_EQ(sv.series[0].steps.size(), 3u);  // the run stopped after the step that broke an SLO
  EXPECT_EQ(sv.series[2].steps.size(), 4u);
  // The y axes: the columns the SLOs bound, the first token first.
  ASSERT_EQ(sv.metrics.size(), 2u);
  EXPECT_EQ(sv.metrics[0].column, "ttft_p99_ms");
  EXPECT_EQ(sv.metrics[0].title, "TTFT p99");
  ASSERT_TRUE(sv.metrics[0].slo);
  EXPECT_EQ(sv.metrics[0].slo->limit_ms, 500);
  EXPECT_EQ(sv.metrics[1].column, "tpot_p99_ms");
  ASSERT_TRUE(sv.metrics[1].slo);
  EXPECT_EQ(sv.metrics[1].slo->limit_ms, 50);
  EXPECT_TRUE(sv.x_achieved);
  EXPECT_EQ(sv.x_title(), "achieved (completed req/s)");
  EXPECT_EQ(sv.occupancy_metric, "tpot");
  // Knees: none 2 qps (4 broke TTFT), static every rate met (>= 8), continuous 4 qps (8 broke TTFT).
  const Knee k0 = sv.series[0].knee(), k1 = sv.series[1].knee(), k2 = sv.series[2].knee();
  ASSERT_TRUE(k0.qps && k1.qps && k2.qps);
  EXPECT_EQ(*k0.qps, 2);
  EXPECT_TRUE(k0.reached);
  EXPECT_EQ(*k1.qps, 8);
  EXPECT_FALSE(k1.reached);
  EXPECT_EQ(*k2.qps, 4);
  EXPECT_TRUE(k2.reached);
  // The same knee as the load sweep's curves (the verdicts and the load charts).
  const LoadSweep ls = reports::load_sweep(db, fx().serving.run);
  ASSERT_EQ(ls.curves.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ls.curves[i].knee(), sv.series[i].knee().qps) << i;
    EXPECT_EQ(ls.curves[i].knee_text(), sv.series[i].curve.knee_text()) << i;
  }
  // The timeline steps: the knee's, else the highest.
  ASSERT_TRUE(sv.series[0].timeline_step() && sv.series[1].timeline_step() && sv.series[2].timeline_step());
  EXPECT_EQ(sv.series[0].timeline_step()->v.variant_id, fx().serving.none_knee);
  EXPECT_EQ(sv.series[1].timeline_step()->v.variant_id, fx().serving.static_top);
  EXPECT_EQ(sv.series[2].timeline_step()->v.variant_id, fx().serving.cont_knee);
  // Values as stored; what was not measured stays unmeasured, with its reason.
  const ServingStep& c4 = sv.series[2].steps[2];
  EXPECT_EQ(c4.offered_qps, 4);
  EXPECT_DOUBLE_EQ(*c4.achieved_qps, 3.8);
  EXPECT_DOUBLE_EQ(*c4.goodput_qps, 3.8);
  EXPECT_EQ(c4.v.get("ttft_p99_ms"), 200);
  const ServingStep& c8 = sv.series[2].steps[3];
  EXPECT_FALSE(c8.goodput_qps);
  EXPECT_EQ(c8.goodput_reason, "not every request was kept (12 > run.exact_sample_cap)");
  EXPECT_EQ(c8.verdict.met, std::optional<bool>(false));
  for (const auto& st : sv.series[0].steps) EXPECT_FALSE(st.v.get("batch_occupancy_mean"));
  const auto notes = sv.notes();
  auto has = [&](const std::string& line) { return std::find(notes.begin(), notes.end(), line) != notes.end(); };
  EXPECT_TRUE(has("Every series: w8a8 t1 w1."));
  EXPECT_TRUE(has("batching=none: " + sv.series[0].curve.knee_text() + "."));
  EXPECT_TRUE(has("batching=none: batch occupancy: batching none: one sequence per worker, no scheduler steps (every step)."));
  EXPECT_TRUE(has("b8 batching=continuous: goodput: not every request was kept (12 > run.exact_sample_cap) (at 8 qps)."));
}

TEST(ReportsServing, RunsWithoutServingRowsHaveNoServingViews) {
  Db db(fx().path);
  const auto& ids = fx().ids;
  for (int64_t run : {ids.run_formats, ids.run_formats_b, ids.run_threads, ids.run_stepped})
    EXPECT_TRUE(reports::serving(db, {run}).empty()) << run;
  for (const Variant& v : db.variants({ids.run_formats, ids.run_stepped})) EXPECT_FALSE(is_serving_row(v)) << v.label;
  const ReportData d = collect_report(db, {ids.run_formats});
  EXPECT_TRUE(d.timelines.empty());
  EXPECT_TRUE(serving_charts(d).empty());
  EXPECT_TRUE(serving_notes(d).empty());
  EXPECT_EQ(render_html(d).find("Serving"), std::string::npos);
  EXPECT_EQ(render_markdown(d).find("## Serving"), std::string::npos);
  // With another run, the serving run's series carry its number.
  const Serving both = reports::serving(db, {ids.run_stepped, fx().serving.run});
  ASSERT_EQ(both.series.size(), 3u);
  EXPECT_EQ(both.series[2].name, "run " + std::to_string(fx().serving.run) + ": b8 batching=continuous");
}

TEST(ReportsServing, TimelineBarsAreTheStoredRequests) {
  Db db(fx().path);
  const Serving sv = reports::serving(db, {fx().serving.run});
  const ServingStep* st = sv.series[2].timeline_step();
  ASSERT_TRUE(st);
  const Timeline tl = reports::timeline(db, st->v);
  ASSERT_EQ(tl.requests.size(), static_cast<size_t>(test::kServingRequests));
  EXPECT_EQ(tl.stored, test::kServingRequests);
  EXPECT_EQ(tl.coverage(), "all 12 requests");
  for (int i = 0; i < test::kServingRequests; ++i) {
    const auto t = test::serving_request(i);
    const TimelineRequest& r = tl.requests[static_cast<size_t>(i)];
    EXPECT_EQ(r.scheduled_ms, t.scheduled) << i;
    ASSERT_TRUE(r.to_first_token() && r.decode()) << i;
    EXPECT_DOUBLE_EQ(r.decode()->first, t.scheduled + t.ttft) << i;
    EXPECT_DOUBLE_EQ(r.decode()->second, t.scheduled + t.latency) << i;
    EXPECT_DOUBLE_EQ(r.to_first_token()->second, t.scheduled + t.ttft) << i;
    EXPECT_FALSE(r.service()) << i;  // a decoder: a first token, no plain service bar
    if (i == 2) {
      // No queue wait stored: no queued bar, the first-token bar from the arrival.
      EXPECT_FALSE(r.queued());
      EXPECT_DOUBLE_EQ(r.to_first_token()->first, t.scheduled);
    } else {
      ASSERT_TRUE(r.queued()) << i;
      EXPECT_DOUBLE_EQ(r.queued()->first, t.scheduled) << i;
      EXPECT_DOUBLE_EQ(r.queued()->second, t.scheduled + t.queue) << i;
      EXPECT_DOUBLE_EQ(r.to_first_token()->first, t.scheduled + t.queue) << i;
    }
  }
  const auto notes = tl.notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the queue wait of 1 was not measured"), std::string::npos) << notes[0];
  // Capped: the first requests by arrival, and it says so.
  const Timeline five = reports::timeline(db, st->v, 5);
  ASSERT_EQ(five.requests.size(), 5u);
  EXPECT_EQ(five.requests.back().scheduled_ms, test::serving_request(4).scheduled);
  EXPECT_EQ(five.coverage(), "the first 5 of 12 requests by arrival");
  // A step whose requests were not kept.
  const Timeline none = reports::timeline(db, sv.series[2].steps[0].v);
  EXPECT_TRUE(none.requests.empty());
  EXPECT_EQ(none.coverage(), "no per-request rows stored");
}

TEST(ReportsServing, ReportChartsCarryTheSeriesKneesAndSloLines) {
  Db db(fx().path);
  const ReportData d = collect_report(db, {fx().serving.run});
  const auto charts = serving_charts(d);
  ASSERT_EQ(charts.size(), 7u);  // TTFT, TPOT, goodput, occupancy, three timelines
  const svg::Chart* ttft = chart_titled(charts, "TTFT p99 against achieved throughput");
  ASSERT_TRUE(ttft);
  ASSERT_EQ(ttft->hlines.size(), 1u);
  EXPECT_EQ(ttft->hlines[0].value, 500);
  const svg::Series* cont = series_named(*ttft, "b8 batching=continuous");
  ASSERT_TRUE(cont);
  ASSERT_EQ(cont->pts.size(), 4u);
  const double cont_ttft[] = {120, 140, 200, 700}, rates[] = {1, 2, 4, 8};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(cont->pts[i].x, 0.95 * rates[i]);
    EXPECT_DOUBLE_EQ(cont->pts[i].y, cont_ttft[i]);
  }
  // The knees where they are: none at 2 qps (TTFT 200), continuous at 4 qps (TTFT 200); static met
  // every rate: a hollow marker at 8 qps (TTFT 450).
  const svg::Series* knees = series_named(*ttft, "knee");
  const svg::Series* held = series_named(*ttft, "no knee: all rates met SLOs");
  ASSERT_TRUE(knees && held);
  ASSERT_EQ(knees->pts.size(), 2u);
  EXPECT_DOUBLE_EQ(knees->pts[0].x, 1.9);
  EXPECT_DOUBLE_EQ(knees->pts[0].y, 200);
  EXPECT_DOUBLE_EQ(knees->pts[1].x, 3.8);
  EXPECT_DOUBLE_EQ(knees->pts[1].y, 200);
  ASSERT_EQ(held->pts.size(), 1u);
  EXPECT_DOUBLE_EQ(held->pts[0].x, 7.6);
  EXPECT_DOUBLE_EQ(held->pts[0].y, 450);
  const svg::Chart* tpot = chart_titled(charts, "TPOT p99 against achieved throughput");
  ASSERT_TRUE(tpot);
  ASSERT_EQ(tpot->hlines.size(), 1u);
  EXPECT_EQ(tpot->hlines[0].value, 50);
  // Goodput: the continuous 8 qps step is not measured and not drawn (never a 0).
  const svg::Chart* good = chart_titled(charts, "Goodput");
  ASSERT_TRUE(good);
  const svg::Series* gc = series_named(*good, "b8 batching=continuous");
  ASSERT_TRUE(gc);
  ASSERT_EQ(gc->pts.size(), 3u);
  EXPECT_DOUBLE_EQ(gc->pts[2].x, 4);
  EXPECT_DOUBLE_EQ(gc->pts[2].y, 3.8);
  EXPECT_TRUE(series_named(*good, "goodput = offered"));
  // Occupancy: none has none (NULL with its reason): no line; continuous's p99 at its occupancies.
  const svg::Chart* occ = chart_titled(charts, "TPOT p50 and p99 against mean batch occupancy");
  ASSERT_TRUE(occ);
  EXPECT_FALSE(series_named(*occ, "batching=none p99"));
  const svg::Series* oc = series_named(*occ, "b8 batching=continuous p99");
  ASSERT_TRUE(oc);
  const double occs[] = {1.2, 2, 3.5, 6}, tpots[] = {10, 15, 25, 40};
  ASSERT_EQ(oc->pts.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(oc->pts[i].x, occs[i]);
    EXPECT_EQ(oc->pts[i].y, tpots[i]);
  }
  // The continuous timeline: one bar per request and segment, as stored.
  const svg::Chart* tl = chart_titled(charts, "Requests of b8 batching=continuous @4 qps (knee step)");
  ASSERT_TRUE(tl);
  const svg::Series* queued = series_named(*tl, "queued");
  const svg::Series* first = series_named(*tl, "to first token");
  const svg::Series* decode = series_named(*tl, "decode");
  ASSERT_TRUE(queued && first && decode);
  EXPECT_EQ(queued->pts.size(), 11u);  // request 2 has no queue wait
  ASSERT_EQ(decode->pts.size(), 12u);
  ASSERT_EQ(first->pts.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    const auto t = test::serving_request(static_cast<int>(i));
    EXPECT_EQ(decode->pts[i].y, static_cast<double>(i + 1));
    EXPECT_DOUBLE_EQ(decode->pts[i].x, t.scheduled + t.ttft);
    EXPECT_DOUBLE_EQ(decode->ends[i], t.scheduled + t.latency);
    EXPECT_DOUBLE_EQ(first->ends[i], t.scheduled + t.ttft);
  }
  EXPECT_TRUE(chart_titled(charts, "Requests of batching=none @2 qps (knee step)"));
  EXPECT_TRUE(chart_titled(charts, "Requests of b8 batching=static @8 qps (highest step: every rate tried met the SLOs)"));
}

TEST(ReportsServing, HtmlAndMarkdownCarryTheSameServingData) {
  Db db(fx().path);
  const std::string out = test::fresh_db_path("reports_serving", "report_out");
  const ReportFiles f = write_report(db, {fx().serving.run}, out);
  const std::string html = read_file(f.html), mdn = read_file(f.markdown);
  ASSERT_NE(html.find("<h2>Serving</h2>"), std::string::npos);
  ASSERT_NE(mdn.find("## Serving"), std::string::npos);
  // Seven serving charts in the HTML, the timeline bars drawn as rectangles with their request.
  const std::string serving = html.substr(html.find("<h2>Serving</h2>"));
  size_t svgs = 0;
  for (size_t p = serving.find("<svg"); p != std::string::npos; p = serving.find("<svg", p + 1)) ++svgs;
  EXPECT_GE(svgs, 7u);
  EXPECT_NE(serving.find("SLO ttft_p99_ms 500 ms"), std::string::npos);
  EXPECT_NE(serving.find("SLO tpot_p99_ms 50 ms"), std::string::npos);
  EXPECT_NE(serving.find("class=\"series bars\" data-name=\"decode\""), std::string::npos);
  // The same notes (knees and unmeasured values) in both documents, and the same table rows.
  const ReportData d = collect_report(db, {fx().serving.run});
  for (const auto& n : serving_notes(d)) {
    EXPECT_NE(html.find("<li>" + xml_escape(n) + "</li>"), std::string::npos) << n;
    std::string m = n;  // Markdown escapes what it would interpret
    m = std::regex_replace(m, std::regex(">"), "&gt;");
    EXPECT_NE(mdn.find("- " + m), std::string::npos) << n;
  }
  EXPECT_NE(mdn.find("| b8 batching=continuous (knee) | 4 | 3.8 | 200 | 25 |"), std::string::npos);
  EXPECT_NE(html.find("<td>b8 batching=continuous (knee)</td><td>4</td><td>3.8</td><td>200</td><td>25</td>"), std::string::npos);
  // Unmeasured stays n/a: none's batch occupancy and continuous's goodput at 8 qps.
  EXPECT_NE(mdn.find("| batching=none (knee) | 2 | 1.9 | 200 | 8 | 12 | 1.9 | 100 % | n/a | n/a | n/a | met |"), std::string::npos)
      << mdn.substr(mdn.find("## Serving"), 3000);
  EXPECT_NE(mdn.find("| b8 batching=continuous | 8 | 7.6 | 700 | 40 | 60 | n/a | 50 % |"), std::string::npos);
  // The timeline tables: request 3 (index 2) without a queue wait.
  EXPECT_NE(mdn.find("### Requests of b8 batching=continuous @4 qps (knee step): all 12 requests"), std::string::npos);
  EXPECT_NE(mdn.find("| 3 | 3 | 250 | n/a | 38 | 30 | 68 | 4 |"), std::string::npos);
}

TEST(ReportsServing, XIsTheOfferedRateWhenAchievedIsNotMeasured) {
  const std::string path = test::fresh_db_path("reports_serving", "offered.sqlite");
  const test::ServingFixture s = test::make_serving_fixture(path);
  {
    Store st(path);
    st.update("variants", "variant_id", s.cont_top, {{"achieved_qps", sql_null()}});
  }
  Db db(path);
  const Serving sv = reports::serving(db, {s.run});
  EXPECT_FALSE(sv.x_achieved);
  EXPECT_EQ(sv.x_title(), "offered rate (req/s; achieved not measured)");
  const ReportData d = collect_report(db, {s.run});
  const auto charts = serving_charts(d);
  const svg::Chart* ttft = chart_titled(charts, "TTFT p99 against offered rate");
  ASSERT_TRUE(ttft);
  const svg::Series* cont = series_named(*ttft, "b8 batching=continuous");
  ASSERT_TRUE(cont);
  ASSERT_EQ(cont->pts.size(), 4u);
  EXPECT_EQ(cont->pts[3].x, 8);
  const auto notes = serving_notes(d);
  EXPECT_NE(std::find(notes.begin(), notes.end(), "x = the offered rate: some step did not measure its achieved throughput."),
            notes.end());
}

TEST(ReportsServing, SeriesDifferingInABatchingSettingAreToldApart) {
  const std::string path = test::fresh_db_path("reports_serving", "twins.sqlite");
  const test::ServingFixture s = test::make_serving_fixture(path);
  {
    // Static becomes a second continuous variant with 32 tokens per step, the other has 64.
    Store st(path);
    for (const auto& v : Db(path).variants({s.run})) {
      if (v.variant_index == 1)
        st.update("variants", "variant_id", v.variant_id,
                  {{"batching", std::string("continuous")}, {"max_tokens_per_step", int64_t{32}}, {"kv_policy", std::string("queue")}});
      if (v.variant_index == 2)
        st.update("variants", "variant_id", v.variant_id,
                  {{"max_tokens_per_step", int64_t{64}}, {"kv_policy", std::string("queue")}});
    }
  }
  Db db(path);
  const Serving sv = reports::serving(db, {s.run});
  ASSERT_EQ(sv.series.size(), 3u);
  EXPECT_EQ(sv.series[0].name, "batching=none");
  EXPECT_EQ(sv.series[1].name, "b8 batching=continuous tok32");
  EXPECT_EQ(sv.series[2].name, "b8 batching=continuous tok64");
  EXPECT_EQ(sv.common, "w8a8 t1 w1");
}

// Prefix cache off and on (schema 9) of the same continuous engine: the names say which.
TEST(ReportsServing, PrefixCacheOffAndOnAreToldApart) {
  const std::string path = test::fresh_db_path("reports_serving", "prefix.sqlite");
  const test::ServingFixture s = test::make_serving_fixture(path);
  {
    Store st(path);
    for (const auto& v : Db(path).variants({s.run})) {
      if (v.variant_index == 1)
        st.update("variants", "variant_id", v.variant_id,
                  {{"batching", std::string("continuous")}, {"kv_policy", std::string("queue")}, {"prefix_cache", int64_t{0}}});
      if (v.variant_index == 2)
        st.update("variants", "variant_id", v.variant_id, {{"kv_policy", std::string("queue")}, {"prefix_cache", int64_t{1}}});
    }
  }
  Db db(path);
  const Serving sv = reports::serving(db, {s.run});
  ASSERT_EQ(sv.series.size(), 3u);
  EXPECT_EQ(sv.series[1].name, "b8 batching=continuous no-prefix-cache");
  EXPECT_EQ(sv.series[2].name, "b8 batching=continuous prefix-cache");
}

TEST(ReportsServing, NoOccupancyChartWhenNoStepMeasuredIt) {
  const std::string path = test::fresh_db_path("reports_serving", "no_occupancy.sqlite");
  const test::ServingFixture s = test::make_serving_fixture(path);
  {
    Store st(path);
    for (const auto& v : Db(path).variants({s.run}))
      st.update("variants", "variant_id", v.variant_id,
                {{"batch_occupancy_mean", sql_null()}, {"batching_reason", std::string("the engine ran no step")}});
  }
  Db db(path);
  const ReportData d = collect_report(db, {s.run});
  const auto charts = serving_charts(d);
  EXPECT_EQ(charts.size(), 6u);
  EXPECT_FALSE(chart_titled(charts, "TPOT p50 and p99 against mean batch occupancy"));
  const auto notes = serving_notes(d);
  EXPECT_NE(std::find(notes.begin(), notes.end(), "b8 batching=static: batch occupancy: the engine ran no step (every step)."),
            notes.end());
  // Goodput against the offered rate starts at 0 with its ceiling.
  const svg::Chart* good = chart_titled(charts, "Goodput");
  ASSERT_TRUE(good);
  const svg::Series* ideal = series_named(*good, "goodput = offered");
  ASSERT_TRUE(ideal);
  ASSERT_EQ(ideal->pts.size(), 2u);
  EXPECT_EQ(ideal->pts[0].x, 0);
  EXPECT_EQ(ideal->pts[1].x, 8);
  EXPECT_EQ(ideal->pts[1].y, 8);
}

TEST(ReportsServing, SvgHorizontalBars) {
  svg::Chart c;
  c.title = "bars";
  c.integer_y = true;
  c.invert_y = true;
  svg::Series s;
  s.name = "queued";
  s.kind = svg::Series::Kind::hbar;
  s.pts = {{10, 1}, {20, 2}, {30, 3}};
  s.ends = {15, 40, 90};
  s.tips = {"a", "b", "c"};
  c.series.push_back(s);
  const std::string out = svg::render(c);
  size_t bars = 0;
  for (size_t p = out.find("<rect class=\"bar\""); p != std::string::npos; p = out.find("<rect class=\"bar\"", p + 1)) ++bars;
  EXPECT_EQ(bars, 3u);
  // Row 1 above row 3 (inverted y), each bar as long as its extent.
  std::regex re("<rect class=\"bar\" x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\"");
  std::vector<std::array<double, 3>> r;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it)
    r.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3])});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_LT(r[0][1], r[1][1]);
  EXPECT_LT(r[1][1], r[2][1]);
  // Widths in proportion to the extents 5, 20, 60 (to the 0.01 px the SVG is written with).
  EXPECT_NEAR(r[1][2] / r[0][2], 4, 0.01);
  EXPECT_NEAR(r[2][2] / r[0][2], 12, 0.02);
  EXPECT_NE(out.find("<title>b</title>"), std::string::npos);
}

}  // namespace
}  // namespace cibench::reports
