#pragma once
// How variants are named on screen: legends, tables, axis labels.
#include <string>
#include <vector>
#include "reports/db.h"

namespace cibench::reports {

// A harness label without the default settings: "int8 t2 w1 kv=preallocated isa=auto" ->
// "int8 t2 w1" (tables and axes; matching still uses the full label).
std::string compact_label(const std::string& label);

}  // namespace cibench::reports
