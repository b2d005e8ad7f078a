#pragma once
// The report's charts as SVG models (render/svg.h): drawn by the HTML reporter, one function per
// section. Each takes the collected ReportData and returns nothing for a section without data.
#include <vector>

#include "reports/render/svg.h"
#include "reports/report.h"

namespace cibench::reports {

// Trade-off: colour = weight format, marker = sparsity, grey = below a quality floor, the Pareto
// frontier of the variants meeting the floors as a dashed line, the floor as a line.
svg::Chart tradeoff_chart(const ReportData& d);
// The latency CDF of every variant (at most kMaxCurves).
svg::Chart cdf_chart(const ReportData& d);
// Cost per thousand requests against latency p95 at the rate priced, one colour per host type,
// grey where a variant is below the quality floor, misses its SLOs or is invalid, the frontier
// (cheaper at every p95) dashed.
svg::Chart host_cost_chart(const HostsScenario& s);
// One chart per metric the run's SLOs bound (latency when none): the SLO's percentile (and p50)
// of every curve against the offered rate, with the SLO as a horizontal line.
std::vector<svg::Chart> load_charts(const ReportData& d);
// Throughput and latency against cores (threads x workers); empty with one core count.
std::vector<svg::Chart> scaling_charts(const ReportData& d);

// The serving section's charts: one throughput-latency chart per metric of Serving::metrics with
// the SLO lines and each series' knee, goodput against the offered rate, TPOT (or ITL) against the
// mean batch occupancy (when some step measured it), and one request timeline per series. Empty
// without serving data.
std::vector<svg::Chart> serving_charts(const ReportData& d);
// The speculative-decoding section's charts: speed-up against acceptance rate (one line per
// drafter over k, the points labelled "k=N", a dashed line at 1.0 = no gain), TPOT p95 against k
// with each build's off variant as a dashed line and the lowest TPOT p95 marked, and acceptance by
// draft position at each drafter's best k. Empty without speculative data.
std::vector<svg::Chart> speculative_charts(const ReportData& d);

}  // namespace cibench::reports
