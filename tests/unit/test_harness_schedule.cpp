// Schedules: Poisson arrivals have the requested mean rate, and are identical for identical seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "harness/lib/schedule.h"

namespace cibench {
namespace {

TEST(HarnessSchedule, PoissonMeanRateAndExponentialGaps) {
  const double rate = 250.0;  // queries per second
  const auto t = poisson_arrivals_ns(rate, /*seed=*/7, /*min_queries=*/200000, 0);
  ASSERT_EQ(t.size(), 200000u);
  // Mean gap of n exponential(rate) draws: 1/rate with standard error 1/(rate sqrt(n)).
  const double mean_gap_s = static_cast<double>(t.back()) * 1e-9 / static_cast<double>(t.size());
  const double se = 1.0 / (rate * std::sqrt(static_cast<double>(t.size())));
  EXPECT_NEAR(mean_gap_s, 1.0 / rate, 4 * se);
  // Exponential gaps: coefficient of variation 1, and P(gap > mean) = e^-1.
  double sum = 0, sum2 = 0;
  int64_t above = 0, prev = 0;
  for (int64_t x : t) {
    const double g = static_cast<double>(x - prev) * 1e-9;
    ASSERT_GE(x, prev);
    sum += g;
    sum2 += g * g;
    above += g > 1.0 / rate;
    prev = x;
  }
  const double n = static_cast<double>(t.size()), mean = sum / n;
  const double cv = std::sqrt(sum2 / n - mean * mean) / mean;
  EXPECT_NEAR(cv, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(above) / n, std::exp(-1.0), 0.005);
}

TEST(HarnessSchedule, IdenticalForIdenticalSeedsDifferentOtherwise) {
  const auto a = poisson_arrivals_ns(10, 42, 1000, 0);
  const auto b = poisson_arrivals_ns(10, 42, 1000, 0);
  const auto c = poisson_arrivals_ns(10, 43, 1000, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(HarnessSchedule, RunsUntilMinQueriesAndMinDuration) {
  const int64_t min_ns = 2'000'000'000;
  const auto t = poisson_arrivals_ns(100, 1, 10, min_ns);
  EXPECT_GE(t.back(), min_ns);
  EXPECT_LT(t[t.size() - 2], min_ns);  // stops at the first arrival past the minimum duration
  EXPECT_GT(t.size(), 10u);
}

TEST(HarnessSchedule, QueryChoicesAreCounterBasedAndSeedSeparated) {
  LengthDist prompt;
  prompt.dist = "uniform";
  prompt.min = 4;
  prompt.max = 9;
  LengthDist gen;
  gen.dist = "lognormal";
  gen.median = 20;
  gen.sigma = 0.5;
  gen.min = 2;
  gen.max = 200;
  ChoiceSeeds s{11, 12};
  std::vector<int> seen_prompt(10, 0);
  std::vector<int64_t> gens;
  for (int64_t i = 0; i < 20000; ++i) {
    const QueryChoice c = choose_query(i, s, 100, prompt, gen);
    ASSERT_GE(c.sample_index, 0);
    ASSERT_LT(c.sample_index, 100);
    ASSERT_GE(c.prompt_tokens, 4);
    ASSERT_LE(c.prompt_tokens, 9);
    seen_prompt[c.prompt_tokens]++;
    gens.push_back(c.gen_tokens);
    // Same index, same answer; changing the lengths seed never moves the sample.
    const QueryChoice again = choose_query(i, s, 100, prompt, gen);
    ASSERT_EQ(again.sample_index, c.sample_index);
    ASSERT_EQ(again.gen_tokens, c.gen_tokens);
    ASSERT_EQ(choose_query(i, ChoiceSeeds{11, 99}, 100, prompt, gen).sample_index, c.sample_index);
  }
  for (int k = 4; k <= 9; ++k) EXPECT_NEAR(seen_prompt[k] / 20000.0, 1 / 6.0, 0.02);
  std::sort(gens.begin(), gens.end());
  EXPECT_NEAR(static_cast<double>(gens[gens.size() / 2]), 20.0, 1.0);  // median of the lognormal
}

}  // namespace
}  // namespace cibench
