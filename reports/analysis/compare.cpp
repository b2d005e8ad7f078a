#include "reports/analysis/compare.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include "engines/core/error.h"
#include "reports/analysis/labels.h"
#include "reports/format.h"

namespace cibench::reports {
namespace {

// As cibench compare: the requests when every request was kept, else the histogram expanded
// at bucket midpoints.
std::vector<double> compare_samples(Db& db, const Variant& v, const std::string& metric, bool* from_histogram) {
  const auto queries = v.get("queries");
  const bool all = queries && static_cast<int64_t>(*queries) == db.request_count(v.variant_id);
  *from_histogram = !all;
  if (all) return db.request_latencies(v.variant_id, metric);
  std::vector<double> out;
  for (const HistogramBucket& b : db.histogram(v.variant_id, metric)) {
    const double mid = (static_cast<double>(b.low_ns) + static_cast<double>(b.high_ns - 1)) / 2 * 1e-6;
    out.insert(out.end(), static_cast<size_t>(std::max<int64_t>(0, b.count)), mid);
  }
  return out;
}

std::string status_text(const Variant& v) {
  return v.status + (v.error.empty() ? "" : " (" + v.error + ")");
}
}  // namespace
Comparison compare_runs(Db& db, int64_t run_a, int64_t run_b, int resamples, uint64_t seed) {
  Comparison c;
  c.a = db.run(run_a);
  c.b = db.run(run_b);
  c.resamples = resamples;
  c.seed = seed;
  // What differs besides the configuration, said before any number.
  c.same_scenario = c.a.kind == c.b.kind && c.a.scenario_name == c.b.scenario_name;
  c.same_model = c.a.model_spec == c.b.model_spec;
  if (!c.same_scenario)
    c.warnings.push_back(str("different scenarios: A is ", c.a.origin(), ", B is ", c.b.origin(),
                             "; the differences mix the workloads, not only the builds"));
  if (!c.same_model)
    c.warnings.push_back(str("different models: A ran ", c.a.model_spec, ", B ran ", c.b.model_spec));
  if (c.same_scenario && c.a.question != c.b.question)
    c.warnings.push_back("the same scenario name with a different question: the scenario files differ");
  if (run_a == run_b) c.warnings.push_back(str("A and B are the same run (", run_a, "): every difference is 0"));
  if (c.a.status != "complete") c.warnings.push_back(str("run A (", run_a, ") is ", c.a.status));
  if (c.b.status != "complete") c.warnings.push_back(str("run B (", run_b, ") is ", c.b.status));

  const auto va = db.variants({run_a});
  const auto vb = db.variants({run_b});
  auto key = [](const Variant& v) { return v.label + (v.step_index ? " step " + std::to_string(v.step_index) : ""); };
  for (const auto* side : {&va, &vb})
    for (const Variant& v : *side)
      if (v.status != "ok") c.failed.push_back(str(side == &va ? "A" : "B", ": ", key(v), ": ", status_text(v)));
  std::map<std::string, const Variant*> in_b;
  for (const Variant& v : vb) in_b[key(v)] = &v;
  std::set<std::string> matched;
  auto change = [](CompareRow& r) {
    if (r.a && r.b) {
      r.diff = *r.b - *r.a;
      if (*r.a != 0) r.change_pct = 100.0 * *r.diff / *r.a;
    }
  };
  for (const Variant& a : va) {
    auto it = in_b.find(key(a));
    if (it == in_b.end()) {
      c.only_in_a.push_back(key(a) + (a.status == "ok" ? "" : " (" + a.status + ")"));
      continue;
    }
    const Variant& b = *it->second;
    matched.insert(key(a));
    if (a.status != "ok" || b.status != "ok") {
      CompareRow r;
      r.variant = key(a);
      r.metric = "-";
      r.note = "not compared: A " + status_text(a) + ", B " + status_text(b);
      c.rows.push_back(r);
      continue;
    }
    // The percentiles with bootstrap intervals.
    for (const char* metric : {"latency", "ttft", "tpot"}) {
      bool ha = false, hb = false;
      const auto sa = compare_samples(db, a, metric, &ha);
      const auto sb = compare_samples(db, b, metric, &hb);
      if (sa.empty() || sb.empty()) {
        if (std::string(metric) == "latency") {
          CompareRow r;
          r.variant = key(a);
          r.metric = "latency p95 (ms)";
          r.a = a.get("latency_p95_ms");
          r.b = b.get("latency_p95_ms");
          change(r);
          r.note = "per-request times and histogram not stored: no interval";
          c.rows.push_back(r);
        }
        continue;
      }
      for (double p : {50.0, 95.0}) {
        const PercentileDiff d = percentile_diff(sa, sb, p, resamples, seed, c.confidence);
        CompareRow r;
        r.variant = key(a);
        r.metric = str(metric, " p", static_cast<int>(p), " (ms)");
        r.a = d.a;
        r.b = d.b;
        r.diff = d.diff;
        r.change_pct = d.change_pct;
        r.ci_low = d.lo;
        r.ci_high = d.hi;
        r.n_a = static_cast<int64_t>(d.n_a);
        r.n_b = static_cast<int64_t>(d.n_b);
        r.warning = d.small_sample_warning();
        if (ha || hb) r.note = "from the histogram (bucket midpoints)";
        c.rows.push_back(r);
      }
    }
    // Single measurements per run: shown side by side, no interval.
    constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
    for (const auto& [col, title, scale] : std::vector<std::tuple<const char*, const char*, double>>{
             {"achieved_qps", "throughput (queries/s)", 1}, {"tokens_per_s", "throughput (tokens/s)", 1},
             {"top1_agreement", "top-1 agreement", 1}, {"task_accuracy", "task accuracy", 1},
             {"peak_rss_bytes", "peak RSS (MiB)", kMiB}}) {
      CompareRow r;
      r.variant = key(a);
      r.metric = title;
      if (auto x = a.get(col)) r.a = *x * scale;
      if (auto x = b.get(col)) r.b = *x * scale;
      if (!r.a && !r.b) continue;
      change(r);
      r.note = "one measurement per run: no interval";
      c.rows.push_back(r);
    }
  }
  for (const Variant& b : vb)
    if (!matched.count(key(b))) c.only_in_b.push_back(key(b) + (b.status == "ok" ? "" : " (" + b.status + ")"));
  return c;
}

std::vector<int64_t> comparable_runs(Db& db, int64_t run_id) {
  const RunInfo r = db.run(run_id);
  std::vector<int64_t> out;
  for (const RunInfo& o : db.runs())
    if (o.run_id != run_id && o.kind == r.kind && o.scenario_name == r.scenario_name && o.model_spec == r.model_spec)
      out.push_back(o.run_id);
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json out;
  out["run_a"] = c.a.run_id;
  out["run_b"] = c.b.run_id;
  out["scenario_a"] = c.a.origin();
  out["scenario_b"] = c.b.origin();
  out["model_a"] = c.a.model_spec;
  out["model_b"] = c.b.model_spec;
  out["warnings"] = c.warnings;
  out["method"] = str("difference B - A of nearest-rank percentiles; ", static_cast<int>(c.confidence * 100),
                      "% percentile-bootstrap interval, ", c.resamples, " resamples, seed ", c.seed);
  out["rows"] = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const CompareRow& r : c.rows) {
    nlohmann::json j{{"variant", r.variant}, {"metric", r.metric}, {"a", opt(r.a)}, {"b", opt(r.b)},
                     {"diff", opt(r.diff)}, {"change_pct", opt(r.change_pct)}, {"ci_low", opt(r.ci_low)},
                     {"ci_high", opt(r.ci_high)}};
    if (r.n_a) j["n_a"] = *r.n_a;
    if (r.n_b) j["n_b"] = *r.n_b;
    if (r.ci_low) j["verdict"] = *r.ci_high < 0 ? "B lower" : *r.ci_low > 0 ? "B higher" : "no significant difference";
    if (!r.note.empty()) j["note"] = r.note;
    if (!r.warning.empty()) j["warning"] = r.warning;
    out["rows"].push_back(j);
  }
  out["failed"] = c.failed;
  nlohmann::json un = nlohmann::json::array();
  for (const auto& s : c.only_in_a) un.push_back(s + " (only in A)");
  for (const auto& s : c.only_in_b) un.push_back(s + " (only in B)");
  out["unmatched"] = un;
  return out;
}

}  // namespace cibench::reports
