#include "reports/render/sections.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace cibench::reports {
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

const char* const kCacheNote =
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
// variants each lacks it for (analysis/counters.h counter_gaps, as cibench-gui shows them).
std::vector<std::string> counter_gap_lines(const ReportData& d) {
  std::vector<std::string> out;
  for (const CounterGap& g : counter_gaps(d.counters, d.variants)) out.push_back(g.text());
  return out;
}

namespace {
std::string pct_text(const std::optional<double>& v) {
  if (!v) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", *v);
  return buf;
}

std::string with_n(const std::optional<double>& v, const std::optional<int64_t>& n) {
  return fmt_opt(v) + (n ? " (n=" + std::to_string(*n) + ")" : "");
}

}  // namespace

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

const char* const kServingNote =
    "One series per variant across its offered rates (a decoder under open-loop arrivals). Knee = the highest "
    "offered rate at which this step and every lower one met every SLO, as in the verdicts. n/a = not measured "
    "(the reasons follow the table).";


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
    // The off rows of the run first, then each build's drafters by k (as reports::speculative orders them).
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

const char* const kSpeculativeNote =
    "One row per variant: the drafter proposes k tokens, the target verifies them in one forward. Acceptance = "
    "accepted / drafted draft tokens; mean accepted length = 1 + accepted / verifications with drafts; acceptance by "
    "position: position 1 first (— where nothing was drafted there); draft and verify share = the parts of the "
    "generation time spent drafting and verifying. Speed-up = the off variant's (same build, same run) mean (p95) "
    "TPOT / this variant's. — [n] = not measured, the reason in note n under the table; never 0. The lowest TPOT p95 "
    "of each build is marked.";

std::vector<std::string> speculative_notes(const ReportData& d) { return d.speculative.notes(); }

std::vector<std::string> serving_notes(const ReportData& d) {
  std::vector<std::string> out = d.serving.notes();
  for (const Timeline& tl : d.timelines)
    for (const auto& n : tl.notes()) out.push_back(n);
  return out;
}

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
  // Decoders' task rows (schema 15) name their metric and McNemar's p; classifiers' their macro F1.
  const bool f1 = any_has(d, "macro_f1"), task = any_has(d, "task_items");
  tb.head = {"variant", "task accuracy [95% CI]", "reference accuracy", "delta vs reference [95% CI]"};
  if (task) tb.head.insert(tb.head.end(), {"metric", "items", "McNemar p"});
  if (f1) tb.head.push_back("macro F1");
  tb.head.insert(tb.head.end(), {"top-1 agreement", "quality verdict"});
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const Variant& v : d.variants) {
    if (!v.get("task_accuracy") || !seen.insert({v.run_id, v.variant_index}).second) continue;
    std::vector<std::string> row{run_prefix(d, v) + v.short_name(false), with_interval(v, "task_accuracy"),
                                 fmt_opt(v.get("ref_task_accuracy")), with_interval(v, "accuracy_delta")};
    if (task)
      row.insert(row.end(), {v.text_of("task_metric").empty() ? "n/a" : v.text_of("task_metric"),
                             fmt_opt(v.get("task_items")), fmt_opt(v.get("task_mcnemar_p"), 3)});
    if (f1) row.push_back(fmt_opt(v.get("macro_f1")));
    row.insert(row.end(), {fmt_opt(v.get("top1_agreement")),
                           v.text_of("quality_verdict").empty() ? "n/a" : v.text_of("quality_verdict")});
    tb.rows.push_back(std::move(row));
  }
  return tb;
}

namespace {

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

}  // namespace

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

const char* const kLeadNote =
    "n = completed requests; mean / p50 / p99 are nearest-rank over them, (!) = the p99 is the sample "
    "maximum (n < 100). ITL = every gap between consecutive output tokens of a request, n gaps. "
    "goodput = completed requests meeting every SLO on their own values per second, SLO attainment = their "
    "share of the completed requests (every request kept). VALID = minimum duration and queries met and every SLO met; INVALID says why.";

const char* const kCountersNote =
    "Counters a machine cannot count are stored as unavailable with the reason, never as zero; the "
    "table shows what was measured, the reasons follow, one line each.";
// ---- host types (cibench fleet) ----------------------------------------------------------------

const char* const kHostsNote =
    "Each host type's price per hour over the rate a variant sustains: its knee (the highest offered rate "
    "meeting the run's SLOs) in a stepped run, else its measured throughput (a lower bound on what the host "
    "can do when the load was below capacity). Ranked by each host type's cheapest valid variant that meets "
    "the quality floor and the SLOs.";

namespace {
std::string money(const std::optional<double>& v, const std::string& currency) {
  return v ? fmt_num(*v, 4) + " " + currency : std::string("n/a");
}
}  // namespace

Table host_rank_table(const HostsScenario& s) {
  Table t;
  t.head = {"rank", "host type", "price/h", "cheapest variant", "run", "rate priced", "p95 ms", "per 1k requests",
            "per 1M output tokens"};
  int rank = 0;
  for (const HostRank& h : s.ranks) {
    if (!h.best) {
      t.rows.push_back({"-", h.host_type, money(h.price_per_hour, h.currency), h.reason, "-", "-", "-", "-", "-"});
      t.row_class.push_back("below");
      continue;
    }
    const HostCost& b = *h.best;
    t.rows.push_back({std::to_string(++rank), h.host_type, money(h.price_per_hour, h.currency), compact_label(b.label),
                      std::to_string(b.run_id), b.cost.basis, fmt_opt(b.p95_ms), money(b.cost.per_thousand_requests, h.currency),
                      money(b.cost.per_million_tokens, h.currency)});
    t.row_class.push_back(rank == 1 ? "frontier" : "");
  }
  return t;
}

Table host_cost_table(const HostsScenario& s) {
  Table t;
  t.head = {"host type", "variant", "run", "rate priced", "p95 ms", "floor", "SLO", "valid", "per 1k requests",
            "per 1M output tokens"};
  for (const HostCost& c : s.costs) {
    t.rows.push_back({c.host_type, compact_label(c.label), std::to_string(c.run_id), c.cost.basis.empty() ? "n/a" : c.cost.basis,
                      fmt_opt(c.p95_ms), c.meets_floor ? "meets" : "below", c.meets_slo ? "met" : "missed",
                      c.valid ? "yes" : "no", money(c.cost.per_thousand_requests, c.currency),
                      money(c.cost.per_million_tokens, c.currency)});
    t.row_class.push_back(c.meets_floor && c.meets_slo && c.valid ? "" : "below");
  }
  return t;
}

}  // namespace cibench::reports
