#include "harness/schema/stats.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "engines/core/error.h"
#include "engines/core/splitmix.h"

namespace cibench {

size_t percentile_rank(double p, size_t n) {
  const int64_t r = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(n) - 1e-9));
  return static_cast<size_t>(std::clamp<int64_t>(r, 1, static_cast<int64_t>(n)));
}

double sample_stat(std::vector<double> v, double p) {
  CIBENCH_CHECK(!v.empty(), "sample_stat of an empty sample");
  if (p <= 0) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }
  const size_t r = percentile_rank(p, v.size());
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(r - 1), v.end());
  return v[r - 1];
}

bool percentile_is_max(double p, size_t n) { return p > 0 && n > 0 && percentile_rank(p, n) == n; }

size_t min_n_below_max(double p) {
  size_t n = 1;
  while (percentile_is_max(p, n) && n < 100000000) ++n;
  return n;
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

std::string PercentileDiff::small_sample_warning() const {
  if (!a_is_max && !b_is_max) return "";
  std::ostringstream os;
  os << "p" << p << " of " << (a_is_max && b_is_max ? "A and B is each one's" : a_is_max ? "A is its" : "B is its")
     << " sample maximum (n = ";
  if (a_is_max) os << n_a;
  if (a_is_max && b_is_max) os << " and ";
  if (b_is_max) os << n_b;
  os << "; nearest rank needs n >= " << min_n_below_max(p) << " to be below the maximum)";
  return os.str();
}

PercentileDiff percentile_diff(std::vector<double> a, std::vector<double> b, double p, int resamples, uint64_t seed,
                               double confidence) {
  CIBENCH_CHECK(!a.empty() && !b.empty(), "percentile_diff needs two non-empty samples (got ", a.size(), " and ",
                b.size(), ")");
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  PercentileDiff d;
  d.p = p;
  d.n_a = a.size();
  d.n_b = b.size();
  d.a = sample_stat(a, p);
  d.b = sample_stat(b, p);
  d.diff = d.b - d.a;
  if (d.a != 0) d.change_pct = 100.0 * d.diff / d.a;
  std::tie(d.lo, d.hi) = bootstrap_diff_ci(a, b, p, resamples, confidence, seed);
  d.confidence = confidence;
  d.resamples = resamples;
  d.seed = seed;
  d.a_is_max = percentile_is_max(p, d.n_a);
  d.b_is_max = percentile_is_max(p, d.n_b);
  return d;
}

}  // namespace cibench
