#include "reports/analysis/hosts.h"

#include <algorithm>
#include <limits>

namespace cibench::reports {

Hosts hosts(Db& db, const std::vector<int64_t>& run_ids) {
  Hosts h;
  std::vector<std::string> seen;
  for (int64_t id : run_ids) {
    const std::string scenario = db.run(id).scenario_name;
    if (std::find(seen.begin(), seen.end(), scenario) != seen.end()) continue;
    seen.push_back(scenario);
    HostsScenario s;
    s.scenario = scenario;
    s.costs = price_variants(db.priced_rows(scenario));
    if (s.costs.empty()) continue;
    s.ranks = rank_host_types(s.costs);
    // Frontier: by p95 ascending, each point cheaper than every one before it.
    std::vector<size_t> ok;
    for (size_t i = 0; i < s.costs.size(); ++i) {
      const HostCost& c = s.costs[i];
      if (c.meets_floor && c.meets_slo && c.valid && c.p95_ms && c.cost.per_thousand_requests) ok.push_back(i);
    }
    std::sort(ok.begin(), ok.end(), [&](size_t a, size_t b) {
      if (*s.costs[a].p95_ms != *s.costs[b].p95_ms) return *s.costs[a].p95_ms < *s.costs[b].p95_ms;
      return *s.costs[a].cost.per_thousand_requests < *s.costs[b].cost.per_thousand_requests;
    });
    double best = std::numeric_limits<double>::infinity();
    for (size_t i : ok)
      if (*s.costs[i].cost.per_thousand_requests < best) {
        best = *s.costs[i].cost.per_thousand_requests;
        s.frontier.push_back(i);
      }
    h.scenarios.push_back(std::move(s));
  }
  return h;
}

}  // namespace cibench::reports
