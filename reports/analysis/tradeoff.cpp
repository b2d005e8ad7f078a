#include "reports/analysis/tradeoff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include "reports/format.h"

namespace cibench::reports {
namespace {

bool is_accuracy_column(const std::string& c) {
  static const std::set<std::string> a{"acc_kind", "acc_eval_set", "acc_tokens", "kl_mean", "kl_p99",
                                       "top1_agreement", "ppl", "ppl_ref", "ppl_ratio", "task_accuracy",
                                       "quality_verdict", "quality_reasons", "acc_unavailable_reason",
                                       "macro_f1", "ref_task_accuracy", "accuracy_delta", "accuracy_delta_lo",
                                       "accuracy_delta_hi", "bootstrap_resamples"};
  return a.count(c) > 0 || c.rfind("acc_", 0) == 0 || c.rfind("task_", 0) == 0;
}

}  // namespace

// ---- axes and frontier ---------------------------------------------------------------------

std::string Axis::title() const { return unit.empty() ? label : label + " (" + unit + ")"; }

const std::vector<Axis>& x_axes() {
  static const double mib = 1.0 / (1024.0 * 1024.0);
  static const std::vector<Axis> a{
      {"latency_p50_ms", "latency p50", "ms", false, 1},
      {"latency_p90_ms", "latency p90", "ms", false, 1},
      {"latency_p95_ms", "latency p95", "ms", false, 1},
      {"latency_p99_ms", "latency p99", "ms", false, 1},
      {"latency_p999_ms", "latency p99.9", "ms", false, 1},
      {"ttft_p95_ms", "time to first token p95", "ms", false, 1},
      {"tpot_p95_ms", "time per output token p95", "ms", false, 1},
      {"achieved_qps", "throughput", "queries/s", true, 1},
      {"tokens_per_s", "throughput", "tokens/s", true, 1},
      {"decode_tokens_per_s", "decode rate (bench)", "tokens/s", true, 1},
      {"prefill_tokens_per_s", "prefill rate (bench)", "tokens/s", true, 1},
      {"peak_rss_bytes", "peak memory (RSS)", "MiB", false, mib},
      {"weight_bytes", "weight memory", "MiB", false, mib},
  };
  return a;
}

const std::vector<Axis>& y_axes() {
  static const std::vector<Axis> a{
      {"top1_agreement", "top-1 agreement with the reference", "", true, 1},
      {"task_accuracy", "task accuracy", "", true, 1},
      {"accuracy_delta", "task accuracy delta vs the reference", "", true, 1},
      {"kl_mean", "KL divergence, mean", "nats", false, 1},
      {"kl_p99", "KL divergence, p99", "nats", false, 1},
      {"ppl_ratio", "perplexity ratio to the reference", "", false, 1},
      {"ppl", "perplexity", "", false, 1},
      // Runs without accuracy: throughput against the SLO latency.
      {"tokens_per_s", "throughput", "tokens/s", true, 1},
      {"achieved_qps", "throughput", "queries/s", true, 1},
  };
  return a;
}

bool is_quality_axis(const std::string& key) {
  for (const Axis& a : y_axes())
    if (a.key == key) return a.key != "tokens_per_s" && a.key != "achieved_qps";
  return false;
}

Axis find_axis(const std::string& key) {
  for (const auto* list : {&x_axes(), &y_axes()})
    for (const Axis& a : *list)
      if (a.key == key) return a;
  // Any column an SLO can bound: "ttft_p99_ms", "queue_max_ms".
  for (const std::string& m : slo_metrics())
    if (key.rfind(m + "_", 0) == 0) {
      const std::string rest = key.substr(m.size() + 1);
      if (auto slo = parse_slo_key(rest); slo && slo->metric == "latency") {
        const std::string p = slo->percentile == 100 ? "max" : "p" + fmt_num(slo->percentile, 3);
        const std::string name = m == "latency" ? "latency" : m == "ttft" ? "time to first token"
                                 : m == "tpot" ? "time per output token" : m == "queue" ? "queue wait" : "service time";
        return Axis{key, name + " " + p, "ms", false, 1};
      }
    }
  throw DbError(str("unknown axis '", key, "' (expected one of the listed axes or a percentile column such as ttft_p99_ms)"));
}

std::vector<size_t> pareto_frontier(const std::vector<Point>& pts, bool x_higher_better,
                                    bool y_higher_better) {
  // Work in "smaller is better" on both axes.
  auto key = [&](size_t i) {
    return std::pair<double, double>{x_higher_better ? -pts[i].x : pts[i].x,
                                      y_higher_better ? -pts[i].y : pts[i].y};
  };
  std::vector<size_t> idx(pts.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  // Sweep by x (best first): a point is on the frontier when its y beats every y seen so far,
  // or ties the last frontier point exactly (duplicates).
  std::vector<size_t> out;
  double best_y = INFINITY;
  std::pair<double, double> last{NAN, NAN};
  for (size_t i : idx) {
    const auto k = key(i);
    if (k.second < best_y) {
      out.push_back(i);
      best_y = k.second;
      last = k;
    } else if (!out.empty() && k == last) {
      out.push_back(i);
    }
  }
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
    return pts[a].x != pts[b].x ? pts[a].x < pts[b].x : a < b;
  });
  return out;
}

bool meets_floor(const Axis& y, double value, double floor) {
  return y.higher_is_better ? value >= floor : value <= floor;
}
namespace {
// One representative row per (run, variant_index): the first step, with accuracy columns filled
// from any step of the same variant.
std::vector<Variant> representatives(const std::vector<Variant>& all) {
  std::vector<Variant> reps;
  std::map<std::pair<int64_t, int64_t>, size_t> at;
  for (const Variant& v : all) {
    auto key = std::make_pair(v.run_id, v.variant_index);
    auto it = at.find(key);
    if (it == at.end()) {
      at[key] = reps.size();
      reps.push_back(v);
      continue;
    }
    Variant& r = reps[it->second];
    for (const auto& [c, x] : v.num)
      if (is_accuracy_column(c) && !r.num.count(c)) r.num[c] = x;
    for (const auto& [c, x] : v.text)
      if (is_accuracy_column(c) && !r.text.count(c)) r.text[c] = x;
  }
  return reps;
}

std::optional<double> axis_value(const Axis& a, const Variant& v, const std::vector<Variant>& reps) {
  if (a.key == "accuracy_delta") {
    if (auto d = v.get("accuracy_delta")) return d;
    // Rows without the stored delta: against the run's f32 dense variant.
    auto acc = v.get("task_accuracy");
    if (!acc) return std::nullopt;
    for (const Variant& r : reps)  // the reference: the run's f32 dense variant with an accuracy
      if (r.run_id == v.run_id && r.format == "f32" && r.sparsity.value_or(0) == 0 && r.get("task_accuracy"))
        return *acc - *r.get("task_accuracy");
    return std::nullopt;
  }
  auto x = v.get(a.key);
  if (!x) return std::nullopt;
  return *x * a.scale;
}
}  // namespace

std::pair<std::string, std::string> default_axes(Db& db, const std::vector<int64_t>& run_ids) {
  const auto reps = representatives(db.variants(run_ids));
  auto any = [&](const Axis& a) {
    for (const Variant& v : reps)
      if (axis_value(a, v, reps)) return true;
    return false;
  };
  // x: the latency the scenario's SLOs bound (end-to-end first, the highest percentile).
  std::string x;
  std::optional<Slo> best;
  for (int64_t id : run_ids) {
    for (const Slo& s : db.slos(id)) {
      if (!any(find_axis(s.column()))) continue;
      const bool lat = s.metric == "latency", best_lat = best && best->metric == "latency";
      if (!best || (lat && !best_lat) || (lat == best_lat && s.percentile > best->percentile)) best = s;
    }
    if (best) break;
  }
  if (best) x = best->column();
  else if (any(find_axis("latency_p95_ms"))) x = "latency_p95_ms";
  else {
    x = "latency_p95_ms";
    for (const Axis& a : x_axes())
      if (any(a)) { x = a.key; break; }
  }
  // y: the column a run's quality floor bounds (what the user said matters), when the variants have
  // it; otherwise the first quality axis any variant has; without accuracy, throughput.
  for (int64_t id : run_ids)
    for (const QualityFloor& f : db.floors(id))
      for (const Axis& a : y_axes())
        if (a.key == f.column && any(a)) return {x, a.key};
  // A quality measure that is the same for every variant (a stepped run of one build) says nothing
  // the throughput would not: the throughput is plotted instead.
  auto varies = [&](const Axis& a) {
    std::set<double> seen;
    for (const Variant& v : reps)
      if (auto y = axis_value(a, v, reps)) seen.insert(*y);
    return seen.size() > 1;
  };
  bool has_throughput = false;
  for (const char* k : {"tokens_per_s", "achieved_qps"}) has_throughput = has_throughput || (k != x && any(find_axis(k)));
  for (const Axis& a : y_axes())
    if (is_quality_axis(a.key) && any(a) && (varies(a) || !has_throughput)) return {x, a.key};
  for (const char* k : {"tokens_per_s", "achieved_qps"})
    if (k != x && any(find_axis(k))) return {x, k};
  return {x, "top1_agreement"};
}

std::string FloorsVerdict::summary() const {
  auto join = [](const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!broken.empty()) return "below: " + join(broken);
  if (met && *met) return "meets floors";
  if (unmeasured.empty()) return "no floor";
  return "not measured: " + join(unmeasured);
}

namespace {
FloorsVerdict judge_floors_on(const std::vector<QualityFloor>& floors, const Variant& v, const std::vector<Variant>& reps) {
  FloorsVerdict fv;
  bool broken = false;
  for (const QualityFloor& f : floors) {
    std::optional<double> x;
    if (f.column == "accuracy_delta") x = axis_value(find_axis("accuracy_delta"), v, reps);
    else x = v.get(f.column);
    if (!x) {
      fv.unmeasured.push_back(f.key);
      continue;
    }
    if (!f.met_by(*x)) {
      broken = true;
      fv.broken.push_back(str(f.column, " ", fmt_num(*x), f.is_minimum ? " < " : " > ", fmt_num(f.bound), " (", f.key,
                              " = ", fmt_num(f.value), ")"));
    }
  }
  if (broken) fv.met = false;
  else if (!floors.empty() && fv.unmeasured.empty()) fv.met = true;
  return fv;
}
}  // namespace

FloorsVerdict judge_floors(Db& db, const Variant& v) {
  const auto reps = representatives(db.variants({v.run_id}));
  Variant r = v;
  for (const Variant& x : reps)  // accuracy columns from any step of the same variant
    if (x.variant_index == v.variant_index)
      for (const auto& [c, val] : x.num)
        if (is_accuracy_column(c) && !r.num.count(c)) r.num[c] = val;
  return judge_floors_on(db.floors(v.run_id), r, reps);
}

Tradeoff tradeoff(Db& db, const std::vector<int64_t>& run_ids, const std::string& x_key, const std::string& y_key,
                  std::optional<double> floor, bool use_scenario_floor) {
  Tradeoff t;
  t.x = find_axis(x_key);
  t.y = find_axis(y_key);
  if (floor) {
    t.floor = floor;
    t.floor_source = "set by the user";
  } else if (use_scenario_floor) {
    for (int64_t id : run_ids)
      if (auto f = db.scenario_floor(id, y_key)) {
        t.floor = f->second;
        t.floor_source = "scenario: " + f->first;
        break;
      }
  }
  const auto all = db.variants(run_ids);
  const auto reps = representatives(all);
  // Stepped runs: every step is a point of its own (each offered rate judged), with the variant's
  // accuracy columns.
  std::vector<Variant> pts_of;
  std::map<int64_t, std::vector<QualityFloor>> run_floors;
  std::set<int64_t> stepped;
  for (int64_t id : run_ids) {
    run_floors[id] = use_scenario_floor ? db.floors(id) : std::vector<QualityFloor>{};
    if (db.run(id).pattern == "stepped") stepped.insert(id);
  }
  for (const Variant& v : all) {
    if (!stepped.count(v.run_id)) continue;
    t.per_step = true;
    Variant x = v;
    for (const Variant& r : reps)
      if (r.run_id == v.run_id && r.variant_index == v.variant_index)
        for (const auto& [c, val] : r.num)
          if (is_accuracy_column(c) && !x.num.count(c)) x.num[c] = val;
    pts_of.push_back(std::move(x));
  }
  for (const Variant& v : reps)
    if (!stepped.count(v.run_id)) pts_of.push_back(v);
  std::vector<Point> pass_pts;
  std::vector<size_t> pass_idx;
  for (const Variant& v : pts_of) {
    const auto x = axis_value(t.x, v, reps);
    const auto y = axis_value(t.y, v, reps);
    if (v.status != "ok") {
      t.unplotted.emplace_back(v, v.status + (v.error.empty() ? "" : ": " + v.error));
      continue;
    }
    if (!x || !y) {
      std::string why = str("no ", !x ? t.x.label : t.y.label, " measured");
      const std::string acc_why = v.text_of("acc_unavailable_reason");
      if (x && !acc_why.empty()) why += " (" + acc_why + ")";
      t.unplotted.emplace_back(v, why);
      continue;
    }
    TradeoffPoint p;
    p.v = v;
    p.x = *x;
    p.y = *y;
    p.floors = judge_floors_on(run_floors[v.run_id], v, reps);
    p.meets_floor = (!t.floor || meets_floor(t.y, *y, *t.floor)) && !(p.floors.met && !*p.floors.met);
    if (p.meets_floor) {
      pass_pts.push_back({p.x, p.y});
      pass_idx.push_back(t.points.size());
    }
    t.points.push_back(std::move(p));
  }
  for (size_t i : pareto_frontier(pass_pts, t.x.higher_is_better, t.y.higher_is_better)) {
    t.frontier.push_back(pass_idx[i]);
    t.points[pass_idx[i]].on_frontier = true;
  }
  return t;
}

}  // namespace cibench::reports
