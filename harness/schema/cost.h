#pragma once
// Cost per answer (docs/fleet.md): what a host type's hour buys at a variant's sustainable rate.
// The rate is the knee (the highest offered rate meeting the run's SLOs, a stepped run) or, where
// there is no knee, the measured throughput; a thousand requests and a million output tokens are
// priced at it. Unmeasured stays unmeasured: no rate, no tokens or no price is nullopt with the
// reason. Arithmetic over stored rows only, shared by `cibench show` (harness) and the reports and
// dashboard (reports/analysis/hosts), each reading the rows with kPricedRowsSql.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/schema/sql_value.h"

namespace cibench {

struct CostInput {
  double price_per_hour = 0;
  std::optional<double> knee_qps;       // variants.knee_qps (stepped runs)
  bool knee_reached = true;             // false: every rate tried met the SLOs (the knee is a lower bound)
  std::optional<double> achieved_qps;   // the measured rate (of the step at the knee, or the row)
  std::optional<double> output_tokens;  // output tokens of the measured row
  std::optional<double> queries;        // requests of the measured row
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

// The variant rows of one scenario on priced host types (schema 14: runs.host_type joined with
// host_types), by run, variant and step; one parameter, the scenario name. Read each row with
// priced_row.
extern const char* const kPricedRowsSql;

struct PricedRow {
  int64_t run_id = 0, variant_index = 0, step_index = 0, variant_id = 0;
  std::string host_type, currency, floors_json, label, status, quality_verdict;
  double price_per_hour = 0;
  std::optional<double> knee_qps, knee_reached, offered_qps, achieved_qps, output_tokens, queries, p95_ms, slo_met,
      valid;
};
PricedRow priced_row(const std::vector<SqlValue>& row);

// One variant of a scenario on one host type, priced.
struct HostCost {
  std::string host_type;
  double price_per_hour = 0;
  std::string currency;
  int64_t run_id = 0;
  int64_t variant_index = 0;
  int64_t variant_id = 0;    // the row priced
  std::string label;         // of the row priced (a stepped run's: its rate)
  bool meets_floor = false;  // quality verdict pass or no floor, or no floor stated
  bool meets_slo = false;    // slo_met, or a knee (a stepped run meets its SLOs up to it)
  bool valid = true;         // the row priced is valid (it kept up with its schedule)
  std::optional<double> p95_ms;  // latency p95 at the rate priced
  Cost cost;
};
// One HostCost per ok variant of `rows` (a stepped run's at its knee step); `runs` restricts to
// these run ids when not empty.
std::vector<HostCost> price_variants(const std::vector<PricedRow>& rows, const std::vector<int64_t>& runs = {});

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
