#pragma once
// Cost per answer (docs/fleet.md): what a host type's hour buys at a variant's sustainable rate.
// The rate is the knee (the highest offered rate meeting the run's SLOs, a stepped run) or, where
// there is no knee, the measured throughput; a million output tokens and a thousand requests are
// priced at it. Unmeasured stays unmeasured: no rate, no tokens or no price is nullopt with the
// reason.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cibench {

class Store;

struct CostInput {
  double price_per_hour = 0;
  std::optional<double> knee_qps;       // variants.knee_qps (stepped runs)
  bool knee_reached = true;             // false: every rate tried met the SLOs (the knee is a lower bound)
  std::optional<double> achieved_qps;   // the measured rate (of the step at the knee, or the row)
  std::optional<double> output_tokens;  // output tokens of the measured row
  std::optional<double> queries;        // requests of the measured row
  std::optional<double> duration_s;
};

struct Cost {
  std::optional<double> qps;                    // the rate priced
  std::optional<double> tokens_per_s;           // output tokens per second at that rate
  std::optional<double> per_thousand_requests;  // in the host type's currency
  std::optional<double> per_million_tokens;
  // "knee 4 queries/s", "knee >= 18 queries/s (every rate tried met the SLOs)" or
  // "measured 2.1 queries/s"
  std::string basis;
  std::string reason;  // why a figure is missing ("" when both are there)
};
Cost cost_per_answer(const CostInput& in);

// One variant of a scenario on one host type, priced (the store's host_types and runs.host_type).
struct HostCost {
  std::string host_type;
  double price_per_hour = 0;
  std::string currency;
  int64_t run_id = 0;
  int64_t variant_index = 0;
  std::string label;
  bool meets_floor = false;  // quality verdict pass, or no floor stated
  bool meets_slo = false;    // slo_met, or a knee (a stepped run meets its SLOs up to it)
  bool valid = true;         // the row priced is valid (it kept up with its schedule)
  std::optional<double> p95_ms;  // latency p95 at the rate priced
  Cost cost;
};
// Every ok variant of the runs of `scenario` whose host type has a price, one row per variant
// (a stepped run's at its knee step). `runs` restricts to these run ids when not empty.
std::vector<HostCost> host_costs(Store& st, const std::string& scenario, const std::vector<int64_t>& runs = {});

// Per host type, the cheapest valid variant (per thousand requests) meeting the quality floor and
// the SLOs, cheapest host first; host types with none come last (best = nullopt) with the reason.
struct HostRank {
  std::string host_type;
  double price_per_hour = 0;
  std::string currency;
  std::optional<HostCost> best;
  size_t variants = 0;
  std::string reason;
};
std::vector<HostRank> rank_host_types(const std::vector<HostCost>& costs);

}  // namespace cibench
