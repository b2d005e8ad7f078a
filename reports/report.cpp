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
#include "reports/svg.h"

namespace cibench::reports {
namespace {

// 20 distinct line colours: the 16 curves a chart draws at most never share one (as cibench-gui's).
const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                          "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
const char* palette(size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string run_prefix(const ReportData& d, const Variant& v) {
  return d.runs.size() > 1 ? "run " + std::to_string(v.run_id) + ": " : "";
}

std::string display_name(const ReportData& d, const Variant& v) { return run_prefix(d, v) + v.short_name(); }

// Markdown table cell: no pipes or newlines.
// Stored text (a scenario's name and question, a model path, a host) in Markdown: HTML is shown,
// never interpreted (Markdown passes raw HTML through), emphasis, links and table cells are
// escaped, and a newline cannot start a new block.
std::string md(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '\n': o += "; "; break;
      case '\r': break;
      case '|': case '\\': case '`': case '*': case '[': case ']':  // ('_' inside words is literal)
        o += '\\';
        o += c;
        break;
      default: o += c;
    }
  }
  return o;
}

// Stored text shown as code (`...`): a backtick or newline would end the span or the line.
std::string md_code(const std::string& s) {
  std::string o = "`";
  for (char c : s) o += c == '`' ? '\'' : (c == '\n' || c == '\r') ? ' ' : c;
  return o + "`";
}

// A table as rows of cells, rendered to both formats so that they cannot drift apart.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_class;  // HTML only ("frontier", "below", "")
};

std::string html_table(const Table& t, const std::string& cls = "") {
  std::ostringstream os;
  os << "<table" << (cls.empty() ? "" : " class=\"" + cls + "\"") << ">\n<thead><tr>";
  for (const auto& h : t.head) os << "<th>" << xml_escape(h) << "</th>";
  os << "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string c = r < t.row_class.size() ? t.row_class[r] : "";
    os << "<tr" << (c.empty() ? "" : " class=\"" + c + "\"") << ">";
    for (const auto& cell : t.rows[r]) {
      // A multi-line cell (a configuration, one "key: value" per line) keeps its lines.
      std::string html = xml_escape(cell);
      for (size_t at = html.find('\n'); at != std::string::npos; at = html.find('\n', at + 4)) html.replace(at, 1, "<br>");
      os << "<td>" << html << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</tbody></table>\n";
  return os.str();
}

std::string md_table(const Table& t) {
  std::ostringstream os;
  os << "|";
  for (const auto& h : t.head) os << " " << md(h) << " |";
  os << "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& r : t.rows) {
    os << "|";
    for (const auto& cell : r) os << " " << md(cell) << " |";
    os << "\n";
  }
  return os.str();
}

// ---- the tables ---------------------------------------------------------------------------------

// "0.813 [0.788, 0.839]" from a column and its _lo/_hi interval; "n/a" when not measured.
std::string with_interval(const Variant& v, const std::string& col) {
  const auto x = v.get(col);
  if (!x) return "n/a";
  const auto lo = v.get(col + "_lo"), hi = v.get(col + "_hi");
  return fmt_num(*x) + (lo && hi ? " [" + fmt_num(*lo) + ", " + fmt_num(*hi) + "]" : "");
}

bool any_has(const ReportData& d, const std::string& col) {
  for (const Variant& v : d.variants)
    if (v.get(col)) return true;
  return false;
}

Table ranked_table(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  Table tb;
  tb.head = {"rank", "variant", t.x.title(), t.y.title(), "quality floors", "SLOs", "frontier"};
  // The scenario's SLO columns (beside the axes), then what was measured of throughput and quality.
  std::vector<std::pair<std::string, std::string>> cols;  // column, title
  std::set<std::string> seen{t.x.key, t.y.key};
  for (const auto& run_slos : d.slos)
    for (const Slo& s : run_slos)
      if (seen.insert(s.column()).second) cols.emplace_back(s.column(), find_axis(s.column()).title());
  for (const auto& [c, title] : std::vector<std::pair<std::string, std::string>>{
           {"achieved_qps", "queries/s"}, {"tokens_per_s", "tokens/s"}, {"tpot_p50_ms", "TPOT p50 (ms)"},
           {"tpot_p95_ms", "TPOT p95 (ms)"}, {"ttft_p50_ms", "TTFT p50 (ms)"}})
    if (any_has(d, c) && seen.insert(c).second) cols.emplace_back(c, title);
  const bool task = any_has(d, "task_accuracy"), delta = any_has(d, "accuracy_delta_lo");
  for (const auto& c : cols) tb.head.push_back(c.second);
  if (task) tb.head.push_back("task accuracy [95% CI]");
  if (delta) tb.head.push_back("accuracy delta [95% CI]");
  for (const char* h : {"peak RSS (MiB)", "valid", "note"}) tb.head.push_back(h);
  for (const auto& r : rank_variants(d)) {
    const auto rss = r.v.get("peak_rss_bytes");
    const auto valid = r.v.get("valid");
    std::vector<std::string> row{r.rank ? std::to_string(r.rank) : "-", display_name(d, r.v), fmt_opt(r.x), fmt_opt(r.y),
                                 r.floor_verdict, r.slo_verdict, r.on_frontier ? "yes" : ""};
    for (const auto& c : cols) {
      const auto x = r.v.get(c.first);
      row.push_back(fmt_opt(x));
    }
    if (task) row.push_back(with_interval(r.v, "task_accuracy"));
    if (delta) row.push_back(with_interval(r.v, "accuracy_delta"));
    row.push_back(rss ? fmt_num(*rss / (1024.0 * 1024.0), 4) : "n/a");
    row.push_back(!valid ? "n/a" : *valid != 0 ? "yes" : "no: " + r.v.text_of("validity_reasons"));
    row.push_back(r.note);
    tb.rows.push_back(row);
    tb.row_class.push_back(r.on_frontier ? "frontier" : r.floor_verdict.rfind("below", 0) == 0 ? "below" : "");
  }
  return tb;
}

Table frontier_table(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  Table tb;
  tb.head = {"variant", t.x.title(), t.y.title(), "configuration"};
  for (size_t i : t.frontier) {
    const auto& p = t.points[i];
    tb.rows.push_back({display_name(d, p.v), fmt_num(p.x), fmt_num(p.y), p.v.config()});
  }
  return tb;
}

Table slo_table(const ReportData& d) {
  Table tb;
  tb.head = {"run", "SLO", "limit (ms)", "met by", "missed by", "not measured"};
  for (size_t r = 0; r < d.runs.size(); ++r) {
    for (const Slo& s : d.slos[r]) {
      std::vector<std::string> met, missed, none;
      for (const auto& p : d.tradeoff.points) {
        if (p.v.run_id != d.runs[r].run_id) continue;
        const auto v = p.v.get(s.column());
        (!v ? none : *v <= s.limit_ms ? met : missed).push_back(p.v.short_name() + (v ? " (" + fmt_num(*v) + ")" : ""));
      }
      for (const auto& [v, why] : d.tradeoff.unplotted) {
        if (v.run_id != d.runs[r].run_id || v.status != "ok") continue;
        const auto x = v.get(s.column());
        (!x ? none : *x <= s.limit_ms ? met : missed).push_back(v.short_name() + (x ? " (" + fmt_num(*x) + ")" : ""));
      }
      auto join = [](const std::vector<std::string>& v) {
        std::string o;
        for (const auto& s2 : v) o += (o.empty() ? "" : ", ") + s2;
        return o.empty() ? std::string("-") : o;
      };
      tb.rows.push_back({std::to_string(d.runs[r].run_id), s.key, fmt_num(s.limit_ms), join(met), join(missed), join(none)});
    }
  }
  return tb;
}

// Result cache: every variant run with the cache on, beside its twin with the cache off (same
// run, format, recipe, layout, shape, batch and offered rate), with the traffic's duplicate rate
// (measured and expected) next to the hit rate, so a cache that only helps because the traffic
// repeats itself is seen as such; "not run" where the cache-off twin stopped at a lower stepped
// rate. Empty when no run had a cache variant.
Table cache_table(const ReportData& d) {
  std::vector<Variant> all = d.variants;
  // Names carry the offered rate whenever a run has several (stepped load) so the rows stay apart.
  std::set<std::pair<int64_t, double>> rates;
  for (const Variant& v : all)
    if (auto q = v.get("offered_qps")) rates.insert({v.run_id, *q});
  auto name_of = [&](const Variant& v) {
    std::string n = v.short_name(false);
    const auto q = v.get("offered_qps");
    size_t per_run = 0;
    for (const auto& r : rates) per_run += r.first == v.run_id;
    if (q && per_run > 1) n += " @" + fmt_num(*q, 3) + "qps";
    const size_t at = n.find(" cache");
    if (at != std::string::npos) n.erase(at, 6);
    return n;
  };
  auto key = [&](const Variant& v) { return std::to_string(v.run_id) + "|" + name_of(v); };
  auto cached = [](const Variant& v) {
    const auto c = v.get("cache_enabled");
    return c && *c > 0;
  };
  std::sort(all.begin(), all.end(), [](const Variant& a, const Variant& b) {
    return std::tie(a.run_id, a.variant_index, a.step_index) < std::tie(b.run_id, b.variant_index, b.step_index);
  });
  Table tb;
  tb.head = {"variant", "traffic", "duplicate rate (measured / expected)", "cache hit rate", "cache KiB",
             "p50 ms: off / on", "p99 ms: off / on", "queries/s: off / on"};
  for (const Variant& on : all) {
    if (on.status != "ok" || !cached(on)) continue;
    const Variant* off = nullptr;
    for (const Variant& o : all)
      if (o.status == "ok" && !cached(o) && key(o) == key(on)) off = &o;
    auto pair = [&](const char* col) {
      return (off ? fmt_opt(off->get(col)) : std::string("not run")) + " / " + fmt_opt(on.get(col));
    };
    const auto bytes = on.get("cache_peak_bytes");
    tb.rows.push_back({run_prefix(d, on) + name_of(on), on.text_of("traffic").empty() ? "n/a" : on.text_of("traffic"),
                       fmt_opt(on.get("duplicate_rate")) + " / " + fmt_opt(on.get("expected_duplicate_rate")),
                       fmt_opt(on.get("cache_hit_rate")), bytes ? fmt_num(*bytes / 1024.0) : "n/a",
                       pair("latency_p50_ms"), pair("latency_p99_ms"), pair("achieved_qps")});
  }
  return tb;
}

const char* kCacheNote =
    "Each variant with the result cache on beside the same variant with it off. A hit rate close to "
    "the traffic's duplicate rate means the gain comes from repeated inputs: with fewer repeats in "
    "real traffic, expect the cache-off figures.";

// The counters that were measured for some variant, one column each (software counters
// included); a cell is "n/a" where that variant lacks it (the reason is in counter_gap_lines).
Table counters_table(const ReportData& d) {
  std::vector<std::string> names = counter_names();
  names.insert(names.end(), software_counter_names().begin(), software_counter_names().end());
  std::vector<std::string> measured;
  for (const auto& n : names)
    for (const auto& c : d.counters)
      if (auto it = c.values.find(n); it != c.values.end() && it->second.value) {
        measured.push_back(n);
        break;
      }
  Table tb;
  if (measured.empty()) return tb;
  tb.head = {"variant", "mode"};
  for (const auto& n : measured) tb.head.push_back(counter_title(n));
  for (const auto& c : d.counters) {
    std::vector<std::string> row{display_name(d, c.v), c.mode.empty() ? "-" : c.mode};
    for (const auto& n : measured) {
      auto it = c.values.find(n);
      row.push_back(it != c.values.end() && it->second.value ? fmt_num(*it->second.value) : "n/a");
    }
    tb.rows.push_back(row);
  }
  return tb;
}

// Unavailable counters, one line per distinct reason naming the counters that share it and the
// variants each lacks it for (query.h's counter_gaps, as cibench-gui shows them).
std::vector<std::string> counter_gap_lines(const ReportData& d) {
  std::vector<std::string> out;
  for (const CounterGap& g : counter_gaps(d.counters, d.variants)) out.push_back(g.text());
  return out;
}

std::string pct_text(const std::optional<double>& v) {
  if (!v) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", *v);
  return buf;
}

std::string with_n(const std::optional<double>& v, const std::optional<int64_t>& n) {
  return fmt_opt(v) + (n ? " (n=" + std::to_string(*n) + ")" : "");
}

Table compare_table(const Comparison& c) {
  Table tb;
  tb.head = {"variant", "metric", "run " + std::to_string(c.a.run_id) + " (A)", "run " + std::to_string(c.b.run_id) + " (B)",
             "B - A", "change", "95% interval", "significant"};
  for (const auto& r : c.rows) {
    std::string ci = r.ci_low ? "[" + fmt_num(*r.ci_low) + ", " + fmt_num(*r.ci_high) + "]" : r.note;
    std::string sig = r.ci_low ? (r.significant() ? "yes" : "no") : "-";
    if (!r.warning.empty()) sig += " (!) " + r.warning;
    tb.rows.push_back({compact_label(r.variant), r.metric, with_n(r.a, r.n_a), with_n(r.b, r.n_b), fmt_opt(r.diff),
                       pct_text(r.change_pct), ci, sig});
    tb.row_class.push_back(r.warning.empty() ? "" : "warn");
  }
  return tb;
}

// The variants left out of the compare, by name.
std::vector<std::string> compare_notes(const Comparison& c) {
  std::vector<std::string> out;
  for (const auto& f : c.failed) out.push_back("failed: " + f);
  for (const auto& u : c.only_in_a) out.push_back("only in A (run " + std::to_string(c.a.run_id) + "): " + u);
  for (const auto& u : c.only_in_b) out.push_back("only in B (run " + std::to_string(c.b.run_id) + "): " + u);
  return out;
}

Table provenance_table(const RunInfo& run, const std::vector<std::pair<std::string, std::string>>& prov) {
  Table tb;
  tb.head = {"field", "value"};
  (void)run;
  for (const auto& [k, v] : prov) tb.rows.push_back({k, v});
  return tb;
}

// ---- the charts ---------------------------------------------------------------------------------

svg::Chart tradeoff_chart(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  svg::Chart c;
  c.title = "Trade-off: " + t.y.label + " against " + t.x.label;
  c.x_title = t.x.title();
  c.y_title = t.y.title();
  std::map<std::string, size_t> at;
  for (const auto& p : t.points) {
    const std::string marker = sparsity_marker(p.v.sparsity);
    const std::string sp = p.v.sparsity && *p.v.sparsity > 0 ? " sparsity " + fmt_num(*p.v.sparsity, 3) : "";
    const std::string key = p.meets_floor ? p.v.format + sp : "below floor" + sp;
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, c.series.size()).first;
      svg::Series s;
      s.name = key;
      s.color = p.meets_floor ? format_color(p.v.format) : kBelowFloorColor;
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

// The most curves a chart draws (more cannot be told apart, nor listed in its legend).
constexpr size_t kMaxCurves = 16;

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

std::string metric_title(const std::string& m) {
  if (m == "ttft") return "time to first token";
  if (m == "tpot") return "time per output token";
  if (m == "queue") return "queue wait";
  if (m == "service") return "service time";
  return "latency";
}

std::string pct_name(double p) { return p == 100 ? "max" : "p" + fmt_num(p, 3); }

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
std::vector<std::string> knee_lines(const ReportData& d) {
  std::vector<std::string> out;
  for (size_t r = 0; r < d.sweeps.size(); ++r) {
    const LoadSweep& ls = d.sweeps[r];
    if (!ls.has_steps()) continue;
    for (const auto& cv : ls.curves) {
      std::string line = "Run " + std::to_string(d.runs[r].run_id) + ", " + cv.name + ": " + cv.knee_text();
      if (cv.knee_qps && cv.knee() && *cv.knee_qps != *cv.knee())
        line += str(" (the run stored ", fmt_num(*cv.knee_qps), " qps)");
      out.push_back(line);
    }
  }
  return out;
}

// "Every variant ran on 2 cores (threads x workers: 1x2, 2x1): no scaling to chart." when the
// variants measured use one core count only; "" otherwise.
std::string single_core_count(const ReportData& d) {
  std::set<int64_t> cores;
  std::set<std::string> layouts;
  for (const auto& s : d.scaling)
    for (const auto& p : s.points) {
      cores.insert(p.threads * p.workers);
      layouts.insert(std::to_string(p.threads) + "x" + std::to_string(p.workers));
    }
  if (cores.size() != 1) return "";
  std::string l;
  for (const auto& x : layouts) l += (l.empty() ? "" : ", ") + x;
  return str("Every variant ran on ", *cores.begin(), " core", *cores.begin() == 1 ? "" : "s", " (threads x workers: ", l,
             "): no scaling to chart.");
}

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

// ---- serving ------------------------------------------------------------------------------------

std::string ms_cell(const std::optional<double>& v) { return v ? fmt_num(*v, 4) : "n/a"; }

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

std::string step_tip(const ServingSeries& ss, const ServingStep& st) {
  return str(ss.name, " @", fmt_num(st.offered_qps, 3), " qps offered, ", fmt_opt(st.achieved_qps), " req/s achieved\n",
             st.verdict.summary());
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

Table serving_table(const ReportData& d) {
  const Serving& sv = d.serving;
  Table tb;
  if (sv.empty()) return tb;
  tb.head = {"series", "offered req/s", "achieved req/s"};
  for (const auto& m : sv.metrics) tb.head.push_back(m.title + " ms");
  for (const char* h : {"ITL p99 ms", "goodput req/s", "SLO attainment", "batch occupancy mean / max",
                        "KV occupancy mean / max", "preemptions", "SLOs"})
    tb.head.push_back(h);
  for (const auto& ss : sv.series) {
    const ServingStep* knee = ss.knee_step();
    for (const auto& st : ss.steps) {
      std::vector<std::string> row{ss.name + (&st == knee ? (ss.knee().reached ? " (knee)" : " (every rate met)") : ""),
                                   fmt_num(st.offered_qps, 4), ms_cell(st.achieved_qps)};
      for (const auto& m : sv.metrics) row.push_back(ms_cell(st.v.get(m.column)));
      row.push_back(ms_cell(st.v.get("itl_p99_ms")));
      row.push_back(ms_cell(st.goodput_qps));
      row.push_back(st.slo_attainment ? fmt_num(100 * *st.slo_attainment, 4) + " %" : "n/a");
      const auto bm = st.v.get("batch_occupancy_mean"), bx = st.v.get("batch_occupancy_max");
      row.push_back(bm || bx ? fmt_opt(bm, 3) + " / " + fmt_opt(bx, 3) : "n/a");
      const auto km = st.v.get("kv_occupancy_mean"), kx = st.v.get("kv_occupancy_max");
      row.push_back(km || kx ? fmt_opt(km, 3) + " / " + fmt_opt(kx, 3) : "n/a");
      row.push_back(fmt_opt(st.v.get("preemptions"), 6));
      row.push_back(st.verdict.summary());
      tb.rows.push_back(row);
      tb.row_class.push_back(&st == knee ? "frontier" : st.verdict.met && !*st.verdict.met ? "below" : "");
    }
  }
  return tb;
}

Table timeline_table(const Timeline& tl) {
  Table tb;
  tb.head = {"#", "request", "arrival ms", "queued ms", "TTFT ms", "decode ms", "latency ms", "output tokens"};
  for (size_t i = 0; i < tl.requests.size(); ++i) {
    const TimelineRequest& r = tl.requests[i];
    const auto dec = r.decode();
    tb.rows.push_back({std::to_string(i + 1), std::to_string(r.query_index + 1) + (r.ok ? "" : " (failed)"),
                       fmt_num(r.scheduled_ms, 6), ms_cell(r.queue_ms), ms_cell(r.ttft_ms),
                       dec ? fmt_num(dec->second - dec->first, 4) : "n/a", ms_cell(r.latency_ms),
                       r.output_tokens ? std::to_string(*r.output_tokens) : "n/a"});
  }
  return tb;
}

const char* kServingNote =
    "One series per variant across its offered rates (a decoder under open-loop arrivals). Knee = the highest "
    "offered rate at which this step and every lower one met every SLO, as in the verdicts. n/a = not measured "
    "(the reasons follow the table).";

}  // namespace

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

// ---- speculative decoding -------------------------------------------------------------------

namespace {

// One run's table of the speculative section, with the footnotes its "—" cells point to.
struct SpecTable {
  int64_t run = 0;
  Table t;
  std::vector<std::string> footnotes;  // "[1] spec_speedup: REASON"
};

// The speculative rows and off baselines of each run as tables: one row per variant, the lowest
// TPOT p95 of each build marked; a value not measured is "—" with a footnote giving the reason.
std::vector<SpecTable> speculative_tables(const ReportData& d) {
  const Speculative& sp = d.speculative;
  std::vector<SpecTable> out;
  if (sp.empty()) return out;
  for (int64_t run : sp.runs) {
    SpecTable st;
    st.run = run;
    st.t.head = {"variant", "drafter", "k", "acceptance", "mean accepted length", "acceptance by position",
                 "draft share", "verify share", "TTFT p50 ms", "TPOT p50 ms", "TPOT p95 ms", "speed-up (mean)",
                 "speed-up (p95)"};
    std::map<std::string, size_t> notes;  // reason -> footnote number
    auto dash = [&](const std::string& column, const std::string& reason) {
      const std::string why = reason.empty() ? std::string("not measured (no reason recorded)") : reason;
      const std::string r = column.empty() ? why : column + ": " + why;
      auto it = notes.find(r);
      if (it == notes.end()) {
        it = notes.emplace(r, notes.size() + 1).first;
        st.footnotes.push_back(str("[", it->second, "] ", r));
      }
      return str("— [", it->second, "]");
    };
    auto cell = [&](const std::optional<double>& v, const std::string& column, const std::string& reason, int digits = 4) {
      return v ? fmt_num(*v, digits) : dash(column, reason);
    };
    auto share = [&](const std::optional<double>& v, const std::string& column, const std::string& reason) {
      return v ? fmt_num(100 * *v, 3) + " %" : dash(column, reason);
    };
    auto ms = [&](const std::optional<double>& v, const std::string& column) {
      return v ? fmt_num(*v, 4) : dash(column, "not measured");
    };
    // The off rows of the run first, then each build's drafters by k (as Db::speculative orders them).
    for (const SpecBaseline& b : sp.baselines) {
      if (b.v.run_id != run) continue;
      const std::string off = b.v.text_of("spec_reason").empty() ? "speculative off" : b.v.text_of("spec_reason");
      const std::string none = dash("", off);
      st.t.rows.push_back({compact_label(b.v.label), "off", none, none, none, none, none, none,
                           ms(b.ttft_p50_ms, "TTFT p50"), ms(b.tpot_p50_ms, "TPOT p50"), ms(b.tpot_p95_ms, "TPOT p95"),
                           "baseline", "baseline"});
      st.t.row_class.push_back("");
    }
    for (size_t si = 0; si < sp.series.size(); ++si) {
      const SpecSeries& s = sp.series[si];
      if (s.run_id != run) continue;
      for (size_t pi = 0; pi < s.points.size(); ++pi) {
        const SpecPoint& p = s.points[pi];
        const bool best = std::any_of(sp.best.begin(), sp.best.end(),
                                      [&](const SpecBest& b) { return b.series == si && b.point == pi; });
        std::string by;
        for (const auto& r : p.by_position) by += (by.empty() ? "" : ", ") + (r ? fmt_num(*r, 2) : std::string("—"));
        if (p.by_position.empty()) by = dash("acceptance", p.reason);
        st.t.rows.push_back({compact_label(p.v.label) + (best ? " (lowest TPOT p95)" : ""), drafter_name(p.drafter),
                             p.k ? std::to_string(*p.k) : dash("draft_tokens", "not stored"),
                             cell(p.acceptance, "acceptance", p.reason, 3),
                             cell(p.mean_accepted_length, "acceptance", p.reason, 3), by,
                             share(p.draft_share, "time shares", p.reason), share(p.verify_share, "time shares", p.reason),
                             ms(p.ttft_p50_ms, "TTFT p50"), ms(p.tpot_p50_ms, "TPOT p50"), ms(p.tpot_p95_ms, "TPOT p95"),
                             p.speedup ? fmt_num(*p.speedup, 3) + "x" : dash("speed-up", p.speedup_reason),
                             p.speedup_p95 ? fmt_num(*p.speedup_p95, 3) + "x" : dash("speed-up", p.speedup_reason)});
        st.t.row_class.push_back(best ? "frontier" : "");
      }
    }
    if (!st.t.rows.empty()) out.push_back(std::move(st));
  }
  return out;
}

const char* kSpeculativeNote =
    "One row per variant: the drafter proposes k tokens, the target verifies them in one forward. Acceptance = "
    "accepted / drafted draft tokens; mean accepted length = 1 + accepted / verifications with drafts; acceptance by "
    "position: position 1 first (— where nothing was drafted there); draft and verify share = the parts of the "
    "generation time spent drafting and verifying. Speed-up = the off variant's (same build, same run) mean (p95) "
    "TPOT / this variant's. — [n] = not measured, the reason in note n under the table; never 0. The lowest TPOT p95 "
    "of each build is marked.";

}  // namespace

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

std::vector<std::string> speculative_notes(const ReportData& d) { return d.speculative.notes(); }

std::vector<std::string> serving_notes(const ReportData& d) {
  std::vector<std::string> out = d.serving.notes();
  for (const Timeline& tl : d.timelines)
    for (const auto& n : tl.notes()) out.push_back(n);
  return out;
}

namespace {

const char* kCss = R"CSS(
body { font-family: sans-serif; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
td { max-width: 360px; }
th { background: #f2f2f2; }
tr.frontier td { background: #eef6ee; font-weight: bold; }
tr.below td { color: #888; }
.note { color: #555; font-size: 12px; }
.warning { color: #a00; font-weight: bold; }
tr.warn td { background: #fff4e5; }
details { margin: 6px 0; } pre { background: #f7f7f7; padding: 8px; font-size: 11px; overflow-x: auto; }
)CSS";

}  // namespace

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

namespace {

// The verdict lines shared by both documents: every quality floor of every run with how many
// variants meet it, a floor set by the user, and the knee of every stepped curve.
std::vector<std::string> verdict_lines(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  std::vector<std::string> out;
  for (size_t r = 0; r < d.runs.size(); ++r) {
    const int64_t id = d.runs[r].run_id;
    const std::string who = d.runs.size() > 1 ? str("run ", id, ": ") : "";
    if (d.floors[r].empty()) out.push_back(who + "no quality floor in the scenario.");
    for (const QualityFloor& f : d.floors[r]) {
      size_t judged = 0, met = 0, unmeasured = 0;
      for (const auto& p : t.points) {
        if (p.v.run_id != id) continue;
        if (std::find(p.floors.unmeasured.begin(), p.floors.unmeasured.end(), f.key) != p.floors.unmeasured.end()) {
          ++unmeasured;
          continue;
        }
        ++judged;
        bool broken = false;
        for (const auto& b : p.floors.broken) broken = broken || b.find("(" + f.key + " =") != std::string::npos;
        met += !broken;
      }
      std::string line = str(who, "quality floor ", f.describe(), ": ", met, " of ", judged, " ",
                             t.per_step ? "steps" : "variants", " meet it");
      if (unmeasured) line += str(" (", unmeasured, " not measured)");
      out.push_back(line + ".");
    }
  }
  if (t.floor && t.floor_source == "set by the user")
    out.push_back(str("floor set by the user on ", t.y.title(), ": ", t.y.higher_is_better ? "at least " : "at most ",
                      fmt_num(*t.floor), "."));
  for (const auto& k : knee_lines(d)) out.push_back(k + ".");
  return out;
}

// The task accuracy and its interval per variant, where stored (classifiers).
Table accuracy_table(const ReportData& d) {
  Table tb;
  if (!any_has(d, "task_accuracy")) return tb;
  tb.head = {"variant", "task accuracy [95% CI]", "reference accuracy", "delta vs reference [95% CI]", "macro F1",
             "top-1 agreement", "quality verdict"};
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const Variant& v : d.variants) {
    if (!v.get("task_accuracy") || !seen.insert({v.run_id, v.variant_index}).second) continue;
    tb.rows.push_back({run_prefix(d, v) + v.short_name(false), with_interval(v, "task_accuracy"),
                       fmt_opt(v.get("ref_task_accuracy")), with_interval(v, "accuracy_delta"), fmt_opt(v.get("macro_f1")),
                       fmt_opt(v.get("top1_agreement")), v.text_of("quality_verdict").empty() ? "n/a" : v.text_of("quality_verdict")});
  }
  return tb;
}

// "mean / p50 / p99" of a metric in ms, "(!)" when p99 is the sample maximum; "" when not measured.
// `count`: the values behind the percentiles (default: the requests).
std::string mean_p50_p99(const Variant& v, const std::string& m, std::optional<double> count = std::nullopt) {
  const auto mean = v.get(m + "_mean_ms"), p50 = v.get(m + "_p50_ms"), p99 = v.get(m + "_p99_ms");
  if (!mean && !p50 && !p99) return "";
  const auto n = count ? count : v.get("queries");
  const bool at_max = n && *n > 0 && percentile_is_max(99, static_cast<size_t>(*n));
  return fmt_opt(mean, 3) + " / " + fmt_opt(p50, 3) + " / " + fmt_opt(p99, 3) + (at_max ? " (!)" : "");
}

std::string pm(const Variant& v, const std::string& col) {
  const auto x = v.get(col);
  if (!x) return "";
  const auto sd = v.get(col + "_sd");
  return fmt_num(*x, 4) + (sd ? " ± " + fmt_num(*sd, 2) : "");
}

// One pasteable row per configuration (per step of a stepped run), in the spirit of llama-bench
// (prefill and decode t/s ± stddev) and vLLM's serving summary (request and output-token
// throughput, TTFT / TPOT / end-to-end mean, median and p99, goodput), with LoadGen's VALID /
// INVALID and the achieved against the target rate. Only the columns some variant measured.
Table lead_table(const ReportData& d) {
  std::vector<const Variant*> rows;
  for (const Variant& v : d.variants)
    if (v.status == "ok") rows.push_back(&v);
  struct Col {
    std::string head;
    std::function<std::string(const Variant&)> cell;
  };
  auto slos_of = [&](int64_t run_id) -> const std::vector<Slo>& {
    static const std::vector<Slo> none;
    for (size_t i = 0; i < d.runs.size(); ++i)
      if (d.runs[i].run_id == run_id) return d.slos[i];
    return none;
  };
  std::vector<Col> cols{
      {"configuration", [&](const Variant& v) { return display_name(d, v); }},
      {"n", [](const Variant& v) { return v.get("queries") ? fmt_num(*v.get("queries"), 8) : ""; }},
      {"prefill t/s", [](const Variant& v) { return pm(v, "prefill_tokens_per_s"); }},
      {"decode t/s", [](const Variant& v) { return pm(v, "decode_tokens_per_s"); }},
      {"req/s (target)", [](const Variant& v) {
         const auto a = v.get("achieved_qps"), o = v.get("offered_qps");
         if (!a) return std::string();
         return fmt_num(*a, 4) + (o ? " (" + fmt_num(*o, 4) + ")" : "");
       }},
      {"output tok/s", [](const Variant& v) { return v.get("tokens_per_s") ? fmt_num(*v.get("tokens_per_s"), 4) : ""; }},
      {"TTFT ms mean / p50 / p99", [](const Variant& v) { return mean_p50_p99(v, "ttft"); }},
      {"TPOT ms mean / p50 / p99", [](const Variant& v) { return mean_p50_p99(v, "tpot"); }},
      {"ITL ms mean / p50 / p99 (n)", [](const Variant& v) {
         const auto n = v.get("itl_count");
         if (!n || *n <= 0) return std::string();
         return mean_p50_p99(v, "itl", n) + " (n=" + fmt_num(*n, 12) + ")";
       }},
      {"E2E ms mean / p50 / p99", [](const Variant& v) { return mean_p50_p99(v, "latency"); }},
      {"goodput req/s", [&](const Variant& v) {
         auto it = d.goodput.find(v.variant_id);
         return it == d.goodput.end() ? std::string() : fmt_num(it->second, 4);
       }},
      {"SLO attainment", [&](const Variant& v) {
         auto it = d.slo_attainment.find(v.variant_id);
         return it == d.slo_attainment.end() ? std::string() : fmt_num(100 * it->second, 4) + " %";
       }},
      {"result", [&](const Variant& v) {
         std::vector<std::string> why;
         const auto valid = v.get("valid");
         if (valid && *valid == 0) why.push_back(v.text_of("validity_reasons").empty() ? "invalid run" : v.text_of("validity_reasons"));
         const SloVerdict sv = judge_slos(slos_of(v.run_id), [&](const Slo& s) { return v.get(s.column()); });
         if (sv.met && !*sv.met) why.push_back("SLO " + sv.summary());
         if (!valid && !sv.met) return std::string();
         std::string r = why.empty() ? "VALID" : "INVALID: ";
         for (size_t i = 0; i < why.size(); ++i) r += (i ? "; " : "") + why[i];
         return r;
       }},
  };
  Table tb;
  std::vector<size_t> keep;
  for (size_t c = 0; c < cols.size(); ++c)
    for (const Variant* v : rows)
      if (!cols[c].cell(*v).empty()) {
        keep.push_back(c);
        break;
      }
  for (size_t c : keep) tb.head.push_back(cols[c].head);
  for (const Variant* v : rows) {
    std::vector<std::string> row;
    for (size_t c : keep) {
      const std::string x = cols[c].cell(*v);
      row.push_back(x.empty() ? "n/a" : x);
    }
    tb.rows.push_back(row);
  }
  return tb;
}

const char* kLeadNote =
    "n = completed requests; mean / p50 / p99 are nearest-rank over them, (!) = the p99 is the sample "
    "maximum (n < 100). ITL = every gap between consecutive output tokens of a request, n gaps. "
    "goodput = completed requests meeting every SLO on their own values per second, SLO attainment = their "
    "share of the completed requests (every request kept). VALID = minimum duration and queries met and every SLO met; INVALID says why.";

std::string html_list(const std::vector<std::string>& lines, const std::string& cls = "") {
  if (lines.empty()) return "";
  std::string s = "<ul" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + ">";
  for (const auto& l : lines) s += "<li>" + xml_escape(l) + "</li>";
  return s + "</ul>\n";
}

const char* kCountersNote =
    "Counters a machine cannot count are stored as unavailable with the reason, never as zero; the "
    "table shows what was measured, the reasons follow, one line each.";

}  // namespace

std::string render_html(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  std::ostringstream os;
  std::string ids;
  for (const auto& r : d.runs) ids += (ids.empty() ? "" : ", ") + std::to_string(r.run_id);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<title>cibench report: run " << xml_escape(ids) << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n";
  os << "<h1>cibench report: run" << (d.runs.size() > 1 ? "s " : " ") << xml_escape(ids) << "</h1>\n";
  os << "<p class=\"note\">Generated " << utc_now()
     << " by <code>cibench report</code> from the results database; every number below is a stored "
        "measurement or computed from stored measurements by the same queries as cibench-gui. "
        "n/a = not measured.</p>\n";
  for (const auto& r : d.runs) {
    os << "<p><b>Run " << r.run_id << "</b> — "
       << (r.kind == "scenario" ? "scenario <b>" + xml_escape(r.scenario_name) + "</b>"
                                : "<code>" + xml_escape(r.origin()) + "</code>")
       << ", "
       << xml_escape(r.status) << ", started " << xml_escape(r.started_utc) << " on " << xml_escape(r.hostname)
       << " (" << xml_escape(r.cpu_model) << "), model <code>" << xml_escape(r.model_spec) << "</code>.";
    if (!r.question.empty()) os << "<br>Question: <i>" << xml_escape(r.question) << "</i>";
    if (!r.error.empty()) os << "<br>Error: " << xml_escape(r.error);
    os << "</p>\n";
  }
  if (d.comparison)
    for (const auto& w : d.comparison->warnings) os << "<p class=\"warning\">WARNING (compare): " << xml_escape(w) << "</p>\n";
  os << "<h2>Summary</h2>\n<p class=\"note\">" << kLeadNote << "</p>\n" << html_table(lead_table(d), "lead");

  os << "<h2>Verdicts</h2>\n" << html_list(verdict_lines(d)) << html_table(slo_table(d));
  if (const Table at = accuracy_table(d); !at.rows.empty()) os << "<h3>Task accuracy</h3>\n" << html_table(at, "accuracy");

  os << "<h2>Trade-off and Pareto frontier</h2>\n" << svg::render(tradeoff_chart(d)) << "\n";
  os << "<p class=\"note\">Colour = weight format, marker = sparsity, grey = below a quality floor; "
        "the dashed line joins the Pareto frontier of the variants meeting the floors "
        "(no other variant is better on both axes). Hover a point for its configuration.</p>\n";
  os << "<h3>Frontier</h3>\n"
     << (t.frontier.empty() ? "<p>No variant meets the floor with both values measured.</p>\n"
                            : html_table(frontier_table(d), "frontier"));

  os << "<h2>Variants ranked</h2>\n" << html_table(ranked_table(d), "ranked");

  os << "<h2>Latency</h2>\n" << svg::render(cdf_chart(d)) << "\n";
  for (const auto& c : load_charts(d)) os << svg::render(c) << "\n";
  if (!d.serving.empty()) {
    os << "<h2>Serving</h2>\n<p class=\"note\">" << kServingNote << "</p>\n";
    for (const auto& c : serving_charts(d)) os << svg::render(c) << "\n";
    os << html_table(serving_table(d), "serving") << html_list(serving_notes(d), "note");
    for (const Timeline& tl : d.timelines)
      os << "<details><summary>Requests of " << xml_escape(tl.name) << " (" << xml_escape(tl.why) << "): "
         << xml_escape(tl.coverage()) << "</summary>\n" << html_table(timeline_table(tl), "timeline") << "</details>\n";
  }
  if (!d.speculative.empty()) {
    os << "<h2>Speculative decoding</h2>\n<p class=\"note\">" << xml_escape(kSpeculativeNote) << "</p>\n";
    for (const auto& c : speculative_charts(d)) os << svg::render(c) << "\n";
    os << html_list(speculative_notes(d), "note");
    for (const SpecTable& st : speculative_tables(d)) {
      if (d.runs.size() > 1) os << "<h3>Run " << st.run << "</h3>\n";
      os << html_table(st.t, "speculative") << html_list(st.footnotes, "note");
    }
  }
  const auto sc = scaling_charts(d);
  if (!sc.empty()) {
    os << "<h2>Scaling</h2>\n";
    for (const auto& c : sc) os << svg::render(c) << "\n";
  } else if (const std::string one = single_core_count(d); !one.empty()) {
    os << "<h2>Scaling</h2>\n<p class=\"note\">" << xml_escape(one) << "</p>\n";
  }
  if (const Table ct = cache_table(d); !ct.rows.empty())
    os << "<h2>Result cache</h2>\n<p class=\"note\">" << kCacheNote << "</p>\n" << html_table(ct, "cache");
  if (d.comparison) {
    const Comparison& c = *d.comparison;
    os << "<h2>Compare: run " << c.a.run_id << " (A) and run " << c.b.run_id << " (B)</h2>\n";
    for (const auto& w : c.warnings) os << "<p class=\"warning\">WARNING: " << xml_escape(w) << "</p>\n";
    os << "<p class=\"note\">Differences B - A with " << static_cast<int>(c.confidence * 100)
       << "% percentile-bootstrap intervals, as <code>cibench compare " << c.a.run_id << " " << c.b.run_id
       << "</code> computes them (" << c.resamples << " resamples, seed " << c.seed
       << "); n = requests behind a percentile; (!) = the percentile is the sample maximum.</p>\n"
       << html_table(compare_table(c), "compare") << html_list(compare_notes(c), "note");
  }
  os << "<h2>Counters</h2>\n<p class=\"note\">" << kCountersNote << "</p>\n";
  if (const Table ct = counters_table(d); !ct.rows.empty()) os << html_table(ct, "counters");
  os << html_list(counter_gap_lines(d), "note");
  os << "<h2>Provenance</h2>\n";
  for (size_t i = 0; i < d.runs.size(); ++i)
    os << "<details" << (i == 0 ? " open" : "") << "><summary>Run " << d.runs[i].run_id << "</summary>\n"
       << html_table(provenance_table(d.runs[i], d.provenance[i])) << "</details>\n";
  os << "</body>\n</html>\n";
  return os.str();
}

std::string render_markdown(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  std::ostringstream os;
  std::string ids;
  for (const auto& r : d.runs) ids += (ids.empty() ? "" : ", ") + std::to_string(r.run_id);
  os << "# cibench report: run" << (d.runs.size() > 1 ? "s " : " ") << ids << "\n\n";
  if (d.comparison)
    for (const auto& w : d.comparison->warnings) os << "**WARNING (compare): " << md(w) << "**\n\n";
  os << md_table(lead_table(d)) << "\n" << kLeadNote << "\n\n";
  os << "Generated " << utc_now() << " by `cibench report`; charts are in report.html. n/a = not measured.\n\n";
  for (const auto& r : d.runs) {
    os << "- **Run " << r.run_id << "**: "
       << (r.kind == "scenario" ? "scenario **" + md(r.scenario_name) + "**" : md_code(r.origin())) << ", " << md(r.status)
       << ", started " << md(r.started_utc) << " on " << md(r.hostname) << " (" << md(r.cpu_model) << "), model "
       << md_code(r.model_spec);
    if (!r.question.empty()) os << ". Question: *" << md(r.question) << "*";
    os << "\n";
  }
  os << "\n## Verdicts\n\n";
  for (const auto& l : verdict_lines(d)) os << "- " << md(l) << "\n";
  os << "\n" << md_table(slo_table(d));
  if (const Table at = accuracy_table(d); !at.rows.empty()) os << "\n### Task accuracy\n\n" << md_table(at);
  os << "\n## Pareto frontier\n\n";
  os << (t.frontier.empty() ? "No variant meets the floor with both values measured.\n" : md_table(frontier_table(d)));
  os << "\n## Variants ranked\n\n" << md_table(ranked_table(d));
  if (!d.serving.empty()) {
    os << "\n## Serving\n\n" << kServingNote << "\n\n" << md_table(serving_table(d)) << "\n";
    for (const auto& l : serving_notes(d)) os << "- " << md(l) << "\n";
    for (const Timeline& tl : d.timelines)
      os << "\n### Requests of " << md(tl.name) << " (" << md(tl.why) << "): " << md(tl.coverage()) << "\n\n"
         << md_table(timeline_table(tl));
  }
  if (!d.speculative.empty()) {
    os << "\n## Speculative decoding\n\n" << md(kSpeculativeNote) << "\n\n";
    for (const auto& l : speculative_notes(d)) os << "- " << md(l) << "\n";
    for (const SpecTable& st : speculative_tables(d)) {
      os << "\n";
      if (d.runs.size() > 1) os << "### Run " << st.run << "\n\n";
      os << md_table(st.t) << "\n";
      for (const auto& f : st.footnotes) os << md(f) << "  \n";
    }
  }
  if (const Table ct = cache_table(d); !ct.rows.empty())
    os << "\n## Result cache\n\n" << kCacheNote << "\n\n" << md_table(ct);
  if (d.comparison) {
    const Comparison& c = *d.comparison;
    os << "\n## Compare: run " << c.a.run_id << " (A) and run " << c.b.run_id << " (B)\n\n";
    for (const auto& w : c.warnings) os << "**WARNING: " << md(w) << "**\n\n";
    os << "Differences B - A with " << static_cast<int>(c.confidence * 100)
       << "% percentile-bootstrap intervals, as `cibench compare " << c.a.run_id << " " << c.b.run_id
       << "` computes them (" << c.resamples << " resamples, seed " << c.seed
       << "); n = requests behind a percentile; (!) = the percentile is the sample maximum.\n\n"
       << md_table(compare_table(c));
    const auto notes = compare_notes(c);
    if (!notes.empty()) os << "\n";
    for (const auto& n : notes) os << "- " << md(n) << "\n";
  }
  os << "\n## Counters\n\n" << kCountersNote << "\n\n";
  if (const Table ct = counters_table(d); !ct.rows.empty()) os << md_table(ct) << "\n";
  for (const auto& g : counter_gap_lines(d)) os << "- unavailable: " << md(g) << "\n";
  os << "\n## Provenance\n";
  for (size_t i = 0; i < d.runs.size(); ++i)
    os << "\n### Run " << d.runs[i].run_id << "\n\n" << md_table(provenance_table(d.runs[i], d.provenance[i]));
  return os.str();
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
