#include "reports/analysis/latency.h"

#include <algorithm>
#include <set>
#include "reports/format.h"

namespace cibench::reports {
CdfSeries latency_cdf(Db& db, int64_t variant_id, const std::string& metric) {
  CdfSeries s;
  s.variant_id = variant_id;
  const std::vector<double> req = db.request_latencies(variant_id, metric);
  const std::vector<HistogramBucket> h = db.histogram(variant_id, metric);
  int64_t hist_total = 0;
  for (const auto& b : h) hist_total += b.count;
  if (!req.empty() && static_cast<int64_t>(req.size()) >= hist_total) {
    // Every request: one step per distinct value (at most ~1000 points drawn).
    s.source = "requests";
    s.count = static_cast<int64_t>(req.size());
    const size_t n = req.size();
    const size_t stride = std::max<size_t>(1, n / 1000);
    for (size_t i = 0; i < n; ++i) {
      const bool last_of_value = i + 1 == n || req[i + 1] != req[i];
      if (last_of_value && ((i + 1) % stride == 0 || i + 1 == n))
        s.points.push_back({req[i], static_cast<double>(i + 1) / static_cast<double>(n)});
    }
  } else if (hist_total > 0) {
    s.source = "histogram";
    s.count = hist_total;
    int64_t cum = 0;
    for (const auto& b : h) {
      cum += b.count;
      s.points.push_back({static_cast<double>(b.high_ns) / 1e6,
                          static_cast<double>(cum) / static_cast<double>(hist_total)});
    }
  }
  return s;
}

// The run's own definition (harness/schema/slo.h find_knee) on the steps as judged here.
Knee LoadCurve::knee_of_steps() const {
  std::vector<KneeStep> ks;
  for (const Step& s : steps) ks.push_back({s.offered_qps, s.verdict.met});  // by offered rate, ascending
  return find_knee(ks);
}

std::optional<double> LoadCurve::knee() const { return knee_of_steps().qps; }

std::string LoadCurve::knee_text() const {
  if (steps.empty()) return "no step completed";
  bool any_slo = false;
  for (const Step& s : steps) any_slo = any_slo || s.verdict.met.has_value() || !s.verdict.unmeasured.empty();
  if (!any_slo) return "no SLO to judge the steps by";
  const Knee kn = knee_of_steps();
  const std::optional<double> k = kn.qps;
  const Step* next = nullptr;
  for (const Step& s : steps)
    if (!k || s.offered_qps > *k) {
      next = &s;
      break;
    }
  if (k && (!kn.reached || !next))
    return str("knee not reached below the highest rate tried (", fmt_num(steps.back().offered_qps), " qps): every step met every SLO");
  const std::string why = next->verdict.summary();
  if (!k) return str("no rate met every SLO (lowest tried: ", fmt_num(steps.front().offered_qps), " qps, ", why, ")");
  return str("knee ", fmt_num(*k), " qps: the highest offered rate meeting every SLO (the next, ", fmt_num(next->offered_qps),
             " qps, ", why, ")");
}

bool LoadSweep::has_steps() const {
  for (const auto& c : curves)
    if (c.steps.size() >= 2 || (pattern == "stepped" && !c.steps.empty())) return true;
  return false;
}

LoadSweep load_sweep(Db& db, int64_t run_id, const std::string& metric) {
  static const std::set<std::string> kMetrics{"latency", "ttft", "tpot", "queue", "service"};
  if (!kMetrics.count(metric))
    throw DbError(str("unknown metric '", metric, "' (expected latency, ttft, tpot, queue or service)"));
  LoadSweep ls;
  ls.metric = metric;
  ls.pattern = db.run(run_id).pattern;
  ls.slos = db.slos(run_id);
  std::map<int64_t, size_t> at;
  for (const Variant& v : db.variants({run_id})) {
    auto offered = v.get("offered_qps");
    if (!offered || *offered <= 0) continue;
    auto it = at.find(v.variant_index);
    if (it == at.end()) {
      it = at.emplace(v.variant_index, ls.curves.size()).first;
      LoadCurve c;
      c.variant_index = v.variant_index;
      c.name = v.short_name(false);
      ls.curves.push_back(c);
    }
    LoadCurve& c = ls.curves[it->second];
    if (v.status != "ok") continue;
    LoadCurve::Step s;
    s.offered_qps = *offered;
    s.achieved_qps = v.get("achieved_qps");
    s.p50_ms = v.get(metric + "_p50_ms");
    s.p95_ms = v.get(metric + "_p95_ms");
    s.p99_ms = v.get(metric + "_p99_ms");
    for (const auto& [suffix, pct] : std::vector<std::pair<const char*, double>>{
             {"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}, {"max", 100}})
      if (auto x = v.get(str(metric, "_", suffix, "_ms"))) s.percentiles[pct] = *x;
    if (auto m = v.get("slo_met")) s.slo_met = *m != 0;
    s.verdict = judge_slos(ls.slos, [&](const Slo& slo) { return v.get(slo.column()); });
    s.queries = static_cast<int64_t>(v.get("queries").value_or(0));
    c.steps.push_back(s);
    if (auto k = v.get("knee_qps")) c.knee_qps = k;
  }
  for (auto& c : ls.curves)
    std::sort(c.steps.begin(), c.steps.end(),
              [](const LoadCurve::Step& a, const LoadCurve::Step& b) { return a.offered_qps < b.offered_qps; });
  return ls;
}

std::vector<ScalingSeries> scaling(Db& db, const std::vector<int64_t>& run_ids) {
  std::vector<ScalingSeries> out;
  std::map<std::string, size_t> at;
  for (const Variant& v : db.variants(run_ids)) {
    if (v.step_index != 0 || v.status != "ok") continue;
    // Every setting but threads and workers, named as Variant::short_name names it, so that
    // variants differing in anything else (cache off and on, a batch size) are separate lines.
    // One line per worker count: W workers of T threads each use T x W cores, so 2x1 and 1x2
    // sit at the same x on two lines (the threads-or-workers question).
    std::string name = v.format.empty() ? "?" : v.format;
    if (!v.text_of("recipe").empty()) name += " " + v.text_of("recipe");
    if (v.sparsity && *v.sparsity > 0) name += " sp" + fmt_num(*v.sparsity, 3);
    name += " w" + std::to_string(v.workers.value_or(1));
    if (const std::string kv = v.text_of("kv_mode"); !kv.empty() && kv != "preallocated") name += " kv=" + kv;
    if (const std::string isa = v.text_of("isa_requested"); !isa.empty() && isa != "auto") name += " isa=" + isa;
    if (const std::string pin = v.text_of("pinning"); !pin.empty() && pin != "none" && pin != "0") name += " " + pin;
    if (const std::string shape = v.text_of("shape"); !shape.empty() && shape != "dynamic") name += " " + shape;
    if (auto b = v.get("max_batch"); b && *b > 1) name += " b" + fmt_num(*b, 3);
    if (auto c = v.get("cache_enabled"); c && *c > 0) name += " cache";
    if (run_ids.size() > 1) name = "run " + std::to_string(v.run_id) + ": " + name;
    auto it = at.find(name);
    if (it == at.end()) {
      it = at.emplace(name, out.size()).first;
      out.push_back({name, {}});
    }
    ScalingPoint p;
    p.variant_id = v.variant_id;
    p.threads = v.threads.value_or(1);
    p.workers = v.workers.value_or(1);
    p.achieved_qps = v.get("achieved_qps");
    p.tokens_per_s = v.get("tokens_per_s");
    p.p50_ms = v.get("latency_p50_ms");
    p.p95_ms = v.get("latency_p95_ms");
    p.decode_tokens_per_s = v.get("decode_tokens_per_s");
    out[it->second].points.push_back(p);
  }
  for (auto& s : out)
    std::sort(s.points.begin(), s.points.end(), [](const ScalingPoint& a, const ScalingPoint& b) {
      const int64_t ca = a.threads * a.workers, cb = b.threads * b.workers;
      return ca != cb ? ca < cb : a.workers < b.workers;
    });
  return out;
}

bool scaling_plots_decode(const std::vector<ScalingSeries>& series) {
  bool qps = false, decode = false;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      qps = qps || p.achieved_qps.has_value();
      decode = decode || p.decode_tokens_per_s.has_value();
    }
  return !qps && decode;
}

}  // namespace cibench::reports
