#include "reports/render/charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "reports/analysis/labels.h"
#include "reports/render/sections.h"

namespace cibench::reports {
// ---- the charts ---------------------------------------------------------------------------------

svg::Chart tradeoff_chart(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  svg::Chart c;
  c.title = "Trade-off: " + t.y.label + " against " + t.x.label;
  c.x_title = t.x.title();
  c.y_title = t.y.title();
  // Colour by format when the run holds several, else by what varies (drafter, batching, threads):
  // a speculative run's points are not ten of one colour all named "f32".
  std::vector<const Variant*> vs;
  for (const auto& p : t.points) vs.push_back(&p.v);
  const std::vector<std::string> colour_of = colour_keys(vs);
  bool by_format = true;
  for (size_t i = 0; i < vs.size(); ++i) by_format &= colour_of[i] == vs[i]->format;
  std::map<std::string, size_t> at;
  size_t others = 0;  // colours handed out to keys that are not formats
  for (size_t i = 0; i < t.points.size(); ++i) {
    const auto& p = t.points[i];
    const std::string marker = sparsity_marker(p.v.sparsity);
    const std::string sp = p.v.sparsity && *p.v.sparsity > 0 ? " sparsity " + fmt_num(*p.v.sparsity, 3) : "";
    const std::string key = p.meets_floor ? colour_of[i] + sp : "below floor" + sp;
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, c.series.size()).first;
      svg::Series s;
      s.name = key;
      s.color = !p.meets_floor ? kBelowFloorColor : by_format ? format_color(p.v.format) : palette(others++);
      s.marker = marker;
      c.series.push_back(s);
    }
    auto& s = c.series[it->second];
    s.pts.push_back({p.x, p.y});
    s.tips.push_back(display_name(d, p.v) + "\n" + t.x.title() + ": " + fmt_num(p.x) + "\n" + t.y.title() + ": " +
                     fmt_num(p.y) + "\n" + p.v.config());
    s.labels.push_back(p.on_frontier ? display_name(d, p.v) : "");
  }
  if (!t.frontier.empty()) {
    svg::Series f;
    f.name = "Pareto frontier";
    f.kind = svg::Series::Kind::line;
    f.color = "#222222";
    f.dashed = true;
    for (size_t i : t.frontier) f.pts.push_back({t.points[i].x, t.points[i].y});
    c.series.insert(c.series.begin(), f);
  }
  if (t.floor) c.hlines.push_back({*t.floor, "quality floor " + fmt_num(*t.floor), "#d62728"});
  return c;
}

svg::Chart host_cost_chart(const HostsScenario& s) {
  svg::Chart c;
  c.title = "Cost per answer against latency p95: " + s.scenario;
  c.x_title = "latency p95 at the rate priced (ms)";
  const std::string currency = s.costs.empty() ? std::string() : s.costs.front().currency;
  c.y_title = "cost per 1k requests (" + currency + ")";
  std::map<std::string, size_t> at;
  for (const HostCost& h : s.costs) {
    if (!h.p95_ms || !h.cost.per_thousand_requests) continue;
    const bool ok = h.meets_floor && h.meets_slo && h.valid;
    const std::string key = ok ? h.host_type : "below floor, SLO missed or invalid";
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, c.series.size()).first;
      svg::Series sr;
      sr.name = key;
      sr.color = ok ? palette(at.size() - 1) : kBelowFloorColor;
      c.series.push_back(sr);
    }
    auto& sr = c.series[it->second];
    sr.pts.push_back({*h.p95_ms, *h.cost.per_thousand_requests});
    sr.tips.push_back(h.host_type + ": " + h.label + " (run " + std::to_string(h.run_id) + ")\n" + h.cost.basis +
                      "\np95 " + fmt_num(*h.p95_ms) + " ms, " + fmt_num(*h.cost.per_thousand_requests, 4) + " " +
                      currency + " per 1k requests");
    sr.labels.push_back("");
  }
  if (s.frontier.size() > 1) {
    svg::Series f;
    f.name = "frontier";
    f.kind = svg::Series::Kind::line;
    f.color = "#222222";
    f.dashed = true;
    for (size_t i : s.frontier) f.pts.push_back({*s.costs[i].p95_ms, *s.costs[i].cost.per_thousand_requests});
    c.series.insert(c.series.begin(), f);
  }
  return c;
}

svg::Chart cdf_chart(const ReportData& d) {
  svg::Chart c;
  c.title = "Latency distribution (CDF)";
  if (d.cdfs.size() > kMaxCurves) c.title += str(" (the first ", kMaxCurves, " of ", d.cdfs.size(), " variants)");
  c.x_title = "latency (ms)";
  c.y_title = "fraction of requests";
  // A log axis when the times span a decade or more (1, 10, 100 ms labelled); a narrower range
  // (275 to 585 ms) reads better on a linear one, with more than two labels.
  double lo = INFINITY, hi = 0;
  for (const auto& s : d.cdfs)
    for (const auto& p : s.points)
      if (p.x > 0) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
  c.log_x = hi > 0 && hi / lo >= 10;
  size_t i = 0;
  for (const auto& s : d.cdfs) {
    if (i >= kMaxCurves) break;
    svg::Series sr;
    sr.name = s.name;
    sr.kind = svg::Series::Kind::step;
    sr.color = palette(i++);
    sr.pts = s.points;
    c.series.push_back(sr);
  }
  return c;
}
// One chart per metric the run's SLOs bound (latency when none): the SLO's percentile (and p50)
// of every curve against the offered rate, with the SLO as a horizontal line.
std::vector<svg::Chart> load_charts(const ReportData& d) {
  std::vector<svg::Chart> out;
  for (size_t r = 0; r < d.metric_sweeps.size(); ++r) {
    for (const LoadSweep& ls : d.metric_sweeps[r]) {
      if (!ls.has_steps()) continue;
      svg::Chart c;
      c.title = "Run " + std::to_string(d.runs[r].run_id) + ": " + metric_title(ls.metric) + " against offered load";
      c.x_title = "offered load (queries/s)";
      c.y_title = metric_title(ls.metric) + " (ms)";
      std::set<double> pcts;
      for (const Slo& s : ls.slos)
        if (s.metric == ls.metric) pcts.insert(s.percentile);
      if (pcts.empty()) pcts = {95, 99};
      pcts.insert(50);
      // More than three curves (a classifier sweep of ten variants): one line per curve at the
      // highest percentile an SLO bounds (else p95), each knee a marker on its curve instead of a
      // vertical line (their labels overlapped), at most 16 curves.
      const bool many = ls.curves.size() > 3;
      if (many) pcts = {*pcts.rbegin() == 50 && pcts.size() == 1 ? 95.0 : *pcts.rbegin()};
      if (many) c.title += " (" + pct_name(*pcts.begin()) + ", one line per variant)";
      if (ls.curves.size() > kMaxCurves)
        c.title += str(" (the first ", kMaxCurves, " of ", ls.curves.size(), " variants)");
      svg::Series knees, held;
      knees.name = "knee (highest rate meeting every SLO)";
      held.name = "every rate tried met the SLOs";
      knees.color = "#2ca02c", held.color = "#ffffff";
      knees.marker = held.marker = "diamond";
      size_t i = 0;
      for (const auto& cv : ls.curves) {
        if (i >= kMaxCurves) break;
        if (many)
          if (const Knee kn = cv.knee_of_steps(); kn.qps)
            for (const auto& st : cv.steps)
              if (auto it = st.percentiles.find(*pcts.begin()); st.offered_qps == *kn.qps && it != st.percentiles.end()) {
                (kn.reached ? knees : held).pts.push_back({*kn.qps, it->second});
                (kn.reached ? knees : held).tips.push_back(cv.name + ": " + kn.describe());
              }
        for (double p : pcts) {
          svg::Series s;
          s.name = cv.name + " " + pct_name(p);
          s.kind = svg::Series::Kind::line;
          s.color = palette(i);
          s.dashed = p == 50;
          for (const auto& st : cv.steps)
            if (auto it = st.percentiles.find(p); it != st.percentiles.end()) {
              s.pts.push_back({st.offered_qps, it->second});
              s.tips.push_back(str(fmt_num(st.offered_qps), " qps: ", pct_name(p), " ", fmt_num(it->second), " ms (n=",
                                   st.queries, ")\n", st.verdict.summary()));
              s.labels.push_back("");
            }
          if (!s.pts.empty()) c.series.push_back(s);
        }
        if (const Knee kn = cv.knee_of_steps(); kn.qps && !many)
          c.vlines.push_back({*kn.qps, kn.reached ? "knee " + fmt_num(*kn.qps) + " qps"
                                                  : "all met up to " + fmt_num(*kn.qps) + " qps (knee not reached)",
                              "#2ca02c"});
        ++i;
      }
      for (auto* k : {&knees, &held})
        if (!k->pts.empty()) c.series.push_back(*k);
      for (const Slo& s : ls.slos)
        if (s.metric == ls.metric) c.hlines.push_back({s.limit_ms, "SLO " + s.key + " " + fmt_num(s.limit_ms) + " ms", "#d62728"});
      out.push_back(c);
    }
  }
  return out;
}

// The knee of every stepped curve, in words.
std::vector<svg::Chart> scaling_charts(const ReportData& d) {
  std::vector<svg::Chart> out;
  // A line needs two core counts (threads x workers): with one, nothing was scaled.
  bool any = false;
  for (const auto& s : d.scaling)
    for (const auto& p : s.points) any = any || p.threads * p.workers != s.points.front().threads * s.points.front().workers;
  if (!any) return out;
  const bool decode = scaling_plots_decode(d.scaling);
  for (int which : {0, 1}) {
    svg::Chart c;
    c.title = which == 1   ? "Latency p95 against threads x workers"
              : decode ? "Decode rate (cibench bench) against threads x workers"
                       : "Throughput against threads x workers";
    c.x_title = "threads x workers";
    c.integer_x = true;
    c.y_title = which == 1 ? "latency p95 (ms)" : decode ? "decode (tokens/s)" : "throughput (queries/s)";
    size_t i = 0;
    for (const auto& s : d.scaling) {
      svg::Series sr;
      sr.name = s.name;
      sr.kind = svg::Series::Kind::line;
      sr.color = palette(i);
      svg::Series pts = sr;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (const auto& p : s.points) {
        const auto v = which == 0 ? p.throughput(decode) : p.p95_ms;
        if (!v) continue;
        const double x = static_cast<double>(p.threads * p.workers);
        sr.pts.push_back({x, *v});
        pts.pts.push_back({x, *v});
        pts.labels.push_back(std::to_string(p.threads) + "x" + std::to_string(p.workers));
      }
      c.series.push_back(sr);
      c.series.push_back(pts);
      ++i;
    }
    out.push_back(c);
  }
  return out;
}
// The knee of a series as a marker: filled when reached, hollow when every rate tried met the SLOs.
void add_knee(const ServingSeries& ss, const std::optional<double>& x, const std::optional<double>& y, svg::Series& knees,
              svg::Series& held) {
  const Knee kn = ss.knee();
  if (!x || !y || !kn.qps) return;
  svg::Series& k = kn.reached ? knees : held;
  k.pts.push_back({*x, *y});
  k.tips.push_back(ss.name + ": " + ss.curve.knee_text());
  k.labels.push_back(kn.reached ? "knee " + fmt_num(*kn.qps, 3) + " qps" : ">= " + fmt_num(*kn.qps, 3) + " qps");
}

std::pair<svg::Series, svg::Series> knee_series() {
  svg::Series knees, held;
  knees.name = "knee";
  held.name = "no knee: all rates met SLOs";
  knees.color = "#2ca02c", held.color = "#ffffff";
  knees.marker = held.marker = "diamond";
  return {knees, held};
}
// The segments of a timeline as bar series: queued, to the first token, decode (or, without a
// first token, service).
std::vector<svg::Series> timeline_bars(const Timeline& tl) {
  svg::Series q, f, dec, sv;
  q.name = "queued", f.name = "to first token", dec.name = "decode";
  sv.name = "service";
  q.color = "#bbbbbb", f.color = "#ff7f0e", dec.color = "#1f77b4", sv.color = "#9467bd";
  for (auto* s : {&q, &f, &dec, &sv}) s->kind = svg::Series::Kind::hbar;
  for (size_t i = 0; i < tl.requests.size(); ++i) {
    const TimelineRequest& r = tl.requests[i];
    const double row = static_cast<double>(i + 1);
    const std::string tip = str("request ", r.query_index + 1, r.ok ? "" : " (failed)", ": arrival ", fmt_num(r.scheduled_ms),
                                " ms, queued ", fmt_opt(r.queue_ms), " ms, TTFT ", fmt_opt(r.ttft_ms), " ms, latency ",
                                fmt_opt(r.latency_ms), " ms",
                                r.output_tokens ? str(", ", *r.output_tokens, " output tokens") : std::string());
    auto put = [&](svg::Series& s, const std::optional<std::pair<double, double>>& seg) {
      if (!seg) return;
      s.pts.push_back({seg->first, row});
      s.ends.push_back(seg->second);
      s.tips.push_back(tip);
    };
    put(q, r.queued());
    put(f, r.to_first_token());
    put(dec, r.decode());
    put(sv, r.service());
  }
  std::vector<svg::Series> out;
  for (auto* s : {&q, &f, &dec, &sv})
    if (!s->pts.empty()) out.push_back(*s);
  return out;
}

std::vector<svg::Chart> serving_charts(const ReportData& d) {
  std::vector<svg::Chart> out;
  const Serving& sv = d.serving;
  if (sv.empty()) return out;
  const bool many = sv.series.size() > kMaxCurves;
  // Throughput against latency, one chart per metric.
  for (const ServingMetric& m : sv.metrics) {
    svg::Chart c;
    c.title = m.title + " against " + (sv.x_achieved ? "achieved throughput" : "offered rate");
    if (many) c.title += str(" (the first ", kMaxCurves, " of ", sv.series.size(), " series)");
    c.x_title = sv.x_title();
    c.y_title = m.title + " (ms)";
    auto [knees, held] = knee_series();
    size_t i = 0;
    for (const auto& ss : sv.series) {
      if (i >= kMaxCurves) break;
      svg::Series s;
      s.name = ss.name;
      s.kind = svg::Series::Kind::line;
      s.color = palette(i++);
      svg::Series pts = s;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (const auto& st : ss.steps) {
        const auto x = st.x(sv.x_achieved), y = st.v.get(m.column);
        if (!x || !y) continue;
        s.pts.push_back({*x, *y});
        pts.pts.push_back({*x, *y});
        pts.tips.push_back(step_tip(ss, st) + "\n" + m.title + " " + fmt_num(*y) + " ms");
      }
      if (const ServingStep* k = ss.knee_step()) add_knee(ss, k->x(sv.x_achieved), k->v.get(m.column), knees, held);
      c.series.push_back(s);
      c.series.push_back(pts);
    }
    for (auto* k : {&knees, &held})
      if (!k->pts.empty()) c.series.push_back(*k);
    if (m.slo) c.hlines.push_back({m.slo->limit_ms, "SLO " + m.slo->key + " " + fmt_num(m.slo->limit_ms) + " ms", "#d62728"});
    out.push_back(c);
  }
  // Goodput against the offered rate, the offered rate itself as the ceiling.
  {
    svg::Chart c;
    c.title = "Goodput (requests meeting every SLO) against offered rate";
    c.x_title = "offered rate (requests/s)";
    c.y_title = "goodput (requests/s)";
    auto [knees, held] = knee_series();
    double hi = 0;
    size_t i = 0;
    for (const auto& ss : sv.series) {
      if (i >= kMaxCurves) break;
      svg::Series s;
      s.name = ss.name;
      s.kind = svg::Series::Kind::line;
      s.color = palette(i++);
      svg::Series pts = s;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (const auto& st : ss.steps) {
        hi = std::max(hi, st.offered_qps);
        if (!st.goodput_qps) continue;
        s.pts.push_back({st.offered_qps, *st.goodput_qps});
        pts.pts.push_back({st.offered_qps, *st.goodput_qps});
        pts.tips.push_back(step_tip(ss, st) + "\ngoodput " + fmt_num(*st.goodput_qps) + " req/s");
      }
      if (const ServingStep* k = ss.knee_step()) add_knee(ss, k->offered_qps, k->goodput_qps, knees, held);
      c.series.push_back(s);
      c.series.push_back(pts);
    }
    if (hi > 0) {
      svg::Series ideal;
      ideal.name = "goodput = offered";
      ideal.kind = svg::Series::Kind::line;
      ideal.color = "#999999";
      ideal.dashed = true;
      ideal.pts = {{0, 0}, {hi, hi}};
      c.series.insert(c.series.begin(), ideal);
    }
    for (auto* k : {&knees, &held})
      if (!k->pts.empty()) c.series.push_back(*k);
    out.push_back(c);
  }
  // Time per token against the mean batch occupancy (no chart when no step measured it: the notes
  // say why).
  bool occupancy = false;
  for (const auto& ss : sv.series)
    for (const auto& st : ss.steps) occupancy = occupancy || st.v.get("batch_occupancy_mean");
  if (occupancy) {
    const std::string m = sv.occupancy_metric, title = m == "tpot" ? "TPOT" : "ITL";
    svg::Chart c;
    c.title = title + " p50 and p99 against mean batch occupancy";
    c.x_title = "batch occupancy (mean sequences per engine step)";
    c.y_title = title + " (ms)";
    size_t i = 0;
    for (const auto& ss : sv.series) {
      if (i >= kMaxCurves) break;
      const std::string color = palette(i++);
      for (const char* p : {"p99", "p50"}) {
        svg::Series s;
        s.name = ss.name + " " + p;
        s.kind = svg::Series::Kind::line;
        s.color = color;
        s.dashed = std::string(p) == "p50";
        svg::Series pts = s;
        pts.kind = svg::Series::Kind::scatter;
        pts.in_legend = false;
        for (const auto& st : ss.steps) {
          const auto x = st.v.get("batch_occupancy_mean"), y = st.v.get(str(m, "_", p, "_ms"));
          if (!x || !y) continue;
          s.pts.push_back({*x, *y});
          pts.pts.push_back({*x, *y});
          pts.tips.push_back(step_tip(ss, st) + str("\n", title, " ", p, " ", fmt_num(*y), " ms at ", fmt_num(*x, 3),
                                                    " sequences per step"));
          pts.labels.push_back(std::string(p) == "p99" ? fmt_num(st.offered_qps, 3) + " qps" : "");
        }
        if (!s.pts.empty()) {
          c.series.push_back(s);
          c.series.push_back(pts);
        }
      }
    }
    out.push_back(c);
  }
  // One timeline per series.
  for (const Timeline& tl : d.timelines) {
    svg::Chart c;
    c.title = "Requests of " + tl.name + " (" + tl.why + ")";
    c.y_title = "request: " + tl.coverage();
    c.x_title = "time since the start of the step (ms)";
    c.integer_y = true;
    c.invert_y = true;
    c.height = std::max(260, 60 + 12 * static_cast<int>(tl.requests.size()) + 52);
    c.series = timeline_bars(tl);
    out.push_back(c);
  }
  return out;
}
std::vector<svg::Chart> speculative_charts(const ReportData& d) {
  std::vector<svg::Chart> out;
  const Speculative& sp = d.speculative;
  if (sp.empty()) return out;
  const bool many = sp.series.size() > kMaxCurves;
  const std::string first = many ? str(" (the first ", kMaxCurves, " of ", sp.series.size(), " series)") : "";
  // Speed-up against acceptance, a line per drafter through its k.
  {
    svg::Chart c;
    c.title = "Speed-up (mean TPOT of the off variant / this) against acceptance rate" + first;
    c.x_title = "acceptance rate (accepted / drafted)";
    c.y_title = "speed-up (x)";
    c.hlines.push_back({1.0, "1.0x = no gain", "#555555"});
    // Each point labelled with its k where the label has room (as the dashboard): every line's
    // ends first, then the points between, none within about a label of another.
    double x0 = 1, x1 = 0, y0 = 1, y1 = 1;
    for (size_t i = 0; i < sp.series.size() && i < kMaxCurves; ++i)
      for (const SpecPoint& p : sp.series[i].points)
        if (p.speedup && p.acceptance)
          x0 = std::min(x0, *p.acceptance), x1 = std::max(x1, *p.acceptance), y0 = std::min(y0, *p.speedup),
          y1 = std::max(y1, *p.speedup);
    const double wx = 0.09 * std::max(x1 - x0, 0.1), wy = 0.05 * std::max(y1 - y0, 0.1);
    const auto placed = sp.speedup_labels(kMaxCurves, wx, wy);
    const std::set<std::pair<size_t, size_t>> labelled(placed.begin(), placed.end());
    for (size_t i = 0; i < sp.series.size() && i < kMaxCurves; ++i) {
      const SpecSeries& s = sp.series[i];
      svg::Series line;
      line.name = s.name;
      line.kind = svg::Series::Kind::line;
      line.color = palette(i);
      svg::Series pts = line;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (const SpecPoint& p : s.points) {
        if (!p.speedup || !p.acceptance) continue;
        line.pts.push_back({*p.acceptance, *p.speedup});
        pts.pts.push_back({*p.acceptance, *p.speedup});
        pts.tips.push_back(s.name + " " + p.summary());
        pts.labels.push_back(labelled.count({i, static_cast<size_t>(&p - s.points.data())}) ? p.k_text() : "");
      }
      c.series.push_back(line);
      c.series.push_back(pts);
    }
    out.push_back(c);
  }
  // TPOT p95 against k, the off variants as dashed lines, the lowest marked.
  {
    svg::Chart c;
    c.title = "TPOT p95 against draft tokens k" + first;
    c.x_title = "draft tokens per verification (k)";
    c.y_title = "TPOT p95 (ms)";
    c.integer_x = true;
    for (const SpecBaseline& b : sp.baselines)
      if (b.tpot_p95_ms)
        c.hlines.push_back({*b.tpot_p95_ms,
                            str(sp.runs.size() > 1 ? str("run ", b.v.run_id, ": ") : std::string(), "off",
                                sp.several_builds ? " (" + b.build + ")" : std::string(), ": ", fmt_num(*b.tpot_p95_ms), " ms"),
                            "#555555"});
    for (size_t i = 0; i < sp.series.size() && i < kMaxCurves; ++i) {
      const SpecSeries& s = sp.series[i];
      svg::Series line;
      line.name = s.name;
      line.kind = svg::Series::Kind::line;
      line.color = palette(i);
      svg::Series pts = line;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (const SpecPoint& p : s.points) {
        if (!p.k || !p.tpot_p95_ms) continue;
        line.pts.push_back({static_cast<double>(*p.k), *p.tpot_p95_ms});
        pts.pts.push_back({static_cast<double>(*p.k), *p.tpot_p95_ms});
        pts.tips.push_back(s.name + " " + p.summary());
      }
      c.series.push_back(line);
      c.series.push_back(pts);
    }
    svg::Series best;
    best.name = "lowest TPOT p95";
    best.color = "#2ca02c";
    best.marker = "star";
    for (const SpecBest& b : sp.best) {
      const SpecPoint& p = sp.at(b);
      if (!p.k || b.series >= kMaxCurves) continue;
      best.pts.push_back({static_cast<double>(*p.k), *p.tpot_p95_ms});
      best.tips.push_back(b.text);  // the notes say it too
    }
    if (!best.pts.empty()) c.series.push_back(best);
    out.push_back(c);
  }
  // Acceptance by draft position at each drafter's best k.
  {
    svg::Chart c;
    c.title = "Acceptance by draft position at each drafter's lowest-TPOT-p95 k" + first;
    c.x_title = "draft position (1 = the first drafted token)";
    c.y_title = "acceptance rate";
    c.integer_x = true;
    for (size_t i = 0; i < sp.series.size() && i < kMaxCurves; ++i) {
      const SpecSeries& s = sp.series[i];
      const SpecPoint* p = s.best();
      if (!p || p->by_position.empty()) continue;
      svg::Series line;
      line.name = s.name + " " + p->k_text();
      line.kind = svg::Series::Kind::line;
      line.color = palette(i);
      svg::Series pts = line;
      pts.kind = svg::Series::Kind::scatter;
      pts.in_legend = false;
      for (size_t k = 0; k < p->by_position.size(); ++k) {
        if (!p->by_position[k]) continue;
        line.pts.push_back({static_cast<double>(k + 1), *p->by_position[k]});
        pts.pts.push_back({static_cast<double>(k + 1), *p->by_position[k]});
        pts.tips.push_back(str(line.name, ": position ", k + 1, " accepted ", fmt_num(*p->by_position[k], 3)));
      }
      c.series.push_back(line);
      c.series.push_back(pts);
    }
    if (!c.series.empty()) out.push_back(c);
  }
  return out;
}
}  // namespace cibench::reports
