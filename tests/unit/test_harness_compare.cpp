// compare: bootstrap intervals of percentile differences cover a known shift and exclude zero
// when the shift is real; they are deterministic per seed.
#include <gtest/gtest.h>

#include <random>

#include "harness/lib/compare.h"

namespace cibench {
namespace {

TEST(HarnessCompare, BootstrapIntervalCoversAKnownShift) {
  std::mt19937_64 g(3);
  std::exponential_distribution<double> e(1.0 / 10.0);  // mean 10 ms, median 10 ln 2
  std::vector<double> a, b, c;
  for (int i = 0; i < 2000; ++i) {
    a.push_back(e(g));
    b.push_back(e(g) + 5.0);  // B is A's distribution shifted by +5 ms
    c.push_back(e(g));        // C is A's distribution
  }
  const BootstrapCI med = bootstrap_percentile_diff(a, b, 50, 300, 1);
  EXPECT_LT(med.lo, 5.0);
  EXPECT_GT(med.hi, 5.0);
  EXPECT_GT(med.lo, 0.0);
  EXPECT_EQ(med.verdict(), "B higher");
  const BootstrapCI p95 = bootstrap_percentile_diff(a, b, 95, 300, 1);
  EXPECT_LT(p95.lo, 5.0);
  EXPECT_GT(p95.hi, 5.0);
  const BootstrapCI same = bootstrap_percentile_diff(a, c, 50, 300, 1);
  EXPECT_LE(same.lo, 0.0);
  EXPECT_GE(same.hi, 0.0);
  EXPECT_EQ(same.verdict(), "no significant difference");
  // Deterministic for a seed.
  const BootstrapCI again = bootstrap_percentile_diff(a, b, 50, 300, 1);
  EXPECT_EQ(again.lo, med.lo);
  EXPECT_EQ(again.hi, med.hi);
}

}  // namespace
}  // namespace cibench
