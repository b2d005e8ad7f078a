// Classifier path of the harness: task statistics (accuracy, macro F1, agreement, paired
// bootstrap intervals), the result cache, traffic duplicates, harness-formed batches, the BERT
// SUT's shapes, and the scenario keys.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "engines/core/error.h"
#include "harness/lib/classifier_stats.h"
#include "harness/lib/family.h"
#include "harness/lib/load.h"
#include "harness/lib/result_cache.h"
#include "harness/lib/scenario.h"
#include "harness/lib/suite.h"
#include "harness/lib/sut_bert.h"
#include "harness/lib/traffic.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

TEST(ClassifierStats, AccuracyMacroF1AndAgreementOnAKnownCase) {
  // gold: 4 negatives, 6 positives. pred: 3/4 negatives right, 4/6 positives right.
  const std::vector<int> gold{0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  const std::vector<int> pred{0, 0, 0, 1, 1, 1, 1, 1, 0, 0};
  const std::vector<int> ref{0, 0, 0, 0, 1, 1, 1, 1, 1, 0};  // 9/10 right
  const ClassifierStats s = classifier_stats(pred, gold, ref, {200, 7});
  EXPECT_EQ(s.n, 10);
  EXPECT_EQ(s.classes, 2);
  EXPECT_DOUBLE_EQ(s.accuracy, 0.7);
  // class 0: TP 3, FP 2, FN 1 -> 6/9; class 1: TP 4, FP 1, FN 2 -> 8/11.
  EXPECT_NEAR(s.macro_f1, (6.0 / 9.0 + 8.0 / 11.0) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(*s.reference_accuracy, 0.9);
  EXPECT_NEAR(*s.accuracy_delta, -0.2, 1e-12);
  // pred and ref differ at indices 3, 8 -> agreement 8/10.
  EXPECT_DOUBLE_EQ(*s.agreement, 0.8);
  EXPECT_LE(s.accuracy_ci.lo, s.accuracy);
  EXPECT_GE(s.accuracy_ci.hi, s.accuracy);
  // Paired: the variant is never right where the reference is wrong, so no resample can show a gain.
  EXPECT_LE(s.delta_ci->hi, 0.0);
  EXPECT_LE(s.delta_ci->lo, *s.accuracy_delta);
  EXPECT_EQ(macro_f1(pred, gold), s.macro_f1);
}

TEST(ClassifierStats, MacroF1AveragesOnlyOccurringClassesAndCountsMissingPredictionsAsZero) {
  // Labels 0 and 2 occur; class 1 never does and is not averaged. Class 2 is never predicted: F1 0.
  const std::vector<int> gold{0, 0, 2, 2};
  const std::vector<int> pred{0, 0, 0, 0};
  // class 0: TP 2, FP 2, FN 0 -> 4/6; class 2: 0.
  EXPECT_NEAR(macro_f1(pred, gold), (4.0 / 6.0 + 0.0) / 2, 1e-12);
  EXPECT_EQ(classifier_stats(pred, gold).classes, 2);
}

TEST(ClassifierStats, PairedBootstrapIntervalsBehave) {
  // 1000 sentences, accuracy 0.8; the variant differs from the reference on 10 sentences, all of
  // which the reference got right: delta -0.01.
  const int n = 1000;
  std::vector<int> gold(n), ref(n), pred(n);
  for (int i = 0; i < n; ++i) {
    gold[i] = i % 2;
    ref[i] = (i % 5 == 0) ? 1 - gold[i] : gold[i];  // 200 wrong
    pred[i] = ref[i];
  }
  int flipped = 0;
  for (int i = 0; i < n && flipped < 10; ++i)
    if (ref[i] == gold[i]) {
      pred[i] = 1 - gold[i];
      ++flipped;
    }
  const ClassifierStats s = classifier_stats(pred, gold, ref, {1000, 3});
  EXPECT_NEAR(*s.reference_accuracy, 0.8, 1e-12);
  EXPECT_NEAR(*s.accuracy_delta, -0.01, 1e-12);
  EXPECT_NEAR(*s.agreement, 0.99, 1e-12);
  // The delta interval is narrow (only 10 discordant sentences) and excludes 0.
  EXPECT_LT(s.delta_ci->hi, 0.0);
  EXPECT_LE(s.delta_ci->lo, -0.01);
  EXPECT_GT(s.delta_ci->lo, -0.025);
  // The accuracy interval has about the normal-approximation width 2 * 1.96 * sqrt(p(1-p)/n).
  const double p = s.accuracy, width = s.accuracy_ci.hi - s.accuracy_ci.lo;
  const double expected = 2 * 1.96 * std::sqrt(p * (1 - p) / n);
  EXPECT_GT(width, 0.8 * expected);
  EXPECT_LT(width, 1.2 * expected);
  // Identical builds: the delta interval is exactly [0, 0].
  const ClassifierStats same = classifier_stats(ref, gold, ref, {300, 3});
  EXPECT_EQ(same.delta_ci->lo, 0.0);
  EXPECT_EQ(same.delta_ci->hi, 0.0);
  EXPECT_EQ(*same.agreement, 1.0);
  // Deterministic for a seed; another seed moves the interval's ends but not the point estimates.
  const ClassifierStats again = classifier_stats(pred, gold, ref, {1000, 3});
  EXPECT_EQ(again.accuracy_ci.lo, s.accuracy_ci.lo);
  EXPECT_EQ(again.delta_ci->hi, s.delta_ci->hi);
  const ClassifierStats other = classifier_stats(pred, gold, ref, {1000, 4});
  EXPECT_EQ(other.accuracy, s.accuracy);
  // Without a reference there is no delta.
  const ClassifierStats noref = classifier_stats(pred, gold);
  EXPECT_FALSE(noref.agreement.has_value());
  EXPECT_FALSE(noref.delta_ci.has_value());
}

TEST(ClassifierStats, RejectsMismatchedOrInvalidInput) {
  EXPECT_THROW(classifier_stats({}, {}), Error);
  EXPECT_THROW(classifier_stats({0, 1}, {0}), Error);
  EXPECT_THROW(classifier_stats({0, 1}, {0, 1}, {1}), Error);
  EXPECT_THROW(classifier_stats({0, -1}, {0, 1}), Error);
  EXPECT_THROW(classifier_stats({0, 1}, {0, 1}, {}, {5, 1}), Error);
}

// ---- result cache ----

std::string key(int a) { return ResultCache::key_of(&a, 1); }

TEST(ClassifierCache, EvictsLeastRecentlyUsedAtTheEntryLimitAndCountsHitsAndMisses) {
  ResultCache c(3, 0);
  EXPECT_FALSE(c.get(key(1)).has_value());  // miss
  c.put(key(1), {1.f});
  c.put(key(2), {2.f});
  c.put(key(3), {3.f});
  ASSERT_TRUE(c.get(key(1)).has_value());  // hit: 1 becomes most recent; LRU order 1 3 2
  EXPECT_EQ((*c.get(key(1)))[0], 1.f);     // hit
  c.put(key(4), {4.f});                    // evicts 2, the least recently used
  EXPECT_EQ(c.keys_mru(), (std::vector<std::string>{key(4), key(1), key(3)}));
  EXPECT_FALSE(c.get(key(2)).has_value());  // miss
  const CacheStats s = c.stats();
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.entries, 3);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 0.5);
  EXPECT_EQ(s.bytes, 3 * ResultCache::entry_bytes(key(1), {1.f}));
  // Re-putting a key refreshes it without growing.
  c.put(key(3), {30.f});
  EXPECT_EQ(c.keys_mru().front(), key(3));
  EXPECT_EQ(c.stats().entries, 3);
  EXPECT_EQ((*c.get(key(3)))[0], 30.f);
}

TEST(ClassifierCache, ByteLimitEvictsUntilItHoldsAndRefusesOversizedEntries) {
  const int64_t one = ResultCache::entry_bytes(key(0), {0.f, 0.f});
  ResultCache c(0, 2 * one + one / 2);  // room for two entries
  for (int i = 0; i < 5; ++i) c.put(key(i), {float(i), 0.f});
  EXPECT_EQ(c.stats().entries, 2);
  EXPECT_LE(c.stats().bytes, c.max_bytes());
  EXPECT_EQ(c.keys_mru(), (std::vector<std::string>{key(4), key(3)}));
  EXPECT_EQ(c.stats().evictions, 3);
  c.put(key(9), std::vector<float>(1000, 1.f));  // larger than the limit on its own: not stored
  EXPECT_FALSE(c.get(key(9)).has_value());
  EXPECT_EQ(c.stats().entries, 2);
  EXPECT_THROW(ResultCache(0, 0), Error);
}

// ---- traffic ----

TEST(ClassifierTraffic, ZipfDuplicateRateMatchesItsExpectation) {
  const int64_t n = 872, queries = 4000;
  for (double s : {0.8, 1.1, 1.5}) {
    const Traffic t = Traffic::zipf(n, s, 7);
    std::vector<int64_t> seq;
    for (int64_t i = 0; i < queries; ++i) seq.push_back(t.sample(i));
    const double measured = duplicate_rate(seq), expected = t.expected_duplicate_rate(queries);
    EXPECT_NEAR(measured, expected, 0.015) << "s = " << s;
    // The most popular sample is drawn about p_1 * queries times.
    const auto p = t.probabilities();
    const size_t top = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    const double count = static_cast<double>(std::count(seq.begin(), seq.end(), static_cast<int64_t>(top)));
    EXPECT_NEAR(count / queries, p[top], 4 * std::sqrt(p[top] * (1 - p[top]) / queries)) << "s = " << s;
  }
  // Higher exponent, more duplicates; uniform has fewer than any of these.
  EXPECT_LT(Traffic::zipf(n, 0.8, 1).expected_duplicate_rate(queries), Traffic::zipf(n, 1.5, 1).expected_duplicate_rate(queries));
  const Traffic u = Traffic::uniform(n, 3);
  std::vector<int64_t> useq;
  for (int64_t i = 0; i < queries; ++i) useq.push_back(u.sample(i));
  EXPECT_NEAR(duplicate_rate(useq), u.expected_duplicate_rate(queries), 0.015);
  EXPECT_LT(u.expected_duplicate_rate(queries), Traffic::zipf(n, 0.8, 1).expected_duplicate_rate(queries));
  // Seeded: the same seed draws the same sequence, another seed another permutation.
  EXPECT_EQ(Traffic::zipf(n, 1.1, 7).sample(123), Traffic::zipf(n, 1.1, 7).sample(123));
  int differ = 0;
  for (int64_t i = 0; i < 100; ++i) differ += Traffic::zipf(n, 1.1, 7).sample(i) != Traffic::zipf(n, 1.1, 8).sample(i);
  EXPECT_GT(differ, 50);
}

TEST(ClassifierTraffic, ReplayCyclesItsIndicesAndRejectsBadFiles) {
  const Traffic r = Traffic::replay({3, 1, 3}, 5, "list");
  EXPECT_EQ(r.sample(0), 3);
  EXPECT_EQ(r.sample(4), 1);
  EXPECT_DOUBLE_EQ(r.expected_duplicate_rate(3), 1.0 / 3.0);
  EXPECT_THROW(Traffic::replay({0, 5}, 5, "list"), FileError);
  const std::string dir = testing::TempDir() + "/cibench_replay_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/ok.txt") << "# sentence indices\n0 1 2\n2\n";
    std::ofstream(dir + "/bad.txt") << "0\n1 x\n";
  }
  EXPECT_EQ(Traffic::replay(dir + "/ok.txt", 3).sample(3), 2);
  try {
    Traffic::replay(dir + "/bad.txt", 3);
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: 'x'"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// ---- harness-formed batches ----

// Records every batch it is given and completes each query at once.
class BatchRecorder : public SystemUnderTest {
 public:
  SutInfo info() const override { return {}; }
  void issue(int, const Query&, QueryContext& ctx) override { ctx.complete(); }
  void issue_batch(int, const Query* qs, QueryContext* const* ctxs, int n) override {
    std::vector<int64_t> b;
    for (int i = 0; i < n; ++i) b.push_back(qs[i].index);
    {
      std::lock_guard<std::mutex> lk(mu);
      if (qs[0].index >= 0) batches.push_back(b);
    }
    for (int i = 0; i < n; ++i) ctxs[i]->complete();
  }
  std::mutex mu;
  std::vector<std::vector<int64_t>> batches;
};

TEST(ClassifierBatcher, TakesUpToMaxBatchAndWaitsAtMostMaxWait) {
  {  // offline: everything has arrived, batches are full except the last
    BatchRecorder sut;
    LoadSettings s;
    s.pattern = Pattern::offline;
    s.min_queries = 10;
    s.max_batch = 4;
    const LoadResult r = run_load(sut, s);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(sut.batches.size(), 3u);
    EXPECT_EQ(sut.batches[0], (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(sut.batches[2], (std::vector<int64_t>{8, 9}));
    EXPECT_EQ(r.batches, 3);
  }
  {  // server with a long max_wait: the worker waits for later arrivals, so batches fill
    BatchRecorder sut;
    LoadSettings s;
    s.pattern = Pattern::server;
    s.target_qps = 200;
    s.min_queries = 12;
    s.max_batch = 4;
    s.max_wait_ns = 3'600'000'000'000;
    const LoadResult r = run_load(sut, s);
    ASSERT_TRUE(r.error.empty()) << r.error;
    for (size_t b = 0; b < sut.batches.size(); ++b)
      EXPECT_EQ(sut.batches[b].size(), b + 1 < sut.batches.size() ? 4u : (r.issued - 1) % 4 + 1) << "batch " << b;
    // Latency counts from each request's own arrival: within a batch (one start and one end),
    // earlier arrivals wait longer; every request was taken after it arrived.
    std::map<int64_t, RequestRecord> by_index;
    for (const auto& rec : r.recorder->records()) by_index[rec.index] = rec;
    for (const auto& b : sut.batches) {
      const RequestRecord& first = by_index.at(b.front());
      for (int64_t i : b) {
        const RequestRecord& q = by_index.at(i);
        EXPECT_EQ(q.start_ns, first.start_ns);
        EXPECT_GE(q.queue_ns(), 0);
        EXPECT_EQ(q.latency_ns(), q.end_ns - q.scheduled_ns);
        EXPECT_GE(first.latency_ns(), q.latency_ns());
        EXPECT_GE(first.queue_ns(), q.scheduled_ns - first.scheduled_ns);
      }
    }
  }
  {  // server with max_wait 0: a batch holds only requests that had arrived when it was taken
    BatchRecorder sut;
    LoadSettings s;
    s.pattern = Pattern::server;
    s.target_qps = 500;
    s.min_queries = 50;
    s.max_batch = 8;
    s.max_wait_ns = 0;
    const LoadResult r = run_load(sut, s);
    ASSERT_TRUE(r.error.empty()) << r.error;
    int64_t total = 0;
    for (const auto& b : sut.batches) {
      EXPECT_LE(b.size(), 8u);
      total += static_cast<int64_t>(b.size());
    }
    EXPECT_EQ(total, r.issued);
    for (const auto& rec : r.recorder->records()) EXPECT_GE(rec.start_ns, rec.scheduled_ns);
  }
  {  // closed loops cannot batch
    BatchRecorder sut;
    LoadSettings s;
    s.pattern = Pattern::closed_loop;
    s.max_batch = 2;
    EXPECT_THROW(run_load(sut, s), Error);
  }
}

// ---- the BERT SUT: padded vs dynamic shapes, batches and the cache agree ----

TEST(ClassifierSut, PaddedAndDynamicShapesGiveTheSamePredictions) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@5");
  auto model = std::make_shared<const BertModel>(build_bert(src));
  auto in = std::make_shared<ClassifierInputs>();
  in->max_length = 64;
  const int n = 40;
  for (int s = 0; s < n; ++s) {
    std::vector<int> ids{101};
    const int len = 3 + (s * 7) % 40;
    for (int i = 0; i < len; ++i) ids.push_back(1000 + (s * 131 + i * 17) % 20000);
    ids.push_back(102);
    in->ids.push_back(ids);
  }
  // Reference: each sentence alone; margins tell which predictions are numerically decided.
  std::vector<int> ref(n);
  std::vector<float> margin(n);
  {
    BertSession sess(*model, BertSessionOptions{});
    for (int s = 0; s < n; ++s) {
      const float* l = sess.classify(in->ids[s].data(), static_cast<int>(in->ids[s].size()));
      ref[s] = l[1] > l[0];
      margin[s] = std::fabs(l[1] - l[0]);
    }
  }
  struct Case {
    Shape shape;
    int max_batch;
    bool cache;
  };
  for (const Case& c : {Case{Shape::dynamic, 1, false}, Case{Shape::padded, 1, false}, Case{Shape::dynamic, 4, false},
                        Case{Shape::padded, 4, true}}) {
    BertSutOptions o;
    o.shape = c.shape;
    o.pad_to = 64;
    o.max_batch = c.max_batch;
    o.cache = c.cache;
    o.cache_entries = 16;
    std::mutex mu;
    std::map<int64_t, std::vector<int>> got;  // sample -> labels
    o.on_result = [&](const Query& q, int label) {
      std::lock_guard<std::mutex> lk(mu);
      got[q.sample_index].push_back(label);
    };
    BertSut sut(model, in, o);
    LoadSettings s;
    s.pattern = Pattern::offline;
    s.min_queries = 2 * n;
    s.max_batch = c.max_batch;
    s.n_samples = n;
    s.choice = ChoiceSeeds{11, 12};
    const LoadResult r = run_load(sut, s);
    ASSERT_TRUE(r.error.empty()) << r.error;
    int decided = 0;
    for (const auto& [sample, labels] : got) {
      if (margin[static_cast<size_t>(sample)] < 1e-3f) continue;
      ++decided;
      for (int l : labels) EXPECT_EQ(l, ref[static_cast<size_t>(sample)]) << shape_name(c.shape) << " b" << c.max_batch << " sample " << sample;
    }
    EXPECT_GT(decided, static_cast<int>(got.size()) / 2);
    if (c.cache) {
      const CacheStats cs = *sut.cache_stats();
      EXPECT_EQ(cs.hits + cs.misses, 2 * n);
      EXPECT_GT(cs.hits, 0);
      EXPECT_LE(cs.entries, 16);
    } else {
      EXPECT_FALSE(sut.cache_stats().has_value());
    }
  }
  // A sentence longer than pad_to is an error, never a silent truncation.
  BertSutOptions o;
  o.shape = Shape::padded;
  o.pad_to = 8;
  BertSut sut(model, in, o);
  LoadSettings s;
  s.pattern = Pattern::offline;
  s.min_queries = 5;
  s.n_samples = n;
  EXPECT_NE(run_load(sut, s).error.find("> pad_to 8"), std::string::npos);
}

TEST(ClassifierSut, VerdictChecksTheFloors) {
  ClassifierAccuracy a;
  a.agreement = 0.97;
  a.stats = classifier_stats({1, 1, 0, 0}, {1, 1, 0, 1}, {1, 1, 0, 1}, {100, 1});  // 0.75 vs 1.0
  AccuracySpec floor;
  classifier_verdict(a, floor);
  EXPECT_EQ(a.verdict, "no floor");
  floor.max_accuracy_drop = 0.3;
  classifier_verdict(a, floor);
  EXPECT_EQ(a.verdict, "pass") << a.reasons;
  floor.max_accuracy_drop = 0.2;
  classifier_verdict(a, floor);
  EXPECT_EQ(a.verdict, "fail");
  EXPECT_NE(a.reasons.find("accuracy drop"), std::string::npos) << a.reasons;
  floor.max_accuracy_drop.reset();
  floor.min_top1_agreement = 0.98;
  classifier_verdict(a, floor);
  EXPECT_EQ(a.verdict, "fail");
}

// ---- scenario keys ----

const char* kClassifier = R"([model]
source = "sut:null"

[matrix]
threads = [1]
shapes = ["dynamic", "padded"]
max_batch = [1, 4]
cache = [false, true, 64]

[workload]
sampling = "zipf"
zipf_s = 1.1

[load]
pattern = "server"
target_qps = 10

[classifier]
pad_to = 64
max_wait_ms = 2.5
cache_entries = 500
cache_bytes = 100000

[accuracy]
max_accuracy_drop = 0.01
bootstrap_resamples = 200
)";

std::string error_of(const std::string& text, const std::vector<std::string>& ov = {}) {
  try {
    parse_scenario_text(text, "cls.toml", ov);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClassifierScenario, AcceptsTheClassifierKeys) {
  const Scenario s = parse_scenario_text(kClassifier, "cls.toml");
  EXPECT_EQ(s.sampling, "zipf");
  EXPECT_DOUBLE_EQ(s.zipf_s, 1.1);
  EXPECT_EQ(s.classifier.pad_to, 64);
  EXPECT_DOUBLE_EQ(s.classifier.max_wait_ms, 2.5);
  EXPECT_EQ(*s.accuracy.max_accuracy_drop, 0.01);
  EXPECT_EQ(s.accuracy.bootstrap_resamples, 200);
  const auto v = s.variants();
  ASSERT_EQ(v.size(), 2u * 2u * 3u);
  // cache innermost: off, on with [classifier] limits, on with 64 entries
  EXPECT_FALSE(v[0].cache);
  EXPECT_TRUE(v[1].cache);
  EXPECT_EQ(v[1].cache_entries, 500);
  EXPECT_EQ(v[1].cache_bytes, 100000);
  EXPECT_EQ(v[2].cache_entries, 64);
  EXPECT_EQ(v[3].max_batch, 4);
  EXPECT_EQ(v[6].shape, Shape::padded);
  EXPECT_EQ(v[1].label(), "f32 t1 w1 cache=500");
  EXPECT_EQ(v[11].label(), "f32 t1 w1 padded b4 cache=64");
}

TEST(ClassifierScenario, RejectsWrongKeysWithFileLineColumn) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string t = kClassifier;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_EQ(error_of(with("shapes = [\"dynamic\", \"padded\"]", "shapes = [\"dynamic\", \"ragged\"]")),
            "cls.toml:6:22: key 'matrix.shapes': unknown shape 'ragged' (dynamic: each request at its own length; "
            "padded: padded to classifier.pad_to)");
  EXPECT_EQ(error_of(with("cache = [false, true, 64]", "cache = [\"yes\"]")),
            "cls.toml:8:10: key 'matrix.cache': expected true, false or an entry limit (integer), got string");
  EXPECT_EQ(error_of(with("max_batch = [1, 4]", "max_batch = [0]")),
            "cls.toml:7:14: key 'matrix.max_batch': must be in [1, 1024], got 0");
  EXPECT_EQ(error_of(with("sampling = \"zipf\"", "sampling = \"pareto\"")),
            "cls.toml:11:12: key 'workload.sampling': must be \"uniform\", \"zipf\" or \"replay\", got 'pareto'");
  EXPECT_EQ(error_of(with("pad_to = 64", "pad_ro = 64")).substr(0, 47),
            "cls.toml:19:1: key 'classifier.pad_ro': unknown");
  EXPECT_EQ(error_of(with("sampling = \"zipf\"", "sampling = \"replay\"")),
            "cls.toml:12:10: key 'workload.zipf_s': only meaningful with sampling = \"zipf\"");
  EXPECT_EQ(error_of(with("max_accuracy_drop = 0.01", "max_accuracy_drop = \"1%\"")),
            "cls.toml:25:21: key 'accuracy.max_accuracy_drop': expected a number, got string");
  EXPECT_EQ(error_of(kClassifier, {"load.pattern=closed_loop"}).substr(0, 37), "cls.toml:7:13: key 'matrix.max_batch'");
}

TEST(ClassifierScenario, ClassifierOnlyKeysAreRefusedForOtherModels) {
  const std::string text = "[model]\nsource = \"sut:null\"\n[matrix]\ncache = [false, true]\n";
  try {
    prevalidate_scenario(parse_scenario_text(text, "other.toml"));
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), "other.toml:4:9: key 'matrix.cache': the result cache is implemented for BERT/DistilBERT classifiers");
  }
  EXPECT_NO_THROW(prevalidate_scenario(parse_scenario_text("[model]\nsource = \"sut:null\"\n", "other.toml")));
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

// A vocabulary with fewer pieces than the embedding is run (a padded embedding is legitimate) but
// said and stored with the run; one with more is refused.
TEST(HarnessClassifierVocab, ASmallerVocabularyIsAWarningStoredWithTheRun) {
  if (!test::have_shared("models/bert-tiny-sst2/vocab.txt")) GTEST_SKIP() << "no shared bert-tiny-sst2";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cibench_vocab_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ifstream in(test::shared_path("models/bert-tiny-sst2/vocab.txt"));
  std::ofstream out(dir / "vocab.txt");
  std::string line;
  for (int i = 0; i < 20000 && std::getline(in, line); ++i) out << line << "\n";
  out.close();
  const std::string text = str("[model]\nsource = \"", test::shared_path("models/bert-tiny-sst2"), "\"\ntokenizer = \"",
                               (dir / "vocab.txt").string(), "\"\n[run]\nmin_duration_ms = 1\nmin_queries = 1\n");
  const Scenario sc = parse_scenario_text(text, "vocab.toml");
  const auto family = open_model_family(sc);
  ASSERT_EQ(family->warnings().size(), 1u);
  EXPECT_NE(family->warnings()[0].find("has 20000 pieces but the model's embedding has 30522 rows"), std::string::npos)
      << family->warnings()[0];
  SuiteOptions o;
  o.db_path = (dir / "r.sqlite").string();
  const Scenario quick = parse_scenario_text(text + "[workload]\ngen_tokens = 1\n", "vocab.toml",
                                             {"load.pattern=\"single_stream\"", "run.max_duration_ms=2000",
                                              "counters.enabled=false"});
  const SuiteResult r = run_suite(quick, o);
  Store st(o.db_path);
  const std::string stored = sql_to_string(st.query("SELECT warnings FROM runs WHERE run_id = ?", {r.run_id}).rows.at(0).at(0));
  EXPECT_NE(stored.find("has 20000 pieces but the model's embedding has 30522 rows"), std::string::npos) << stored;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cibench
