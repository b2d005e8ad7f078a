#include "harness/lib/compare.h"

#include "engines/core/error.h"

namespace cibench {

std::string BootstrapCI::verdict() const {
  if (hi < 0) return "B lower";
  if (lo > 0) return "B higher";
  return "no significant difference";
}

BootstrapCI bootstrap_percentile_diff(const std::vector<double>& a, const std::vector<double>& b, double p,
                                      int resamples, uint64_t seed) {
  CIBENCH_CHECK(resamples >= 10, "bootstrap needs at least 10 resamples");
  const PercentileDiff d = percentile_diff(a, b, p, resamples, seed, 0.95);
  BootstrapCI r;
  r.a = d.a;
  r.b = d.b;
  r.diff = d.diff;
  r.lo = d.lo;
  r.hi = d.hi;
  r.resamples = resamples;
  return r;
}

}  // namespace cibench
