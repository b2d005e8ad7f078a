// The typed variant result: the row it writes uses only columns of the schema, unmeasured values
// are NULL (never 0), and the console report says what the row says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "harness/lib/store.h"
#include "harness/lib/variant_result.h"

namespace cibench {
namespace {

VariantResult sample_result() {
  VariantResult r;
  r.isa_used = "avx2";
  r.pinning = "none";
  r.weight_bytes = 1000;
  r.queries = 40;
  r.duration_s = 8;
  r.output_tokens = 400;
  r.percentile_estimator = "nearest-rank, exact (all 40 requests kept)";
  Distribution d;
  d.count = 40;
  d.mean_ns = 12.5e6;
  d.p50_ns = 12'000'000;
  d.p90_ns = 20'000'000;
  d.p95_ns = 25'000'000;
  d.p99_ns = 30'000'000;
  d.p999_ns = 31'000'000;
  d.max_ns = 31'000'000;
  r.metrics[static_cast<size_t>(Metric::latency)] = MetricSummary::of(d);
  r.slo_met = false;
  r.slo_report = "p95_ms: latency p95 = 25 ms > 20 ms (BROKEN)";
  r.quality.unavailable = "accuracy not requested";
  return r;
}

TEST(HarnessResult, RowUsesSchemaColumnsAndKeepsUnmeasuredNull) {
  const auto dir = std::filesystem::temp_directory_path() / ("cibench_result_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  Store st((dir / "r.sqlite").string());
  std::set<std::string> columns;
  for (const auto& row : st.query("PRAGMA table_info(variants)").rows) columns.insert(std::get<std::string>(row[1]));

  VariantResult r = sample_result();
  const Fields f = r.fields();
  std::map<std::string, SqlValue> by;
  for (const auto& [k, v] : f) {
    EXPECT_TRUE(columns.count(k)) << "the result writes '" << k << "', which the schema has no column for";
    EXPECT_FALSE(by.count(k)) << k << " written twice";
    by[k] = v;
  }
  EXPECT_EQ(std::get<double>(by.at("latency_p95_ms")), 25.0);
  EXPECT_EQ(std::get<double>(by.at("achieved_qps")), 5.0);
  EXPECT_EQ(std::get<double>(by.at("tokens_per_s")), 50.0);
  EXPECT_EQ(std::get<int64_t>(by.at("slo_met")), 0);
  EXPECT_EQ(std::get<int64_t>(by.at("valid")), 1);
  // Not measured: NULL, not 0.
  for (const char* k : {"ttft_p95_ms", "tpot_p50_ms", "queue_max_ms", "peak_rss_bytes", "kv_cache_bytes",
                        "prompt_tokens", "duplicate_rate", "counters_queries"})
    EXPECT_TRUE(std::holds_alternative<std::monostate>(by.at(k))) << k;
  EXPECT_EQ(std::get<std::string>(by.at("acc_unavailable_reason")), "accuracy not requested");

  // The console says the same: p95 25.0, valid, the SLO report.
  const auto lines = r.console_lines();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_NE(lines[0].find("p95 25.0"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("ttft p95 -"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("valid"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "SLO: " + r.slo_report);

  r.invalid_reasons = {"completed 40 queries < min_queries 64"};
  r.duration_s = 0;
  const Fields g = r.fields();
  for (const auto& [k, v] : g) {
    if (k == "valid") {
      EXPECT_EQ(std::get<int64_t>(v), 0);
    } else if (k == "validity_reasons") {
      EXPECT_EQ(std::get<std::string>(v), r.invalid_reasons[0]);
    } else if (k == "achieved_qps" || k == "tokens_per_s") {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(v)) << k;
    }
  }
  EXPECT_NE(r.console_lines()[0].find("INVALID: completed 40 queries"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cibench
