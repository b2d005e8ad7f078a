#include "reports/analysis/serving.h"

#include <algorithm>
#include <map>
#include <set>
#include "engines/core/error.h"
#include "reports/analysis/labels.h"
#include "reports/format.h"

namespace cibench::reports {
namespace {
// Goodput from the requests table, when every request was kept.
std::optional<Goodput> goodput_of(Db& db, const Variant& v, const std::vector<Slo>& slos) {
  const auto queries = v.get("queries"), dur = v.get("duration_s");
  if (slos.empty() || !queries || !dur || *dur <= 0) return std::nullopt;
  const std::vector<RequestRow> rows = db.requests(v.variant_id);
  if (static_cast<int64_t>(rows.size()) != static_cast<int64_t>(*queries)) return std::nullopt;
  Goodput g;
  g.duration_s = *dur;
  for (const RequestRow& r : rows) {
    if (!r.ok) continue;
    ++g.requests;
    if (request_meets_slos(slos, [&](const std::string& m) { return r.metric(m); })) ++g.met;
  }
  if (g.requests == 0) return std::nullopt;
  return g;
}
}  // namespace

std::optional<double> goodput(Db& db, const Variant& v, const std::vector<Slo>& slos) {
  // Stored by the run (schema 7): the value, or NULL with its reason.
  if (const auto g = v.get("goodput_qps")) return g;
  if (!v.text_of("goodput_reason").empty()) return std::nullopt;
  const auto g = goodput_of(db, v, slos);  // older rows: the same rule on the requests table
  return g ? std::optional<double>(g->per_s()) : std::nullopt;
}

std::optional<double> slo_attainment(Db& db, const Variant& v, const std::vector<Slo>& slos) {
  if (const auto a = v.get("slo_attainment")) return a;
  if (!v.text_of("goodput_reason").empty()) return std::nullopt;
  const auto g = goodput_of(db, v, slos);
  return g ? std::optional<double>(g->attainment()) : std::nullopt;
}
// ---- serving ---------------------------------------------------------------------------------

bool is_serving_row(const Variant& v) {
  const auto offered = v.get("offered_qps");
  if (v.status != "ok" || !offered || *offered <= 0) return false;
  if (!v.get("ttft_p50_ms") && !v.get("ttft_p99_ms") && !v.get("ttft_mean_ms")) return false;
  return !v.text_of("batching").empty() || v.get("engine_steps") || v.get("itl_count") || v.get("goodput_qps");
}

const ServingStep* ServingSeries::knee_step() const {
  const Knee kn = knee();
  if (!kn.qps) return nullptr;
  for (const ServingStep& s : steps)
    if (s.offered_qps == *kn.qps) return &s;
  return nullptr;
}

const ServingStep* ServingSeries::timeline_step() const {
  if (const ServingStep* k = knee_step()) return k;
  return steps.empty() ? nullptr : &steps.back();
}

std::string Serving::x_title() const {
  return x_achieved ? "achieved (completed req/s)" : "offered rate (req/s; achieved not measured)";
}

namespace {

std::string serving_metric_title(const std::string& column) {
  const auto slo = parse_slo_key(column);
  if (!slo) return column;
  const std::string m = slo->metric == "ttft"    ? "TTFT"
                        : slo->metric == "tpot"  ? "TPOT"
                        : slo->metric == "queue" ? "queue wait"
                        : slo->metric == "service" ? "service time"
                                                   : "latency";
  const std::string p = slo->percentile == 100 ? "max" : "p" + fmt_num(slo->percentile, 3);
  return m + " " + p;
}

}  // namespace

Serving serving(Db& db, const std::vector<int64_t>& run_ids) {
  Serving sv;
  sv.runs = run_ids;
  for (int64_t run : run_ids) {
    const std::vector<Variant> all = db.variants({run});
    if (std::none_of(all.begin(), all.end(), is_serving_row)) continue;
    const LoadSweep ls = load_sweep(db, run, "latency");
    for (const Slo& slo : ls.slos)
      if (std::none_of(sv.slos.begin(), sv.slos.end(), [&](const Slo& x) { return x.key == slo.key; })) sv.slos.push_back(slo);
    for (const LoadCurve& cv : ls.curves) {
      ServingSeries ss;
      ss.run_id = run;
      ss.variant_index = cv.variant_index;
      ss.curve = cv;
      std::set<int64_t> used;
      bool serving = false;
      for (const LoadCurve::Step& st : cv.steps) {
        const Variant* row = nullptr;
        for (const Variant& v : all)
          if (v.variant_index == cv.variant_index && v.status == "ok" && v.get("offered_qps") == st.offered_qps &&
              !used.count(v.variant_id)) {
            row = &v;
            break;
          }
        if (!row) continue;  // load_sweep took it from these rows: not reached
        used.insert(row->variant_id);
        serving = serving || is_serving_row(*row);
        ServingStep p;
        p.v = *row;
        p.offered_qps = st.offered_qps;
        p.achieved_qps = st.achieved_qps;
        p.goodput_qps = goodput(db, *row, ls.slos);
        p.slo_attainment = slo_attainment(db, *row, ls.slos);
        if (!p.goodput_qps) {
          p.goodput_reason = row->text_of("goodput_reason");
          if (p.goodput_reason.empty())
            p.goodput_reason = ls.slos.empty() ? "no SLO to judge the requests by"
                                               : "not stored, and not every request was kept to compute it";
        }
        p.verdict = st.verdict;
        ss.steps.push_back(std::move(p));
      }
      if (!serving) continue;
      ss.batching = ss.steps.front().v.text_of("batching");
      const Variant& first = ss.steps.front().v;
      ss.name = (first.format.empty() ? compact_label(first.label) : first.short_name(false)) +
                (ss.batching == "none" ? " batching=none" : "");
      sv.series.push_back(std::move(ss));
    }
  }
  if (sv.series.empty()) return sv;
  // Series of one run with the same name differ in a batching setting short_name leaves out: the
  // settings that differ among them are added to their names ("tok32", "kv1024", "preempt", "wait50ms").
  auto setting = [](const Variant& v, const std::string& col) {
    if (const auto x = v.get(col)) return fmt_num(*x);
    return v.text_of(col);
  };
  std::vector<std::string> extra(sv.series.size());
  for (size_t i = 0; i < sv.series.size(); ++i) {
    const ServingSeries& ss = sv.series[i];
    std::vector<const ServingSeries*> twins;
    for (const auto& o : sv.series)
      if (&o != &ss && o.run_id == ss.run_id && o.name == ss.name) twins.push_back(&o);
    if (twins.empty()) continue;
    const Variant& v = ss.steps.front().v;
    for (const auto& [col, prefix, unit] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"max_tokens_per_step", "tok", ""}, {"kv_pool_tokens", "kv", ""}, {"kv_policy", "", ""},
             {"batch_timeout_ms", "wait", "ms"}}) {
      const std::string mine = setting(v, col);
      const bool differs = std::any_of(twins.begin(), twins.end(),
                                       [&](const ServingSeries* o) { return setting(o->steps.front().v, col) != mine; });
      if (differs && !mine.empty()) extra[i] += " " + prefix + mine + unit;
    }
  }
  // Prefix cache off beside on (schema 9): short_name marks only "prefix-cache"; the other is
  // named too, rather than by the settings it shares with it.
  const auto prefix_of = [](const ServingSeries& ss) { return ss.steps.front().v.get("prefix_cache"); };
  const bool any_prefix = std::any_of(sv.series.begin(), sv.series.end(), [&](const ServingSeries& ss) {
    const auto p = prefix_of(ss);
    return p && *p > 0;
  });
  for (size_t i = 0; i < sv.series.size(); ++i)
    if (const auto p = prefix_of(sv.series[i]); any_prefix && p && *p == 0) extra[i] += " no-prefix-cache";
  for (size_t i = 0; i < sv.series.size(); ++i) sv.series[i].name += extra[i];
  // The settings every series shares are said once (Serving::common); the names keep what tells
  // the series apart ("batching=none", "b8 batching=continuous").
  auto words = [](const std::string& name) {
    std::vector<std::string> w;
    std::istringstream is(name);
    for (std::string x; is >> x;) w.push_back(x);
    return w;
  };
  std::vector<std::string> common = words(sv.series.front().name);
  for (const auto& ss : sv.series) {
    const auto w = words(ss.name);
    common.erase(std::remove_if(common.begin(), common.end(),
                                [&](const std::string& x) { return std::find(w.begin(), w.end(), x) == w.end(); }),
                 common.end());
  }
  for (auto& ss : sv.series) {
    std::string rest;
    for (const auto& x : words(ss.name))
      if (std::find(common.begin(), common.end(), x) == common.end()) rest += (rest.empty() ? "" : " ") + x;
    if (!rest.empty() && sv.series.size() > 1) ss.name = rest;
    if (run_ids.size() > 1) ss.name = "run " + std::to_string(ss.run_id) + ": " + ss.name;
    ss.curve.name = ss.name;
  }
  if (sv.series.size() > 1)
    for (const auto& x : common) sv.common += (sv.common.empty() ? "" : " ") + x;
  for (const Slo& slo : sv.slos) {
    const std::string col = slo.column();
    if (std::none_of(sv.metrics.begin(), sv.metrics.end(), [&](const ServingMetric& m) { return m.column == col; }))
      sv.metrics.push_back({col, serving_metric_title(col), slo});
  }
  if (sv.metrics.empty())
    for (const char* col : {"ttft_p99_ms", "tpot_p99_ms"}) sv.metrics.push_back({col, serving_metric_title(col), std::nullopt});
  // The first token first, then the time per token, then the rest (as they happen to a request).
  static const std::vector<std::string> kOrder{"queue", "ttft", "tpot", "service", "latency"};
  auto rank = [](const ServingMetric& m) {
    const auto slo = parse_slo_key(m.column);
    const auto it = std::find(kOrder.begin(), kOrder.end(), slo ? slo->metric : "");
    return std::make_pair(it - kOrder.begin(), slo ? slo->percentile : 0);
  };
  std::stable_sort(sv.metrics.begin(), sv.metrics.end(),
                   [&](const ServingMetric& a, const ServingMetric& b) { return rank(a) < rank(b); });
  bool tpot = false;
  for (const auto& ss : sv.series)
    for (const auto& st : ss.steps) {
      sv.x_achieved = sv.x_achieved && st.achieved_qps.has_value();
      tpot = tpot || st.v.get("tpot_p99_ms") || st.v.get("tpot_p50_ms");
    }
  sv.occupancy_metric = tpot ? "tpot" : "itl";
  return sv;
}

std::vector<std::string> Serving::notes() const {
  std::vector<std::string> out;
  if (empty()) return out;
  if (!common.empty()) out.push_back("Every series: " + common + ".");
  for (const auto& ss : series) out.push_back(ss.name + ": " + ss.curve.knee_text() + ".");
  if (!x_achieved) out.push_back("x = the offered rate: some step did not measure its achieved throughput.");
  // Unmeasured values, one line per (series, what, reason), with the rates it concerns.
  for (const auto& ss : series) {
    std::map<std::string, std::vector<std::string>> why;  // "what: reason" -> rates
    for (const auto& st : ss.steps) {
      const std::string at = fmt_num(st.offered_qps, 4);
      for (const auto& m : metrics)
        if (!st.v.get(m.column)) why[m.title + ": not measured"].push_back(at);
      if (!st.goodput_qps) why["goodput: " + st.goodput_reason].push_back(at);
      if (!st.v.get("batch_occupancy_mean")) {
        const std::string r = st.v.text_of("batching_reason");
        why["batch occupancy: " +
            (r.empty() ? std::string("not recorded (no decoder batching in this system under test, or a run before schema 8)") : r)]
            .push_back(at);
      }
      if (!st.v.get("itl_p99_ms") && !st.v.text_of("itl_reason").empty()) why["ITL: " + st.v.text_of("itl_reason")].push_back(at);
    }
    for (const auto& [what, rates] : why) {
      std::string r;
      for (const auto& x : rates) r += (r.empty() ? "" : ", ") + x;
      out.push_back(str(ss.name, ": ", what, " (", rates.size() == ss.steps.size() ? "every step" : "at " + r + " qps", ")."));
    }
  }
  return out;
}

std::vector<std::string> Timeline::notes() const {
  std::vector<std::string> out;
  size_t no_queue = 0, no_latency = 0, failed = 0;
  for (const auto& r : requests) no_queue += !r.queue_ms, no_latency += !r.latency_ms, failed += !r.ok;
  if (requests.empty()) out.push_back(str("Requests of ", name, ": ", coverage(), "."));
  if (no_queue)
    out.push_back(str("Requests of ", name, ": the queue wait of ", no_queue, " was not measured (their bar starts at the arrival)."));
  if (no_latency) out.push_back(str("Requests of ", name, ": the latency of ", no_latency, " was not measured (no bar past the first token)."));
  if (failed) out.push_back(str("Requests of ", name, ": ", failed, " of those shown failed."));
  return out;
}

std::optional<std::pair<double, double>> TimelineRequest::queued() const {
  if (!queue_ms) return std::nullopt;
  return std::make_pair(scheduled_ms, scheduled_ms + *queue_ms);
}

std::optional<std::pair<double, double>> TimelineRequest::to_first_token() const {
  if (!ttft_ms) return std::nullopt;
  // The first token is timed from the scheduled arrival, the queue wait included.
  const double from = queue_ms && *queue_ms <= *ttft_ms ? *queue_ms : 0;
  return std::make_pair(scheduled_ms + from, scheduled_ms + *ttft_ms);
}

std::optional<std::pair<double, double>> TimelineRequest::decode() const {
  if (!ttft_ms || !latency_ms) return std::nullopt;
  return std::make_pair(scheduled_ms + *ttft_ms, scheduled_ms + std::max(*ttft_ms, *latency_ms));
}

std::optional<std::pair<double, double>> TimelineRequest::service() const {
  if (ttft_ms || !latency_ms) return std::nullopt;
  const double from = queue_ms && *queue_ms <= *latency_ms ? *queue_ms : 0;
  return std::make_pair(scheduled_ms + from, scheduled_ms + *latency_ms);
}

std::string Timeline::coverage() const {
  if (stored == 0) return "no per-request rows stored";
  const int64_t shown = static_cast<int64_t>(requests.size());
  std::string s = shown < stored ? str("the first ", shown, " of ", stored, " requests by arrival")
                                 : str(shown == 1 ? "the only request" : str("all ", shown, " requests"));
  if (queries > stored) s += str(" (the store kept ", stored, " of the ", queries, " completed)");
  return s;
}

Timeline timeline(Db& db, const Variant& v, int max_requests) {
  Timeline t;
  t.v = v;
  t.name = v.short_name(true);
  t.queries = static_cast<int64_t>(v.get("queries").value_or(0));
  t.stored = db.request_count(v.variant_id);
  for (const RequestRow& row : db.requests(v.variant_id, max_requests)) {
    TimelineRequest r;
    static_cast<RequestRow&>(r) = row;
    t.requests.push_back(r);
  }
  return t;
}

}  // namespace cibench::reports
