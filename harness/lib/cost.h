#pragma once
// Cost per answer read from the store (harness/schema/cost.h does the arithmetic).
#include <cstdint>
#include <string>
#include <vector>

#include "harness/schema/cost.h"

namespace cibench {

class Store;

// Every ok variant of the runs of `scenario` whose host type has a price, one row per variant
// (a stepped run's at its knee step). `runs` restricts to these run ids when not empty.
std::vector<HostCost> host_costs(Store& st, const std::string& scenario, const std::vector<int64_t>& runs = {});

}  // namespace cibench
