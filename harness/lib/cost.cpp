#include "harness/lib/cost.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engines/core/error.h"
#include "harness/lib/store.h"

namespace cibench {
namespace {

std::string rate_text(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", q);
  return buf;
}

}  // namespace

Cost cost_per_answer(const CostInput& in) {
  Cost c;
  if (in.knee_qps && *in.knee_qps > 0) {
    c.qps = in.knee_qps;
    c.basis = in.knee_reached ? "knee " + rate_text(*in.knee_qps) + " queries/s"
                              : "knee >= " + rate_text(*in.knee_qps) + " queries/s (every rate tried met the SLOs)";
  } else if (in.achieved_qps && *in.achieved_qps > 0) {
    c.qps = in.achieved_qps;
    c.basis = "measured " + rate_text(*in.achieved_qps) + " queries/s";
  } else {
    c.reason = "no rate: neither a knee nor a measured throughput";
    return c;
  }
  const double per_s = in.price_per_hour / 3600.0;
  c.per_thousand_requests = per_s / *c.qps * 1000.0;
  // Output tokens per request of the measured row, at the priced rate.
  if (in.output_tokens && *in.output_tokens > 0 && in.queries && *in.queries > 0) {
    c.tokens_per_s = *c.qps * (*in.output_tokens / *in.queries);
    c.per_million_tokens = per_s / *c.tokens_per_s * 1e6;
  } else {
    c.reason = "no output tokens (a classifier, or none counted): per million tokens not priced";
  }
  return c;
}

std::vector<HostCost> host_costs(Store& st, const std::string& scenario, const std::vector<int64_t>& runs) {
  const auto r = st.query(
      "SELECT r.run_id, r.host_type, h.price_per_hour, h.currency, r.floors_json, v.variant_index, v.step_index, "
      "v.label, v.status, v.knee_qps, v.offered_qps, v.achieved_qps, v.output_tokens, v.queries, v.duration_s, "
      "v.latency_p95_ms, v.slo_met, v.quality_verdict, v.knee_reached, v.valid "
      "FROM variants v JOIN runs r ON r.run_id = v.run_id JOIN host_types h ON h.name = r.host_type "
      "WHERE r.scenario_name = ? ORDER BY r.run_id, v.variant_index, v.step_index",
      {scenario});
  std::map<std::pair<int64_t, int64_t>, std::vector<const std::vector<SqlValue>*>> by_variant;
  std::vector<std::pair<int64_t, int64_t>> order;
  for (const auto& row : r.rows) {
    const int64_t run = std::get<int64_t>(row[0]);
    if (!runs.empty() && std::find(runs.begin(), runs.end(), run) == runs.end()) continue;
    const std::pair<int64_t, int64_t> key{run, std::get<int64_t>(row[5])};
    if (!by_variant.count(key)) order.push_back(key);
    by_variant[key].push_back(&row);
  }
  std::vector<HostCost> out;
  for (const auto& key : order) {
    const auto& rows = by_variant[key];
    const auto& first = *rows.front();
    HostCost h;
    h.run_id = key.first;
    h.variant_index = key.second;
    h.host_type = sql_to_string(first[1]);
    h.price_per_hour = sql_number(first[2]).value_or(0);
    h.currency = sql_to_string(first[3]);
    h.label = sql_to_string(first[7]);
    // The row priced: the knee's step, else the last step that met the SLOs, else the first row.
    const std::vector<SqlValue>* at = nullptr;
    std::optional<double> knee;
    for (const auto* row : rows)
      if (auto k = sql_number((*row)[9])) knee = k;
    bool any_ok = false;
    for (const auto* row : rows) {
      if (sql_to_string((*row)[8]) != "ok") continue;
      any_ok = true;
      if (knee) {
        if (auto off = sql_number((*row)[10]); off && std::fabs(*off - *knee) <= 1e-9 * std::max(1.0, *knee)) at = row;
      } else if (sql_number((*row)[16]).value_or(1) != 0 || !at) {
        at = row;
      }
    }
    if (!any_ok) continue;  // failed variants are not priced
    if (!at) at = rows.front();
    const auto& m = *at;
    h.label = sql_to_string(m[7]);
    CostInput in;
    in.price_per_hour = h.price_per_hour;
    in.knee_qps = knee;
    for (const auto* row : rows)
      if (auto kr = sql_number((*row)[18])) in.knee_reached = *kr != 0;
    in.achieved_qps = sql_number(m[11]);
    in.output_tokens = sql_number(m[12]);
    in.queries = sql_number(m[13]);
    in.duration_s = sql_number(m[14]);
    h.cost = cost_per_answer(in);
    h.p95_ms = sql_number(m[15]);
    h.valid = sql_number(m[19]).value_or(1) != 0;
    const auto slo = sql_number(m[16]);
    h.meets_slo = knee ? true : slo.value_or(1) != 0;
    const std::string verdict = sql_to_string(m[17]);
    const std::string floors = sql_to_string(first[4]);
    h.meets_floor = verdict == "pass" || verdict == "no floor" || (verdict.empty() && (floors.empty() || floors == "[]"));
    out.push_back(h);
  }
  return out;
}

std::vector<HostRank> rank_host_types(const std::vector<HostCost>& costs) {
  std::vector<HostRank> ranks;
  for (const auto& c : costs) {
    auto it = std::find_if(ranks.begin(), ranks.end(), [&](const HostRank& r) { return r.host_type == c.host_type; });
    if (it == ranks.end()) {
      HostRank r;
      r.host_type = c.host_type;
      r.price_per_hour = c.price_per_hour;
      r.currency = c.currency;
      ranks.push_back(r);
      it = ranks.end() - 1;
    }
    ++it->variants;
    if (!c.meets_floor || !c.meets_slo || !c.valid || !c.cost.per_thousand_requests) continue;
    if (!it->best || *c.cost.per_thousand_requests < *it->best->cost.per_thousand_requests) it->best = c;
  }
  for (auto& r : ranks)
    if (!r.best) r.reason = str("none of its ", r.variants, " variants is valid and meets the quality floor and the SLOs");
  std::stable_sort(ranks.begin(), ranks.end(), [](const HostRank& a, const HostRank& b) {
    if (a.best.has_value() != b.best.has_value()) return a.best.has_value();
    if (!a.best) return false;
    return *a.best->cost.per_thousand_requests < *b.best->cost.per_thousand_requests;
  });
  return ranks;
}

}  // namespace cibench
