#include "reports/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "engines/core/output_file.h"
#include "reports/render/html_report.h"
#include "reports/render/markdown_report.h"

namespace cibench::reports {
std::string slo_verdict(const Variant& v, const std::vector<Slo>& slos) {
  if (slos.empty()) return "no SLO";
  return judge_slos(slos, [&](const Slo& s) { return v.get(s.column()); }).summary();
}

ReportData collect_report(Db& db, const std::vector<int64_t>& runs, const ReportOptions& opt) {
  CIBENCH_CHECK(!runs.empty(), "a report needs at least one run");
  ReportData d;
  for (int64_t id : runs) {
    d.runs.push_back(db.run(id));
    d.provenance.push_back(db.provenance(id));
    d.slos.push_back(db.slos(id));
    d.sweeps.push_back(reports::load_sweep(db, id));
    // The load chart plots what the SLOs bound: one sweep per SLO metric (latency when none).
    std::vector<LoadSweep> per_metric;
    std::vector<std::string> metrics;
    for (const Slo& s : d.slos.back())
      if (std::find(metrics.begin(), metrics.end(), s.metric) == metrics.end()) metrics.push_back(s.metric);
    if (metrics.empty()) metrics.push_back("latency");
    for (const auto& m : metrics) per_metric.push_back(m == "latency" ? d.sweeps.back() : reports::load_sweep(db, id, m));
    d.metric_sweeps.push_back(std::move(per_metric));
    d.floors.push_back(db.floors(id));
  }
  auto [dx, dy] = reports::default_axes(db, runs);
  d.tradeoff = reports::tradeoff(db, runs, opt.x_axis.empty() ? dx : opt.x_axis, opt.y_axis.empty() ? dy : opt.y_axis, opt.floor);
  d.variants = db.variants(runs);
  for (const Variant& v : d.variants) {
    if (v.status != "ok") continue;
    CdfSeries s = reports::latency_cdf(db, v.variant_id);
    if (s.points.empty()) continue;
    s.name = (runs.size() > 1 ? "run " + std::to_string(v.run_id) + ": " : "") + v.short_name();
    d.cdfs.push_back(std::move(s));
  }
  for (const Variant& v : d.variants) {
    if (v.status != "ok") continue;
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i] == v.run_id) {
          if (auto g = reports::goodput(db, v, d.slos[i])) d.goodput[v.variant_id] = *g;
          if (auto a = reports::slo_attainment(db, v, d.slos[i])) d.slo_attainment[v.variant_id] = *a;
        }
  }
  d.serving = reports::serving(db, runs);
  for (const ServingSeries& ss : d.serving.series)
    if (const ServingStep* st = ss.timeline_step()) {
      Timeline tl = reports::timeline(db, st->v);
      tl.name = str(ss.name, " @", fmt_num(st->offered_qps, 3), " qps");
      tl.why = ss.knee_step() ? (ss.knee().reached ? "knee step" : "highest step: every rate tried met the SLOs")
                              : "highest step: no knee";
      d.timelines.push_back(std::move(tl));
    }
  d.speculative = reports::speculative(db, runs);
  d.hosts = reports::hosts(db, runs);
  d.scaling = reports::scaling(db, runs);
  d.counters = reports::counters(db, runs);
  if (runs.size() == 2) d.comparison = reports::compare_runs(db, runs[0], runs[1], opt.compare_resamples);
  return d;
}

std::vector<RankedVariant> rank_variants(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  auto slos_of = [&](int64_t run_id) -> const std::vector<Slo>& {
    static const std::vector<Slo> none;
    for (size_t i = 0; i < d.runs.size(); ++i)
      if (d.runs[i].run_id == run_id) return d.slos[i];
    return none;
  };
  std::vector<RankedVariant> placed, unplaced;
  for (const auto& p : t.points) {
    RankedVariant r;
    r.v = p.v;
    r.x = p.x;
    r.y = p.y;
    r.on_frontier = p.on_frontier;
    const bool y_floor_broken = t.floor && !meets_floor(t.y, p.y, *t.floor);
    if (p.floors.met && !*p.floors.met) r.floor_verdict = p.floors.summary();
    else if (y_floor_broken) r.floor_verdict = "below floor " + fmt_num(*t.floor) + " (" + t.floor_source + ")";
    else if (!p.floors.met && p.floors.unmeasured.empty()) r.floor_verdict = t.floor ? "meets floor" : "no floor";
    else r.floor_verdict = p.floors.summary();
    r.slo_verdict = slo_verdict(p.v, slos_of(p.v.run_id));
    placed.push_back(std::move(r));
  }
  auto good = [](const RankedVariant& r) {
    return r.floor_verdict.rfind("below", 0) != 0 && r.slo_verdict.rfind("missed", 0) != 0;
  };
  // Quality on y: frontier first, then by x; throughput on y (no accuracy): by throughput.
  const bool by_y = !is_quality_axis(t.y.key);
  std::stable_sort(placed.begin(), placed.end(), [&](const RankedVariant& a, const RankedVariant& b) {
    if (good(a) != good(b)) return good(a);
    if (by_y) return t.y.higher_is_better ? *a.y > *b.y : *a.y < *b.y;
    if (a.on_frontier != b.on_frontier) return a.on_frontier;
    return t.x.higher_is_better ? *a.x > *b.x : *a.x < *b.x;
  });
  for (size_t i = 0; i < placed.size(); ++i) placed[i].rank = static_cast<int>(i + 1);
  for (const auto& [v, why] : t.unplotted) {
    RankedVariant r;
    r.v = v;
    r.x = v.get(t.x.key);
    if (r.x) *r.x *= t.x.scale;
    r.y = v.get(t.y.key);
    if (r.y) *r.y *= t.y.scale;
    r.floor_verdict = "not measured";
    r.slo_verdict = v.status == "ok" ? slo_verdict(v, slos_of(v.run_id)) : "not measured";
    r.note = why;
    unplaced.push_back(std::move(r));
  }
  placed.insert(placed.end(), unplaced.begin(), unplaced.end());
  return placed;
}
ReportFiles write_report(Db& db, const std::vector<int64_t>& runs, const std::string& out_dir,
                         const ReportOptions& opt) {
  namespace fs = std::filesystem;
  const ReportData d = collect_report(db, runs, opt);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw FileError(out_dir, "cannot create the report folder: " + ec.message());
  ReportFiles f{(fs::path(out_dir) / "report.html").string(), (fs::path(out_dir) / "report.md").string()};
  // Written beside and renamed over: an existing report.html that is a symlink is replaced as a
  // link, its target is never written through.
  write_file_replacing(f.html, render_html(d), "the HTML report");
  write_file_replacing(f.markdown, render_markdown(d), "the Markdown report");
  return f;
}

}  // namespace cibench::reports
