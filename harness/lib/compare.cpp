#include "harness/lib/compare.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "engines/core/error.h"
#include "harness/lib/metrics.h"
#include "harness/lib/schedule.h"
#include "harness/schema/stats.h"

namespace cibench {

std::string BootstrapCI::verdict() const {
  if (hi < 0) return "B lower";
  if (lo > 0) return "B higher";
  return "no significant difference";
}

BootstrapCI bootstrap_percentile_diff(const std::vector<double>& a, const std::vector<double>& b, double p,
                                      int resamples, uint64_t seed) {
  CIBENCH_CHECK(!a.empty() && !b.empty(), "bootstrap needs two non-empty samples (got ", a.size(), " and ", b.size(), ")");
  CIBENCH_CHECK(resamples >= 10, "bootstrap needs at least 10 resamples");
  BootstrapCI r;
  r.a = sample_stat(a, p);
  r.b = sample_stat(b, p);
  r.diff = r.b - r.a;
  r.resamples = resamples;
  // 95 % percentile interval (harness/schema/stats.h: the same as the reports compute).
  std::tie(r.lo, r.hi) = bootstrap_diff_ci(a, b, p, resamples, 0.95, seed);
  return r;
}

std::vector<double> variant_samples(Store& st, int64_t vid, const std::string& metric, bool* from_histogram) {
  static const std::vector<std::string> known{"latency", "queue", "service", "ttft", "tpot"};
  CIBENCH_CHECK(std::find(known.begin(), known.end(), metric) != known.end(), "unknown metric '", metric, "'");
  const auto q = st.query("SELECT queries, (SELECT COUNT(*) FROM requests WHERE variant_id = v.variant_id) "
                          "FROM variants v WHERE variant_id = ?", {vid});
  std::vector<double> out;
  const bool all = !q.rows.empty() && sql_to_string(q.rows[0][0]) == sql_to_string(q.rows[0][1]);
  *from_histogram = !all;
  if (all) {
    const auto r = st.query(str("SELECT ", metric, "_ms FROM requests WHERE variant_id = ? AND ok = 1 AND ", metric,
                                "_ms IS NOT NULL"), {vid});
    for (const auto& row : r.rows) out.push_back(std::get<double>(row[0]));
    return out;
  }
  const auto h = st.query("SELECT bucket_low_ns, bucket_high_ns, count FROM histograms WHERE variant_id = ? AND metric = ?",
                          {vid, metric});
  for (const auto& row : h.rows) {
    const double mid = (static_cast<double>(std::get<int64_t>(row[0])) + static_cast<double>(std::get<int64_t>(row[1]) - 1)) / 2 * 1e-6;
    out.insert(out.end(), static_cast<size_t>(std::get<int64_t>(row[2])), mid);
  }
  return out;
}

nlohmann::json compare_runs(Store& st, int64_t run_a, int64_t run_b, int resamples, uint64_t seed) {
  const std::string sql = "SELECT variant_id, label, step_index, status FROM variants WHERE run_id = ? ORDER BY variant_index, step_index";
  const auto va = st.query(sql, {run_a}), vb = st.query(sql, {run_b});
  nlohmann::json out;
  out["run_a"] = run_a;
  out["run_b"] = run_b;
  out["method"] = str("difference B - A of nearest-rank percentiles; 95% percentile-bootstrap interval, ", resamples,
                      " resamples, seed ", seed);
  out["variants"] = nlohmann::json::array();
  out["unmatched"] = nlohmann::json::array();
  for (const auto& ra : va.rows) {
    const std::string label = sql_to_string(ra[1]);
    const auto step = sql_to_string(ra[2]);
    const std::vector<SqlValue>* match = nullptr;
    for (const auto& rb : vb.rows)
      if (sql_to_string(rb[1]) == label && sql_to_string(rb[2]) == step) match = &rb;
    if (!match) {
      out["unmatched"].push_back(label + " (only in A)");
      continue;
    }
    nlohmann::json v;
    v["label"] = label;
    v["step_index"] = std::stoll(step);
    v["variant_a"] = std::get<int64_t>(ra[0]);
    v["variant_b"] = std::get<int64_t>((*match)[0]);
    if (sql_to_string(ra[3]) != "ok" || sql_to_string((*match)[3]) != "ok") {
      v["note"] = str("not compared: status A ", sql_to_string(ra[3]), ", B ", sql_to_string((*match)[3]));
      out["variants"].push_back(v);
      continue;
    }
    for (const std::string metric : {"latency", "ttft", "tpot"}) {
      bool ha = false, hb = false;
      const auto sa = variant_samples(st, std::get<int64_t>(ra[0]), metric, &ha);
      const auto sb = variant_samples(st, std::get<int64_t>((*match)[0]), metric, &hb);
      if (sa.empty() || sb.empty()) continue;
      nlohmann::json m;
      m["n_a"] = sa.size();
      m["n_b"] = sb.size();
      m["from_histogram"] = ha || hb;
      for (double p : {50.0, 95.0}) {
        const BootstrapCI ci = bootstrap_percentile_diff(sa, sb, p, resamples, seed);
        m[p == 50 ? "p50" : "p95"] = {{"a_ms", ci.a}, {"b_ms", ci.b}, {"diff_ms", ci.diff},
                                      {"ci95_lo_ms", ci.lo}, {"ci95_hi_ms", ci.hi}, {"verdict", ci.verdict()}};
      }
      v[metric] = m;
    }
    out["variants"].push_back(v);
  }
  for (const auto& rb : vb.rows) {
    bool found = false;
    for (const auto& ra : va.rows) found |= sql_to_string(ra[1]) == sql_to_string(rb[1]) && sql_to_string(ra[2]) == sql_to_string(rb[2]);
    if (!found) out["unmatched"].push_back(sql_to_string(rb[1]) + " (only in B)");
  }
  return out;
}

}  // namespace cibench
