#pragma once
// Host types side by side (docs/fleet.md): for each scenario of the runs given, that scenario's
// variants on every priced host type in the store (the runs `cibench fleet collect` merged), each
// priced at its knee or measured rate (harness/schema/cost.h), and the host types ranked by the
// cost of their cheapest variant meeting the quality floor and the SLOs.
#include <string>
#include <vector>

#include "harness/schema/cost.h"
#include "reports/db.h"

namespace cibench::reports {

struct HostsScenario {
  std::string scenario;
  std::vector<HostCost> costs;  // by run, variant
  std::vector<HostRank> ranks;  // cheapest first
  // The Pareto frontier of cost per thousand requests against p95 among the valid variants
  // meeting the floor and the SLOs (indices into costs, by p95 ascending).
  std::vector<size_t> frontier;
  size_t host_types() const { return ranks.size(); }
};

struct Hosts {
  std::vector<HostsScenario> scenarios;  // only scenarios with at least one priced host type
  bool empty() const { return scenarios.empty(); }
};

Hosts hosts(Db& db, const std::vector<int64_t>& run_ids);

}  // namespace cibench::reports
