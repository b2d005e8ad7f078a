#pragma once
// The statistics every stored figure is defined by, once for the harness (which computes them
// when it runs and when `cibench compare` is asked) and the readers (the reports and the GUI,
// which recompute the compare without the harness): the nearest-rank percentile and the
// percentile-bootstrap interval of a difference.
#include <cstdint>
#include <utility>
#include <vector>

namespace cibench {

// Nearest-rank percentile of a sample (the harness's estimator: the ceil(p/100 n)-th smallest),
// 0 < p <= 100; p <= 0 gives the mean. Throws Error on an empty sample.
double sample_stat(std::vector<double> v, double p);

// Percentile-bootstrap interval of stat(b) - stat(a), stat = sample_stat(., p): both samples
// resampled with replacement (a first, then b) from one splitmix64 stream seeded with
// splitmix64(seed); the interval's ends are nearest-rank percentiles of the sorted differences
// ((1 - confidence) / 2 and its complement, rounded so that 0.95 gives exactly 2.5 and 97.5).
std::pair<double, double> bootstrap_diff_ci(const std::vector<double>& a, const std::vector<double>& b, double p,
                                            int resamples, double confidence, uint64_t seed);

}  // namespace cibench
