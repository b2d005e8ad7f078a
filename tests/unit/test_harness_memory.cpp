// Memory per variant: the stored resident-set peaks are each variant's own (earlier variants'
// builds dropped, freed memory returned, the peak restarted), NULL with the reason when the peak
// cannot be restarted; and the knee of a stepped load as the run stores it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/models/synthetic.h"
#include "engines/runtime/session.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/suite.h"
#include "harness/lib/sysinfo.h"
#include "harness/schema/slo.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / str("cibench_memory_", name, "_", getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string db() const { return (path / "r.sqlite").string(); }
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

bool asan_quarantine_off() {
  const char* o = std::getenv("ASAN_OPTIONS");
  return o && std::strstr(o, "quarantine_size_mb=0");
}

struct MemoryRow {
  std::optional<int64_t> serving, load, weights, kv;
  std::string reason;
  std::optional<int64_t> repacked;
};

std::optional<int64_t> opt_int(const SqlValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return std::nullopt;
}

std::vector<MemoryRow> memory_rows(const std::string& db, int64_t run) {
  Store st(db);
  const auto q = st.query(
      "SELECT peak_rss_bytes, peak_rss_load_bytes, weight_bytes, kv_cache_bytes, peak_rss_reason, status, "
      "repacked_weight_bytes "
      "FROM variants WHERE run_id = ? ORDER BY variant_index, step_index",
      {run});
  std::vector<MemoryRow> out;
  for (const auto& r : q.rows) {
    EXPECT_EQ(sql_to_string(r[5]), "ok");
    out.push_back({opt_int(r[0]), opt_int(r[1]), opt_int(r[2]), opt_int(r[3]), sql_to_string(r[4]), opt_int(r[6])});
  }
  return out;
}

constexpr const char* kTwoFormats = R"(
[model]
source = "synthetic:tinystories-15m"
[matrix]
format = ["f32", "int4_g32"]
threads = [1]
workers = [1]
[workload]
source = "synthetic"
prompt_tokens = 8
gen_tokens = 4
[load]
pattern = "single_stream"
[run]
warmup_queries = 1
min_queries = 4
min_duration_ms = 1
max_duration_ms = 60000
[counters]
enabled = false
)";

// A larger variant (f32) run before a smaller one (int4_g32: 43 MiB of weights against 93): the
// smaller one's serving peak is smaller, by what its weights save. The process's running peak
// (what was stored before) made the later variant look as large as the earlier one or larger: the
// f32 build was still cached and its freed memory still resident.
TEST(HarnessMemory, PeakRssIsEachVariantsOwnAndFollowsTheWeights) {
  std::string why;
  if (!reset_peak_rss(&why)) GTEST_SKIP() << "the peak cannot be restarted here: " << why;
  TempDir dir("formats");
  SuiteOptions o;
  o.db_path = dir.db();
  const SuiteResult res = run_suite(parse_scenario_text(kTwoFormats, "formats.toml"), o);
  ASSERT_EQ(res.failed_variants, 0);
  const std::vector<MemoryRow> rows = memory_rows(o.db_path, res.run_id);
  ASSERT_EQ(rows.size(), 2u);
  for (const MemoryRow& r : rows) {
    ASSERT_TRUE(r.serving && r.load && r.weights && r.kv && r.repacked) << r.reason;
    EXPECT_EQ(r.reason, "");
    // The variant's own weights, their copies for the kernels and KV cache are resident while it
    // serves; the build comes first.
    EXPECT_GE(*r.serving, *r.weights + *r.repacked + *r.kv);
    EXPECT_GE(*r.load, *r.serving);
  }
  const MemoryRow& f32 = rows[0];
  const MemoryRow& int4 = rows[1];
  ASSERT_LT(*int4.weights, *f32.weights);  // the matrices in 4.5 bits; the embedding table stays f32
  // int4_g32 decodes from a copy of its matrices in 16-row blocks where AVX-512 runs full width (Intel, AMD Zen 5)
  // (their bytes again); f32 keeps none.
  const FormatKernels& k4 = format_by_name("int4_g32").kernels_at(active_isa());
  EXPECT_EQ(*f32.repacked, 0);
  if (k4.matvec_decode)
    EXPECT_GT(*int4.repacked, 0);
  else
    EXPECT_EQ(*int4.repacked, 0);
  if (kThreadSanitizer) {
    std::printf("[ tsan ] peaks not compared: ThreadSanitizer's shadow memory multiplies every resident byte\n");
    return;
  }
  if (kAddressSanitizer && !asan_quarantine_off()) {
    std::printf("[ asan ] peaks not compared: ASan's quarantine keeps the f32 variant's freed memory resident "
                "(run with ASAN_OPTIONS=quarantine_size_mb=0 to compare them)\n");
    return;
  }
  EXPECT_LT(*int4.serving, *f32.serving);
  // Both serve with the same resident rest (the process, the FP32 source they are packed from, the
  // store), so the peaks differ by the weights and their copies, give or take what a session
  // allocates besides them: its KV cache and scratch (at most one session's, the same shape for
  // both formats).
  SessionOptions so;
  so.threads = 1;
  const LlamaConfig c = synthetic_llama_source("synthetic:tinystories-15m").config;
  const double session = static_cast<double>(LlamaSession::estimate_bytes(c, so));
  const double peak_diff = static_cast<double>(*f32.serving - *int4.serving);
  const double weight_diff =
      static_cast<double>((*f32.weights + *f32.repacked) - (*int4.weights + *int4.repacked));
  EXPECT_NEAR(peak_diff, weight_diff, session)
      << "f32 serving " << *f32.serving << ", int4_g32 serving " << *int4.serving << ", weights " << *f32.weights
      << " and " << *int4.weights << ", one session " << session;
}

// A peak that cannot be restarted would include earlier work: NULL, with the reason, never a number.
TEST(HarnessMemory, RefusedPeakResetIsStoredAsNullWithTheReason) {
  TempDir dir("refused");
  SuiteOptions o;
  o.db_path = dir.db();
  o.reset_peak_rss = [](std::string* why) {
    *why = "/proc/self/clear_refs: Permission denied";
    return false;
  };
  const std::string text = "[model]\nsource = \"sut:null\"\n[run]\nmin_queries = 4\nmin_duration_ms = 1\n"
                           "[load]\npattern = \"single_stream\"\n[counters]\nenabled = false\n";
  const SuiteResult res = run_suite(parse_scenario_text(text, "null.toml"), o);
  const std::vector<MemoryRow> rows = memory_rows(o.db_path, res.run_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].serving);
  EXPECT_FALSE(rows[0].load);
  EXPECT_EQ(rows[0].reason, "resident-set peak not restarted: /proc/self/clear_refs: Permission denied");

  // The same run where the peak can be restarted stores both peaks and no reason.
  std::string why;
  if (!reset_peak_rss(&why)) GTEST_SKIP() << "the peak cannot be restarted here: " << why;
  o.reset_peak_rss = nullptr;
  const SuiteResult ok = run_suite(parse_scenario_text(text, "null.toml"), o);
  const std::vector<MemoryRow> measured = memory_rows(o.db_path, ok.run_id);
  ASSERT_EQ(measured.size(), 1u);
  ASSERT_TRUE(measured[0].serving && measured[0].load);
  EXPECT_GE(*measured[0].load, *measured[0].serving);
  EXPECT_EQ(measured[0].reason, "");
}

// ---- the knee of a stepped load -------------------------------------------------------------

TEST(HarnessKnee, FoundOnlyWhenAStepBrokeAnSlo) {
  const Knee all_met = find_knee({{10, true}, {20, true}, {40, true}});
  EXPECT_EQ(all_met.qps, 40);
  EXPECT_FALSE(all_met.reached);
  EXPECT_EQ(all_met.describe(), "not reached below the highest rate tried (40 qps)");
  EXPECT_EQ(all_met.cell(), ">= 40");

  const Knee broke = find_knee({{10, true}, {20, true}, {40, false}});
  EXPECT_EQ(broke.qps, 20);
  EXPECT_TRUE(broke.reached);
  EXPECT_EQ(broke.describe(), "20 qps");
  EXPECT_EQ(broke.cell(), "20");

  const Knee first_broke = find_knee({{10, false}});
  EXPECT_FALSE(first_broke.qps);
  EXPECT_TRUE(first_broke.reached);
  EXPECT_EQ(first_broke.describe(), "none (the lowest rate tried broke an SLO)");
  EXPECT_EQ(first_broke.cell(), "none");

  // An SLO that could not be measured does not meet it.
  EXPECT_EQ(find_knee({{1.5, true}, {3, std::nullopt}}).describe(), "1.5 qps");
  EXPECT_EQ(find_knee({}).describe(), "not measured (no step completed)");
}

// The run stores the knee on every step of the variant: reached when a step broke an SLO.
TEST(HarnessKnee, TheRunStoresWhetherTheKneeWasReached) {
  TempDir dir("knee");
  SuiteOptions o;
  o.db_path = dir.db();
  // 1 ms of service at 20 and 40 qps: far inside a p99 of 1 s, so no step breaks it.
  const std::string held = "[model]\nsource = \"sut:sleep?ms=1\"\n[load]\npattern = \"stepped\"\n"
                           "rates_qps = [20, 40]\n[run]\nmin_queries = 4\nmin_duration_ms = 200\n"
                           "max_duration_ms = 5000\n[slo]\np99_ms = 1000\n[counters]\nenabled = false\n";
  // 40 ms of service on one worker: 10 qps holds a p99 of 200 ms, 200 qps queues past it.
  const std::string broke = "[model]\nsource = \"sut:sleep?ms=40\"\n[load]\npattern = \"stepped\"\n"
                            "rates_qps = [10, 200]\n[run]\nmin_queries = 4\nmin_duration_ms = 400\n"
                            "max_duration_ms = 5000\n[slo]\np99_ms = 200\n[counters]\nenabled = false\n";
  for (const auto& [text, knee, reached] :
       {std::tuple{held, 40.0, int64_t{0}}, std::tuple{broke, 10.0, int64_t{1}}}) {
    const SuiteResult res = run_suite(parse_scenario_text(text, "stepped.toml"), o);
    Store st(o.db_path);
    const auto q = st.query("SELECT knee_qps, knee_reached FROM variants WHERE run_id = ? ORDER BY step_index",
                            {res.run_id});
    ASSERT_EQ(q.rows.size(), 2u) << text;
    for (const auto& r : q.rows) {
      EXPECT_EQ(sql_number(r[0]), knee) << text;
      EXPECT_EQ(opt_int(r[1]), reached) << text;
    }
  }
}

}  // namespace
}  // namespace cibench
