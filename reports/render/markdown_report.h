#pragma once
// The Markdown reporter: the same tables and verdicts as the HTML page, without the charts.
#include <string>

#include "reports/report.h"

namespace cibench::reports {

std::string render_markdown(const ReportData& d);

}  // namespace cibench::reports
