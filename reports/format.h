#pragma once
// Number formatting shared by the dashboard and the reports: one way to print a figure.
#include <optional>
#include <string>

namespace cibench::reports {

// "12.3", "0.987", "1.23e+04": `significant` digits, scientific outside [1e-4, 1e7).
std::string fmt_num(double v, int significant = 4);
std::string fmt_opt(const std::optional<double>& v, int significant = 4);  // "n/a" when absent

}  // namespace cibench::reports
