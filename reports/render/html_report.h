#pragma once
// The HTML reporter: one self-contained page (inline SVG charts, no script, no network).
#include <string>

#include "reports/report.h"

namespace cibench::reports {

std::string render_html(const ReportData& d);

}  // namespace cibench::reports
