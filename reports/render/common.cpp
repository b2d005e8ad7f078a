#include "reports/render/sections.h"

#include <chrono>
#include <ctime>

namespace cibench::reports {
// 20 distinct line colours: the 16 curves a chart draws at most never share one (as cibench-gui's).
namespace {
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                          "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
}  // namespace

const char* palette(size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string run_prefix(const ReportData& d, const Variant& v) {
  return d.runs.size() > 1 ? "run " + std::to_string(v.run_id) + ": " : "";
}

std::string display_name(const ReportData& d, const Variant& v) { return run_prefix(d, v) + v.short_name(); }
// "0.813 [0.788, 0.839]" from a column and its _lo/_hi interval; "n/a" when not measured.
std::string with_interval(const Variant& v, const std::string& col) {
  const auto x = v.get(col);
  if (!x) return "n/a";
  const auto lo = v.get(col + "_lo"), hi = v.get(col + "_hi");
  return fmt_num(*x) + (lo && hi ? " [" + fmt_num(*lo) + ", " + fmt_num(*hi) + "]" : "");
}

bool any_has(const ReportData& d, const std::string& col) {
  for (const Variant& v : d.variants)
    if (v.get(col)) return true;
  return false;
}
std::string metric_title(const std::string& m) {
  if (m == "ttft") return "time to first token";
  if (m == "tpot") return "time per output token";
  if (m == "queue") return "queue wait";
  if (m == "service") return "service time";
  return "latency";
}

std::string pct_name(double p) { return p == 100 ? std::string("max") : str("p", fmt_num(p, 3)); }
std::string ms_cell(const std::optional<double>& v) { return v ? fmt_num(*v, 4) : "n/a"; }
std::string step_tip(const ServingSeries& ss, const ServingStep& st) {
  return str(ss.name, " @", fmt_num(st.offered_qps, 3), " qps offered, ", fmt_opt(st.achieved_qps), " req/s achieved\n",
             st.verdict.summary());
}
}  // namespace cibench::reports
