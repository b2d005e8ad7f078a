#pragma once
// Hardware and software counters per variant: unavailable stays unavailable, with its reason (never
// a zero), and the gaps said once per reason.
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "reports/db.h"

namespace cibench::reports {
struct CounterValue {
  std::optional<double> value;
  std::string unit;
  std::string source;
  std::string reason;  // why unavailable (set exactly when !value)
};

struct CounterSummary {
  Variant v;
  std::string mode;  // counters_mode: separate | same
  std::map<std::string, CounterValue> values;  // keyed by counter_names()
};

// ipc, l1d_mpki, l2_mpki, l3_mpki, branch_mpki, energy_j, energy_per_request_j
const std::vector<std::string>& counter_names();
// The operating system's counters, measured without a PMU: task_clock_ms, context_switches,
// page_faults, cpu_migrations (CounterSummary::values holds them too).
const std::vector<std::string>& software_counter_names();
std::string counter_title(const std::string& name);  // "IPC", "L1D misses / 1000 instr", ...

// Which variants of `all` (every variant row of the runs, as Db::variants returns them) the rows
// `subset` are, numbered as cibench run and show number them: from 1, of the run's variants.
// "all 8 variants", "the only variant" (of a run of one), "variant 2 of 8", "variants 1-3, 5 of
// 8"; a stepped variant with only some
// of its steps in `subset`: "variant 2 (steps 1-2 of 4) of 3"; several runs, one part each:
// "run 3: variants 1-2 of 4; run 5: all 2 variants". "all" is said only when every variant (and
// step) of the run is in `subset`.
std::string variant_set_text(const std::vector<Variant>& subset, const std::vector<Variant>& all);

// Counters unavailable for some of `rows` (reports::counters), one entry per distinct reason, in the
// order of counter_names() then software_counter_names(); within a reason the counters that
// share the same variants are named together with those variants (variant_set_text against `all`).
struct CounterGap {
  std::string reason;
  struct Group {
    std::vector<std::string> counters;  // titles (counter_title)
    std::string variants;               // "all 8 variants", "variants 3-8 of 9"
  };
  std::vector<Group> groups;
  // "IPC, L1D misses / 1000 instr (variants 1, 3 of 4); energy (J) (all 4 variants): REASON"
  std::string text() const;
};
std::vector<CounterGap> counter_gaps(const std::vector<CounterSummary>& rows, const std::vector<Variant>& all);

// One summary per variant of the runs (the ones that ran, or have counters).
std::vector<CounterSummary> counters(Db& db, const std::vector<int64_t>& run_ids);

}  // namespace cibench::reports
