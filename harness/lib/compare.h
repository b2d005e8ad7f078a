#pragma once
// Comparing two runs: for each variant present in both, the difference (B - A) of the median and
// the p95 with a percentile-bootstrap 95 % confidence interval (each run's requests resampled
// with replacement, independently; the statistic is the nearest-rank percentile, as everywhere
// in cibench). Not a ratio of means: tails and medians are what users feel.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/lib/store.h"

namespace cibench {

struct BootstrapCI {
  double a = 0, b = 0;        // the percentile of each sample
  double diff = 0;            // b - a
  double lo = 0, hi = 0;      // 95 % interval of the difference
  int resamples = 0;
  // "B lower" / "B higher" when the interval excludes 0, else "no significant difference".
  std::string verdict() const;
};

// Nearest-rank percentile p of `a` and `b` and the bootstrap CI of b - a. Deterministic per seed.
BootstrapCI bootstrap_percentile_diff(const std::vector<double>& a, const std::vector<double>& b, double p,
                                      int resamples, uint64_t seed);

// A metric's per-request values of one variant (ms): from the requests table when every request
// was kept, else expanded from its histogram (bucket midpoints). `from_histogram` says which.
std::vector<double> variant_samples(Store& st, int64_t variant_id, const std::string& metric, bool* from_histogram);

// Compares two runs variant by variant (matched by label and step). JSON for --json and tests.
nlohmann::json compare_runs(Store& st, int64_t run_a, int64_t run_b, int resamples, uint64_t seed);

}  // namespace cibench
