#pragma once
// What the two reporters (html_report.cpp, markdown_report.cpp) share: every table as rows of
// cells, rendered to both formats so that they cannot drift apart, and the text lines (verdicts,
// knees, notes, unavailable counters) both documents print. Internal to reports/render/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/report.h"

namespace cibench::reports {

// A table as rows of cells.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_class;  // HTML only ("frontier", "below", "")
};

// ---- shared helpers (common.cpp) -----------------------------------------------------------------

// 20 distinct line colours: the 16 curves a chart draws at most never share one (as cibench-gui's).
const char* palette(size_t i);
// The most curves a chart draws (more cannot be told apart, nor listed in its legend).
constexpr size_t kMaxCurves = 16;
std::string utc_now();
// "run 3: " when the report shows several runs, else "".
std::string run_prefix(const ReportData& d, const Variant& v);
std::string display_name(const ReportData& d, const Variant& v);
// "0.813 [0.788, 0.839]" from a column and its _lo/_hi interval; "n/a" when not measured.
std::string with_interval(const Variant& v, const std::string& col);
bool any_has(const ReportData& d, const std::string& col);
std::string metric_title(const std::string& m);  // "time to first token" for ttft, ...
std::string pct_name(double p);                  // "p99", "max"
std::string ms_cell(const std::optional<double>& v);
std::string step_tip(const ServingSeries& ss, const ServingStep& st);

// ---- the tables (tables.cpp) --------------------------------------------------------------------

// One pasteable row per configuration (per step of a stepped run), in the spirit of llama-bench
// and vLLM's serving summary; only the columns some variant measured.
Table lead_table(const ReportData& d);
Table slo_table(const ReportData& d);
// The task accuracy and its interval per variant, where stored (classifiers); no rows otherwise.
Table accuracy_table(const ReportData& d);
Table frontier_table(const ReportData& d);
Table ranked_table(const ReportData& d);
Table serving_table(const ReportData& d);
Table timeline_table(const Timeline& tl);
Table cache_table(const ReportData& d);
Table compare_table(const Comparison& c);
// The counters measured for some variant, one column each; "n/a" where a variant lacks one.
Table counters_table(const ReportData& d);
// Host types ranked by cost per answer at the quality floor, one table per scenario (and the
// priced variants of every host type); empty when no host type is priced.
Table host_rank_table(const HostsScenario& s);
Table host_cost_table(const HostsScenario& s);
Table provenance_table(const RunInfo& run, const std::vector<std::pair<std::string, std::string>>& prov);

// One run's table of the speculative section, with the footnotes its "—" cells point to.
struct SpecTable {
  int64_t run = 0;
  Table t;
  std::vector<std::string> footnotes;  // "[1] spec_speedup: REASON"
};
// The speculative rows and off baselines of each run as tables: one row per variant, the lowest
// TPOT p95 of each build marked; a value not measured is "—" with a footnote giving the reason.
std::vector<SpecTable> speculative_tables(const ReportData& d);

// ---- the text lines (tables.cpp) ----------------------------------------------------------------

// Every quality floor of every run with how many variants meet it, a floor set by the user, and
// the knee of every stepped curve.
std::vector<std::string> verdict_lines(const ReportData& d);
std::vector<std::string> knee_lines(const ReportData& d);
// "Every variant ran on 2 cores (...): no scaling to chart." when one core count only; "" otherwise.
std::string single_core_count(const ReportData& d);
std::vector<std::string> compare_notes(const Comparison& c);
// The serving section's notes: each series' knee, and every value not measured with the reason
// (the timelines' notes follow).
std::vector<std::string> serving_notes(const ReportData& d);
// The hosts section's note: how cost per answer is priced.
extern const char* const kHostsNote;
// The speculative section's notes: the lowest TPOT p95 per run and build, the rows left out and why.
std::vector<std::string> speculative_notes(const ReportData& d);
// The counters unavailable for some variant, one line per reason naming the variants.
std::vector<std::string> counter_gap_lines(const ReportData& d);

extern const char* const kLeadNote;
extern const char* const kServingNote;
extern const char* const kSpeculativeNote;
extern const char* const kCacheNote;
extern const char* const kCountersNote;

}  // namespace cibench::reports
