#include "reports/format.h"

#include <cmath>
#include <cstdio>

namespace cibench::reports {
std::string fmt_num(double v, int significant) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e7 || a < 1e-4)) std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
  else if (a >= std::pow(10.0, significant)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

std::string fmt_opt(const std::optional<double>& v, int significant) {
  return v ? fmt_num(*v, significant) : "n/a";
}

}  // namespace cibench::reports
