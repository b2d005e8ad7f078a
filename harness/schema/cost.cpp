#include "harness/schema/cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engines/core/error.h"

namespace cibench {
namespace {

std::string rate_text(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", q);
  return buf;
}

std::string text(const SqlValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return "";
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

const char* const kPricedRowsSql =
    "SELECT r.run_id, r.host_type, h.price_per_hour, h.currency, r.floors_json, v.variant_index, v.step_index, "
    "v.label, v.status, v.knee_qps, v.offered_qps, v.achieved_qps, v.output_tokens, v.queries, v.variant_id, "
    "v.latency_p95_ms, v.slo_met, v.quality_verdict, v.knee_reached, v.valid "
    "FROM variants v JOIN runs r ON r.run_id = v.run_id JOIN host_types h ON h.name = r.host_type "
    "WHERE r.scenario_name = ? ORDER BY r.run_id, v.variant_index, v.step_index";

PricedRow priced_row(const std::vector<SqlValue>& row) {
  PricedRow p;
  p.run_id = std::get<int64_t>(row.at(0));
  p.host_type = text(row[1]);
  p.price_per_hour = sql_number(row[2]).value_or(0);
  p.currency = text(row[3]);
  p.floors_json = text(row[4]);
  p.variant_index = std::get<int64_t>(row[5]);
  p.step_index = std::get<int64_t>(row[6]);
  p.label = text(row[7]);
  p.status = text(row[8]);
  p.knee_qps = sql_number(row[9]);
  p.offered_qps = sql_number(row[10]);
  p.achieved_qps = sql_number(row[11]);
  p.output_tokens = sql_number(row[12]);
  p.queries = sql_number(row[13]);
  p.variant_id = std::get<int64_t>(row[14]);
  p.p95_ms = sql_number(row[15]);
  p.slo_met = sql_number(row[16]);
  p.quality_verdict = text(row[17]);
  p.knee_reached = sql_number(row[18]);
  p.valid = sql_number(row[19]);
  return p;
}

std::vector<HostCost> price_variants(const std::vector<PricedRow>& rows_in, const std::vector<int64_t>& runs) {
  std::map<std::pair<int64_t, int64_t>, std::vector<const PricedRow*>> by_variant;
  std::vector<std::pair<int64_t, int64_t>> order;
  for (const auto& row : rows_in) {
    if (!runs.empty() && std::find(runs.begin(), runs.end(), row.run_id) == runs.end()) continue;
    const std::pair<int64_t, int64_t> key{row.run_id, row.variant_index};
    if (!by_variant.count(key)) order.push_back(key);
    by_variant[key].push_back(&row);
  }
  std::vector<HostCost> out;
  for (const auto& key : order) {
    const auto& rows = by_variant[key];
    const PricedRow& first = *rows.front();
    HostCost h;
    h.run_id = key.first;
    h.variant_index = key.second;
    h.host_type = first.host_type;
    h.price_per_hour = first.price_per_hour;
    h.currency = first.currency;
    // The row priced: the knee's step, else the last step that met the SLOs, else the first ok row.
    std::optional<double> knee;
    bool knee_reached = true;
    for (const auto* row : rows) {
      if (row->knee_qps) knee = row->knee_qps;
      if (row->knee_reached) knee_reached = *row->knee_reached != 0;
    }
    const PricedRow* at = nullptr;
    for (const auto* row : rows) {
      if (row->status != "ok") continue;
      if (knee) {
        if (row->offered_qps && std::fabs(*row->offered_qps - *knee) <= 1e-9 * std::max(1.0, *knee)) at = row;
      } else if (row->slo_met.value_or(1) != 0 || !at) {
        at = row;
      }
    }
    if (!at) {
      for (const auto* row : rows)
        if (row->status == "ok" && !at) at = row;
      if (!at) continue;  // failed variants are not priced
    }
    CostInput in;
    in.price_per_hour = h.price_per_hour;
    in.knee_qps = knee;
    in.knee_reached = knee_reached;
    in.achieved_qps = at->achieved_qps;
    in.output_tokens = at->output_tokens;
    in.queries = at->queries;
    h.cost = cost_per_answer(in);
    h.variant_id = at->variant_id;
    h.label = at->label;
    h.p95_ms = at->p95_ms;
    h.valid = at->valid.value_or(1) != 0;
    h.meets_slo = knee ? true : at->slo_met.value_or(1) != 0;
    // Accuracy is scored once per variant (a stepped run's first step): its verdict, from any row.
    std::string verdict = at->quality_verdict;
    for (const auto* row : rows)
      if (verdict.empty()) verdict = row->quality_verdict;
    h.meets_floor = verdict == "pass" || verdict == "no floor" ||
                    (verdict.empty() && (first.floors_json.empty() || first.floors_json == "[]"));
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
