#include "harness/schema/stats.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"
#include "engines/core/splitmix.h"

namespace cibench {

double sample_stat(std::vector<double> v, double p) {
  CIBENCH_CHECK(!v.empty(), "sample_stat of an empty sample");
  if (p <= 0) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }
  const double n = static_cast<double>(v.size());
  int64_t r = static_cast<int64_t>(std::ceil(p / 100.0 * n - 1e-9));
  r = std::clamp<int64_t>(r, 1, static_cast<int64_t>(v.size()));
  std::nth_element(v.begin(), v.begin() + (r - 1), v.end());
  return v[static_cast<size_t>(r - 1)];
}

std::pair<double, double> bootstrap_diff_ci(const std::vector<double>& a, const std::vector<double>& b, double p,
                                            int resamples, double confidence, uint64_t seed) {
  CIBENCH_CHECK(!a.empty() && !b.empty(), "bootstrap needs two non-empty samples (got ", a.size(), " and ",
                b.size(), ")");
  CIBENCH_CHECK(resamples >= 10, "bootstrap needs at least 10 resamples, got ", resamples);
  uint64_t s = splitmix64(seed);
  std::vector<double> diffs;
  diffs.reserve(static_cast<size_t>(resamples));
  std::vector<double> ra(a.size()), rb(b.size());
  for (int r = 0; r < resamples; ++r) {
    for (double& x : ra) x = a[splitmix64_next(s) % a.size()];
    for (double& x : rb) x = b[splitmix64_next(s) % b.size()];
    diffs.push_back(sample_stat(rb, p) - sample_stat(ra, p));
  }
  std::sort(diffs.begin(), diffs.end());
  const double tail = std::round((1 - confidence) / 2 * 100 * 1e6) / 1e6;
  return {sample_stat(diffs, std::max(tail, 1e-9)), sample_stat(diffs, 100 - tail)};
}

}  // namespace cibench
