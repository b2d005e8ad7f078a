#pragma once
// The statistics every stored figure is defined by, once for the harness (which computes them
// when it runs) and the readers (`cibench compare`, the reports and the GUI, which all compare
// runs through reports::compare_runs): the nearest-rank percentile and the percentile-bootstrap
// interval of a difference.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cibench {

// The 1-based rank of the nearest-rank percentile p of n values: ceil(p/100 n), clamped to
// [1, n]. 0 < p <= 100.
size_t percentile_rank(double p, size_t n);

// Nearest-rank percentile of a sample (the harness's estimator: the ceil(p/100 n)-th smallest),
// 0 < p <= 100; p <= 0 gives the mean. Throws Error on an empty sample.
double sample_stat(std::vector<double> v, double p);

// Whether the nearest-rank percentile p of n values is the sample maximum: ceil(p/100 n) = n,
// i.e. n < 1 / (1 - p/100) (p95: n < 20; p99: n < 100; p50: n = 1). Such a "p95" says nothing
// beyond the worst request seen.
bool percentile_is_max(double p, size_t n);

// Percentile-bootstrap interval of stat(b) - stat(a), stat = sample_stat(., p): both samples
// resampled with replacement (a first, then b) from one splitmix64 stream seeded with
// splitmix64(seed); the interval's ends are nearest-rank percentiles of the sorted differences
// ((1 - confidence) / 2 and its complement, rounded so that 0.95 gives exactly 2.5 and 97.5).
// The resamples index the samples as given: callers that read samples from a store go through
// percentile_diff, which fixes their order first.
std::pair<double, double> bootstrap_diff_ci(const std::vector<double>& a, const std::vector<double>& b, double p,
                                            int resamples, double confidence, uint64_t seed);

// The compare of one percentile of two samples, as `cibench compare`, the reports and the GUI show
// it: both samples sorted ascending first (so the interval does not depend on the order the values
// were read in), the nearest-rank percentile of each, B - A, the change relative to A, and the
// bootstrap interval of B - A.
struct PercentileDiff {
  double p = 0;
  size_t n_a = 0, n_b = 0;
  double a = 0, b = 0;
  double diff = 0;                   // b - a
  std::optional<double> change_pct;  // 100 (b - a) / a; nullopt when a = 0
  double lo = 0, hi = 0;             // the interval of b - a
  double confidence = 0.95;
  int resamples = 0;
  uint64_t seed = 0;
  bool a_is_max = false, b_is_max = false;  // percentile_is_max(p, n) for that side
  bool significant() const { return lo > 0 || hi < 0; }
  // "" or "p95 of A is its sample maximum (n = 6 < 20)" (both sides when both).
  std::string small_sample_warning() const;
};
PercentileDiff percentile_diff(std::vector<double> a, std::vector<double> b, double p, int resamples, uint64_t seed,
                               double confidence = 0.95);

// The smallest n for which the nearest-rank percentile p is not the sample maximum.
size_t min_n_below_max(double p);

}  // namespace cibench
