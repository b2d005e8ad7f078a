// Percentiles: the documented estimator (nearest rank) on a known sample, and the histogram's
// stated error bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "engines/core/error.h"
#include "harness/lib/metrics.h"

namespace cibench {
namespace {

TEST(HarnessMetrics, NearestRankOnKnownSample) {
  // 1..1000: the p-th percentile by nearest rank is ceil(p/100 * 1000).
  std::vector<int64_t> v(1000);
  std::iota(v.begin(), v.end(), 1);
  EXPECT_EQ(nearest_rank(v, 50), 500);
  EXPECT_EQ(nearest_rank(v, 90), 900);
  EXPECT_EQ(nearest_rank(v, 95), 950);
  EXPECT_EQ(nearest_rank(v, 99), 990);
  EXPECT_EQ(nearest_rank(v, 99.9), 999);
  EXPECT_EQ(nearest_rank(v, 100), 1000);
  // A small sample where interpolating estimators disagree: {15, 20, 35, 40, 50}.
  const std::vector<int64_t> w{15, 20, 35, 40, 50};
  EXPECT_EQ(nearest_rank(w, 5), 15);    // rank ceil(0.25) = 1
  EXPECT_EQ(nearest_rank(w, 30), 20);   // rank ceil(1.5) = 2
  EXPECT_EQ(nearest_rank(w, 40), 20);   // rank ceil(2.0) = 2
  EXPECT_EQ(nearest_rank(w, 50), 35);   // rank ceil(2.5) = 3
  EXPECT_EQ(nearest_rank(w, 100), 50);
  EXPECT_THROW(nearest_rank(w, 0), Error);
  EXPECT_THROW(nearest_rank({}, 50), Error);
}

TEST(HarnessMetrics, RecorderIsExactUnderTheCap) {
  Recorder rec(2, /*exact_cap=*/1000, /*expected=*/1000);
  std::mt19937_64 g(5);
  std::vector<int64_t> lat;
  for (int i = 0; i < 999; ++i) {
    RequestRecord r;
    r.index = i;
    r.worker = i % 2;
    r.scheduled_ns = 1000 * i;
    r.start_ns = r.scheduled_ns + static_cast<int64_t>(g() % 5000);
    r.end_ns = r.start_ns + 1 + static_cast<int64_t>(g() % 1000000);
    lat.push_back(r.end_ns - r.scheduled_ns);
    rec.add(r);
  }
  std::sort(lat.begin(), lat.end());
  const Distribution d = rec.distribution(Metric::latency);
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(d.count, 999);
  for (double p : {50.0, 90.0, 95.0, 99.0, 99.9, 100.0}) EXPECT_EQ(d.at(p), nearest_rank(lat, p)) << p;
}

TEST(HarnessMetrics, HistogramWithinStatedRelativeError) {
  Histogram h;
  std::mt19937_64 g(9);
  std::lognormal_distribution<double> ln(13.0, 1.5);  // around 0.4 ms, heavy tail
  std::vector<int64_t> v;
  for (int i = 0; i < 100000; ++i) {
    const int64_t x = static_cast<int64_t>(ln(g));
    v.push_back(x);
    h.add(x);
  }
  std::sort(v.begin(), v.end());
  for (double p : {50.0, 90.0, 95.0, 99.0, 99.9}) {
    const double exact = static_cast<double>(nearest_rank(v, p));
    EXPECT_LE(std::abs(static_cast<double>(h.percentile(p)) - exact), exact / 256.0 + 0.5) << p;
  }
  EXPECT_EQ(h.percentile(100), v.back());
  // Every bucket spans at most 1/128 of its lower bound; small values are exact.
  for (uint64_t x : {0ull, 1ull, 127ull, 128ull, 129ull, 1000ull, 123456789ull, (1ull << 62) + 5}) {
    const int b = Histogram::bucket_of(x);
    EXPECT_LE(Histogram::bucket_lower(b), x);
    EXPECT_LT(x - Histogram::bucket_lower(b), Histogram::bucket_width(b));
    if (x >= 128) {
      EXPECT_LE(Histogram::bucket_width(b) * 128, Histogram::bucket_lower(b));
    }
  }
}

TEST(HarnessMetrics, RecorderFallsBackToHistogramBeyondCap) {
  Recorder rec(1, /*exact_cap=*/100, /*expected=*/100);
  for (int i = 1; i <= 10000; ++i) {
    RequestRecord r;
    r.scheduled_ns = 0;
    r.start_ns = 0;
    r.end_ns = i * 1000;
    rec.add(r);
  }
  const Distribution d = rec.distribution(Metric::latency);
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(d.count, 10000);
  EXPECT_NEAR(static_cast<double>(d.p50_ns), 5'000'000.0, 5'000'000.0 / 256);
  EXPECT_EQ(d.max_ns, 10'000'000);
  EXPECT_EQ(rec.records().size(), 100u);
}

}  // namespace
}  // namespace cibench
