#pragma once
// Comparing two runs. The compare itself (matching variants, the samples, the bootstrap) is
// reports::compare_runs, the one implementation behind `cibench compare`, `cibench report` and
// cibench-gui; its statistics are harness/schema/stats.h's percentile_diff. This header keeps the
// harness's name for one percentile's difference with its verdict.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/schema/stats.h"

namespace cibench {

struct BootstrapCI {
  double a = 0, b = 0;        // the percentile of each sample
  double diff = 0;            // b - a
  double lo = 0, hi = 0;      // 95 % interval of the difference
  int resamples = 0;
  // "B lower" / "B higher" when the interval excludes 0, else "no significant difference".
  std::string verdict() const;
};

// Nearest-rank percentile p of `a` and `b` and the bootstrap CI of b - a: percentile_diff's
// numbers (samples sorted first). Deterministic per seed.
BootstrapCI bootstrap_percentile_diff(const std::vector<double>& a, const std::vector<double>& b, double p,
                                      int resamples, uint64_t seed);

}  // namespace cibench
