#include "harness/lib/cost.h"

#include "harness/lib/store.h"

namespace cibench {

std::vector<HostCost> host_costs(Store& st, const std::string& scenario, const std::vector<int64_t>& runs) {
  std::vector<PricedRow> rows;
  for (const auto& r : st.query(kPricedRowsSql, {scenario}).rows) rows.push_back(priced_row(r));
  return price_variants(rows, runs);
}

}  // namespace cibench
