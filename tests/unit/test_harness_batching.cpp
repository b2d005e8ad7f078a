// Decoder batching in the harness: the continuous and static batching Llama SUTs
// (harness/lib/sut_llama_batch.h) give every request the greedy tokens a LlamaSession gives its
// prompt alone (driven by the load generator, with ragged prompts, a KV pool tight enough to
// queue, and preemption); continuous batching admits a late arrival into a running batch where
// static batching makes it wait; and the scenario keys are checked with the key named.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/runtime/sampler.h"
#include "engines/runtime/session.h"
#include "harness/lib/family.h"
#include "harness/lib/load.h"
#include "harness/lib/scenario.h"
#include "harness/lib/sut_llama_batch.h"
#include "test_support.h"

namespace cibench {
namespace {

constexpr int64_t kMs = 1'000'000;

// The greedy tokens of a LlamaSession reading `prompt` alone.
std::vector<int> session_tokens(const LlamaModel& m, const std::vector<int>& prompt, int gen) {
  SessionOptions so;
  LlamaSession s(m, so);
  const int vocab = m.config.vocab_size;
  std::vector<int> out;
  int tok = Sampler::argmax(s.prefill(prompt.data(), static_cast<int>(prompt.size())), vocab);
  out.push_back(tok);
  for (int g = 1; g < gen; ++g) {
    tok = Sampler::argmax(s.step(tok), vocab);
    out.push_back(tok);
  }
  return out;
}

std::shared_ptr<const LlamaModel> stories260k_w8a8() {
  const LlamaSource src = open_llama_source(test::shared_path("models/stories260K/stories260K.bin"));
  LlamaBuildOptions o;
  o.format = "w8a8";  // int8 activations: batched logits bit-identical to a session's (batch.h)
  return std::make_shared<const LlamaModel>(build_llama(src, o));
}

struct ServeCase {
  const char* name;
  BatchingMode mode;
  KvPolicy policy;
  int64_t kv_pool_tokens;  // 0 = max_batch x the context
};

class BatchingSutAllIsas : public ::testing::TestWithParam<Isa> {};

// Server load (2000 req/s, so requests overlap) of ragged prompts (1..40 tokens) and generation
// lengths (1..20) through the real load generator. The tight pools (64 and 80 positions: 4 and 5
// blocks, one request needs at most 59 positions = 4 blocks) make requests wait for blocks
// (queue) or take them from the youngest (preempt).
TEST_P(BatchingSutAllIsas, EveryRequestGetsTheGreedyTokensOfASessionAlone) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  const auto model = stories260k_w8a8();
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(model->config.vocab_size, 7, 64));
  const ServeCase cases[] = {{"continuous, ample pool", BatchingMode::continuous, KvPolicy::queue, 0},
                             {"continuous, queue on a tight pool", BatchingMode::continuous, KvPolicy::queue, 64},
                             {"continuous, preempt on a tight pool", BatchingMode::continuous, KvPolicy::preempt, 80},
                             {"static, tight pool", BatchingMode::static_batch, KvPolicy::queue, 64}};
  for (const ServeCase& c : cases) {
    SCOPED_TRACE(c.name);
    BatchSutOptions o;
    o.mode = c.mode;
    o.max_batch = 4;
    o.max_tokens_per_step = 12;  // prompts longer than 12 tokens are read over several steps
    o.kv_pool_tokens = c.kv_pool_tokens;
    o.kv_policy = c.policy;
    o.batch_timeout_ms = 2;
    o.record_outputs = true;
    LlamaBatchSut sut(model, o, prompts);
    LoadSettings s;
    s.pattern = Pattern::server;
    s.target_qps = 2000;
    s.prompt.dist = "uniform";
    s.prompt.min = 1;
    s.prompt.max = 40;
    s.gen.dist = "uniform";
    s.gen.min = 1;
    s.gen.max = 20;
    s.n_samples = prompts->size();
    s.warmup_queries = 0;
    s.min_queries = 24;
    s.min_duration_ns = 0;
    s.max_duration_ns = 120'000 * kMs;
    const LoadResult r = run_load(sut, s);
    ASSERT_EQ(r.error, "");
    const auto recs = r.recorder->records();
    const auto outs = sut.outputs();
    ASSERT_EQ(recs.size(), 24u);
    ASSERT_EQ(outs.size(), recs.size());
    for (const auto& rec : recs) {
      const auto it = outs.find(rec.index);
      ASSERT_NE(it, outs.end()) << "request " << rec.index;
      const BatchSutOutput& out = it->second;
      EXPECT_EQ(static_cast<int64_t>(out.tokens.size()), rec.output_tokens) << "request " << rec.index;
      std::vector<int> expect_prompt;
      prompts->fill(out.sample_index, static_cast<int>(out.prompt.size()), expect_prompt);
      EXPECT_EQ(out.prompt, expect_prompt);
      EXPECT_EQ(out.tokens, session_tokens(*model, out.prompt, static_cast<int>(out.tokens.size())))
          << "request " << rec.index << " (prompt " << out.prompt.size() << " tokens, preempted " << out.preempted << ")";
    }
    const BatchSutStats st = sut.stats();
    EXPECT_GT(st.steps, 0);
    EXPECT_GT(st.forward_ns, 0);
    EXPECT_GT(st.scheduler_ns, 0);  // every step is planned and its tokens handed out
    EXPECT_GT(st.scheduler_overhead(), 0.0);
    EXPECT_LE(st.max_seqs, o.max_batch);
    EXPECT_LE(st.kv_occupancy_max, 1.0);
    if (c.policy == KvPolicy::queue || c.mode == BatchingMode::static_batch) {
      EXPECT_EQ(st.preemptions, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, BatchingSutAllIsas, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// A harness clock for driving an asynchronous SUT by hand: steady time since construction.
class TestClock : public HarnessClock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
  }
  void sleep_until(int64_t t) const override {
    std::this_thread::sleep_until(t0_ + std::chrono::nanoseconds(t));
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Records the order of events over every query; optionally issues another query from inside a
// token callback (the SUT calls back without holding its locks).
struct EventLog {
  std::mutex mu;
  std::vector<std::string> events;
  std::condition_variable cv;
  int done = 0;
  void add(const std::string& e) {
    std::lock_guard<std::mutex> lk(mu);
    events.push_back(e);
    if (e.rfind("complete", 0) == 0 || e.rfind("fail", 0) == 0) {
      ++done;
      cv.notify_all();
    }
  }
  void wait_done(int n) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done >= n; });
  }
  size_t find(const std::string& e) {
    std::lock_guard<std::mutex> lk(mu);
    return static_cast<size_t>(std::find(events.begin(), events.end(), e) - events.begin());
  }
};

class LoggingCtx : public QueryContext {
 public:
  LoggingCtx(EventLog& log, int id, const HarnessClock& clock) : log_(log), id_(id), clock_(clock) {}
  int64_t now_ns() const override { return clock_.now_ns(); }
  void started() override { log_.add(str("start ", id_)); }
  void token() override {
    ++tokens;
    if (tokens == 1 && on_first_token) on_first_token();
  }
  void phase(Phase) override {}
  void complete() override { log_.add(str("complete ", id_)); }
  void fail(const std::string& why) override { log_.add(str("fail ", id_, ": ", why)); }
  int tokens = 0;
  std::function<void()> on_first_token;

 private:
  EventLog& log_;
  int id_;
  const HarnessClock& clock_;
};

Query query(int64_t index, int prompt, int gen) {
  Query q;
  q.index = index;
  q.sample_index = index;
  q.prompt_tokens = prompt;
  q.gen_tokens = gen;
  return q;
}

// Request 1 arrives while request 0 (30 tokens to generate) has produced its first token: it is
// issued from inside request 0's first token callback, so it is queued before the engine's next
// step whatever the machine's speed. Continuous batching admits it at that step, before request 0
// completes; static batching runs request 0's batch to completion first.
TEST(BatchingSut, ContinuousAdmitsALateArrivalIntoTheRunningBatchStaticDoesNot) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto model = stories260k_w8a8();
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(model->config.vocab_size, 3, 8));
  for (BatchingMode mode : {BatchingMode::continuous, BatchingMode::static_batch}) {
    SCOPED_TRACE(batching_name(mode));
    BatchSutOptions o;
    o.mode = mode;
    o.max_batch = 4;
    o.batch_timeout_ms = 0;  // static: a batch starts with whoever is there
    LlamaBatchSut sut(model, o, prompts);
    TestClock clock;
    EventLog log;
    LoggingCtx c0(log, 0, clock), c1(log, 1, clock);
    const Query q0 = query(0, 8, 30), q1 = query(1, 8, 4);
    c0.on_first_token = [&] { sut.issue_async(q1, c1); };
    sut.issue_async(q0, c0);
    sut.start(clock);
    log.wait_done(2);
    sut.stop();
    ASSERT_LT(log.find("complete 0"), log.events.size());
    ASSERT_LT(log.find("complete 1"), log.events.size());
    if (mode == BatchingMode::continuous) {
      EXPECT_LT(log.find("start 1"), log.find("complete 0"));
      EXPECT_EQ(sut.stats().max_seqs, 2);
    } else {
      EXPECT_GT(log.find("start 1"), log.find("complete 0"));
      EXPECT_EQ(sut.stats().max_seqs, 1);
    }
    EXPECT_EQ(c0.tokens, 30);
    EXPECT_EQ(c1.tokens, 4);
  }
}

// Preemption without timing: every query is queued before the engine starts, so the schedule is
// a function of the queries alone. Four queries of 16 prompt + 40 generated tokens (55 positions,
// 4 blocks each) on a pool of 8 blocks: the first steps admit all four (their first chunks fit),
// growth runs the pool out and the youngest are preempted and recomputed. Every query still gets
// the tokens of a session alone; with the queue policy nobody is preempted.
TEST(BatchingSut, PreemptFreesTheYoungestAndRecomputesItToTheSameTokens) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto model = stories260k_w8a8();
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(model->config.vocab_size, 5, 8));
  for (KvPolicy policy : {KvPolicy::preempt, KvPolicy::queue}) {
    SCOPED_TRACE(kv_policy_name(policy));
    BatchSutOptions o;
    o.mode = BatchingMode::continuous;
    o.max_batch = 4;
    o.max_tokens_per_step = 64;
    o.kv_pool_tokens = 128;
    o.kv_policy = policy;
    o.record_outputs = true;
    LlamaBatchSut sut(model, o, prompts);
    TestClock clock;
    EventLog log;
    std::vector<std::unique_ptr<LoggingCtx>> ctxs;
    for (int i = 0; i < 4; ++i) {
      ctxs.push_back(std::make_unique<LoggingCtx>(log, i, clock));
      sut.issue_async(query(i, 16, 40), *ctxs.back());
    }
    sut.start(clock);
    log.wait_done(4);
    sut.stop();
    for (int i = 0; i < 4; ++i) EXPECT_LT(log.find(str("complete ", i)), log.events.size()) << i;
    const auto outs = sut.outputs();
    ASSERT_EQ(outs.size(), 4u);
    int preempted = 0;
    for (const auto& [index, out] : outs) {
      EXPECT_EQ(out.tokens, session_tokens(*model, out.prompt, 40)) << "query " << index;
      preempted += out.preempted;
    }
    const BatchSutStats st = sut.stats();
    EXPECT_EQ(st.preemptions, preempted);
    EXPECT_LE(st.kv_occupancy_max, 1.0);
    if (policy == KvPolicy::preempt) {
      EXPECT_GT(st.preemptions, 0);
      EXPECT_EQ(st.max_seqs, 4);
    } else {
      EXPECT_EQ(st.preemptions, 0);
      EXPECT_EQ(st.max_seqs, 2);  // two queries' 4 blocks each fill the pool
    }
  }
}

// Prefix caching, without timing: every prompt starts with the same 40-token system prompt
// (PromptSource::set_shared_prefix) and each query is issued from its predecessor's first-token
// callback, when the predecessor's whole prompt is in the cache. The first computes the prefix;
// each later one attaches its two whole blocks (32 positions: blocks of 16) and reads only the
// rest. Exact counts, and every query's tokens those of a session alone, with the cache on and off.
TEST(BatchingSut, PrefixCacheAttachesTheSharedSystemPromptOnceComputed) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto model = stories260k_w8a8();
  PromptSource src = PromptSource::synthetic(model->config.vocab_size, 9, 16);
  src.set_shared_prefix(40, 1);
  auto prompts = std::make_shared<const PromptSource>(src);
  for (BatchingMode mode : {BatchingMode::continuous, BatchingMode::static_batch})
    for (bool cache : {true, false}) {
      SCOPED_TRACE(str(batching_name(mode), cache ? " cache on" : " cache off"));
      BatchSutOptions o;
      o.mode = mode;
      o.max_batch = 4;
      o.max_tokens_per_step = 24;
      o.prefix_cache = cache;
      o.record_outputs = true;
      LlamaBatchSut sut(model, o, prompts);
      TestClock clock;
      EventLog log;
      constexpr int kQueries = 5;
      std::vector<std::unique_ptr<LoggingCtx>> ctxs;
      std::vector<Query> qs;
      int64_t prompt_tokens = 0;
      for (int i = 0; i < kQueries; ++i) {
        ctxs.push_back(std::make_unique<LoggingCtx>(log, i, clock));
        qs.push_back(query(i, 40 + 3 * i + 2, 6));
        prompt_tokens += qs.back().prompt_tokens;
      }
      for (int i = 0; i + 1 < kQueries; ++i)
        ctxs[i]->on_first_token = [&, i] { sut.issue_async(qs[i + 1], *ctxs[i + 1]); };
      sut.issue_async(qs[0], *ctxs[0]);
      sut.start(clock);
      log.wait_done(kQueries);
      sut.stop();
      const auto outs = sut.outputs();
      ASSERT_EQ(outs.size(), static_cast<size_t>(kQueries));
      for (const auto& [index, out] : outs) {
        ASSERT_EQ(out.prompt.size(), static_cast<size_t>(qs[index].prompt_tokens));
        EXPECT_TRUE(std::equal(out.prompt.begin(), out.prompt.begin() + 40, outs.at(0).prompt.begin()))
            << "query " << index << " does not start with the shared prefix";
        EXPECT_EQ(out.tokens, session_tokens(*model, out.prompt, 6)) << "query " << index;
        EXPECT_EQ(out.prefix_hit, cache && index > 0 ? 32 : 0) << "query " << index;
      }
      const BatchSutStats st = sut.stats();
      if (cache) {
        EXPECT_EQ(st.prefix_lookups, kQueries);
        EXPECT_EQ(st.prefix_hits, kQueries - 1);
        EXPECT_EQ(st.prefix_lookup_tokens, prompt_tokens);
        EXPECT_EQ(st.prefix_hit_tokens, 32 * (kQueries - 1));
        EXPECT_DOUBLE_EQ(st.prefix_hit_rate(), 32.0 * (kQueries - 1) / static_cast<double>(prompt_tokens));
        EXPECT_EQ(st.prefix_evictions, 0);
      } else {
        EXPECT_EQ(st.prefix_lookups, 0);
        EXPECT_EQ(st.prefix_hit_tokens, 0);
      }
    }
}

// With preemption, a readmitted query looks the cache up again (for the blocks it filled before
// it was preempted, unless the pool evicted them meanwhile: here the survivors' growth takes
// them); tokens are unchanged.
TEST(BatchingSut, PrefixCacheWithPreemptionKeepsTheTokensOfASessionAlone) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto model = stories260k_w8a8();
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(model->config.vocab_size, 5, 8));
  BatchSutOptions o;
  o.mode = BatchingMode::continuous;
  o.max_batch = 4;
  o.max_tokens_per_step = 64;
  o.kv_pool_tokens = 128;
  o.kv_policy = KvPolicy::preempt;
  o.prefix_cache = true;
  o.record_outputs = true;
  LlamaBatchSut sut(model, o, prompts);
  TestClock clock;
  EventLog log;
  std::vector<std::unique_ptr<LoggingCtx>> ctxs;
  for (int i = 0; i < 4; ++i) {
    ctxs.push_back(std::make_unique<LoggingCtx>(log, i, clock));
    sut.issue_async(query(i, 16, 40), *ctxs.back());
  }
  sut.start(clock);
  log.wait_done(4);
  sut.stop();
  const auto outs = sut.outputs();
  ASSERT_EQ(outs.size(), 4u);
  for (const auto& [index, out] : outs) EXPECT_EQ(out.tokens, session_tokens(*model, out.prompt, 40)) << "query " << index;
  const BatchSutStats st = sut.stats();
  EXPECT_GT(st.preemptions, 0);
  EXPECT_EQ(st.prefix_lookups, 4 + st.preemptions);
  EXPECT_EQ(st.prefix_hit_tokens % 16, 0);
  // The running sequences grow into the blocks the preempted ones released: cached blocks are
  // evicted (least recently released first) rather than a running sequence refused.
  EXPECT_GT(st.prefix_evictions, 0);
}

TEST(PromptSourcePrefix, EveryPromptStartsWithItsSharedPrefix) {
  PromptSource p = PromptSource::synthetic(1000, 11, 64);
  std::vector<int> a0, plain;
  p.fill(4, 30, plain);
  p.set_shared_prefix(20, 2);
  std::vector<int> a, b, c, short_one;
  p.fill(4, 30, a);   // prefix 0
  p.fill(6, 30, b);   // prefix 0
  p.fill(5, 30, c);   // prefix 1
  p.fill(6, 12, short_one);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 20, b.begin()));
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + 20, c.begin()));
  EXPECT_TRUE(std::equal(short_one.begin(), short_one.end(), a.begin())) << "a prompt shorter than the prefix is its opening";
  EXPECT_FALSE(std::equal(a.begin() + 20, a.end(), b.begin() + 20)) << "the samples' own tokens are theirs";
  EXPECT_TRUE(std::equal(a.begin() + 20, a.end(), plain.begin())) << "after the prefix, the sample's own opening";
  EXPECT_THROW(p.set_shared_prefix(-1, 1), Error);
  EXPECT_THROW(p.set_shared_prefix(8, 0), Error);
}

// A query the pool cannot hold alone fails with the sizes named; the SUT goes on serving.
TEST(BatchingSut, AQueryLargerThanThePoolFailsNamingTheSizes) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto model = stories260k_w8a8();
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(model->config.vocab_size, 5, 8));
  BatchSutOptions o;
  o.kv_pool_tokens = 32;
  LlamaBatchSut sut(model, o, prompts);
  TestClock clock;
  EventLog log;
  LoggingCtx big(log, 0, clock), small(log, 1, clock);
  sut.issue_async(query(0, 30, 10), big);
  sut.issue_async(query(1, 8, 4), small);
  sut.start(clock);
  log.wait_done(2);
  sut.stop();
  EXPECT_LT(log.find("fail 0: the query needs 39 KV positions (30 prompt + 10 generated - 1) but kv_pool_tokens holds 32"),
            log.events.size());
  EXPECT_LT(log.find("complete 1"), log.events.size());
}

// ---- scenario keys ------------------------------------------------------------------------

const char* kServing = R"([scenario]
name = "b"
question = "q"

[model]
source = "synthetic:stories260k"

[matrix]
format = ["w8a8"]
batching = ["none", "static", "continuous"]
max_batch = [4, 8]
max_tokens_per_step = [64]
kv_pool_tokens = [0, 512]
kv_policy = ["queue", "preempt"]
batch_timeout_ms = [5]

[load]
pattern = "server"
target_qps = 4
)";

std::string error_of(const std::string& text) {
  try {
    const Scenario s = parse_scenario_text(text, "b.toml");
    open_model_family(s);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string with(const std::string& from, const std::string& to) {
  std::string t = kServing;
  const size_t at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return t.replace(at, from.size(), to);
}

TEST(BatchingScenario, KeysCrossOnlyWhereTheModeReadsThem) {
  const Scenario s = parse_scenario_text(kServing, "b.toml");
  const auto v = s.variants();
  // none: once (max_batch 1, the batching keys not crossed); static: 2 max_batch x 2 pools;
  // continuous: 2 max_batch x 2 pools x 2 policies.
  ASSERT_EQ(v.size(), 1u + 4u + 8u);
  EXPECT_EQ(v[0].batching, BatchingMode::none);
  EXPECT_EQ(v[0].max_batch, 1);
  EXPECT_EQ(v[0].label(), "w8a8 t1 w1");
  EXPECT_EQ(v[1].batching, BatchingMode::static_batch);
  EXPECT_EQ(v[1].max_batch, 4);
  EXPECT_EQ(v[1].label(), "w8a8 t1 w1 b4 static tok64 wait5ms");
  // max_batch is crossed outside batching: b4's none, 2 static, 4 continuous; then b8's.
  EXPECT_EQ(v[3].batching, BatchingMode::continuous);
  EXPECT_EQ(v[3].label(), "w8a8 t1 w1 b4 continuous tok64 queue");
  EXPECT_EQ(v[6].label(), "w8a8 t1 w1 b4 continuous tok64 kv512 preempt");
  EXPECT_EQ(v[7].label(), "w8a8 t1 w1 b8 static tok64 wait5ms");
  EXPECT_EQ(v[12].max_batch, 8);
  EXPECT_EQ(v[12].kv_policy, KvPolicy::preempt);
  EXPECT_EQ(v[12].kv_pool_tokens, 512);
}

TEST(BatchingScenario, PrefixCacheIsCrossedWithTheBatchingModesOnlyAndThePrefixAddsToThePrompt) {
  const Scenario s = parse_scenario_text(
      with("batch_timeout_ms = [5]", "batch_timeout_ms = [5]\nprefix_cache = [false, true]"), "b.toml");
  const auto v = s.variants();
  ASSERT_EQ(v.size(), 1u + 8u + 16u);  // none once; static and continuous doubled
  EXPECT_FALSE(v[0].prefix_cache);
  EXPECT_FALSE(v[1].prefix_cache);
  EXPECT_TRUE(v[2].prefix_cache);
  EXPECT_EQ(v[2].label(), "w8a8 t1 w1 b4 static tok64 wait5ms prefix-cache");
  Scenario p = parse_scenario_text(with("[load]", "[workload]\nshared_prefix_tokens = 100\nshared_prefixes = 3\n\n[load]"), "b.toml");
  EXPECT_EQ(p.shared_prefix_tokens, 100);
  EXPECT_EQ(p.shared_prefixes, 3);
  EXPECT_EQ(p.prompt_tokens.offset, 100);
  EXPECT_EQ(p.prompt_tokens.upper_bound(), 100 + p.prompt_tokens.max);
  for (uint64_t r = 0; r < 50; ++r) EXPECT_GE(p.prompt_tokens.draw(r * 7919, r * 104729), 100 + p.prompt_tokens.min);
}

TEST(BatchingScenario, BadKeysAreRefusedNamingTheKey) {
  EXPECT_EQ(error_of(with(R"(batching = ["none", "static", "continuous"])", R"(batching = ["none", "dynamic"])")),
            "b.toml:10:21: key 'matrix.batching': unknown batching 'dynamic' (none: one sequence per worker; static: "
            "batches formed and run to completion; continuous: queries join and leave the running batch at every step)");
  EXPECT_EQ(error_of(with(R"(kv_policy = ["queue", "preempt"])", R"(kv_policy = ["evict"])")),
            "b.toml:14:14: key 'matrix.kv_policy': unknown kv_policy 'evict' (queue: admit only what fits the KV pool; "
            "preempt: free the youngest sequence when the pool is full and recompute it later)");
  EXPECT_EQ(error_of(with("max_tokens_per_step = [64]", "max_tokens_per_step = [0]")),
            "b.toml:12:24: key 'matrix.max_tokens_per_step': must be in [1, 65536], got 0");
  EXPECT_EQ(error_of(with("kv_pool_tokens = [0, 512]", "kv_pool_tokens = [8]")),
            "b.toml:13:19: key 'matrix.kv_pool_tokens': must be 0 (max_batch x the context) or in [16, 16777216] "
            "positions, got 8");
  EXPECT_EQ(error_of(with("batch_timeout_ms = [5]", "batch_timeout_ms = [\"5\"]")),
            "b.toml:15:21: key 'matrix.batch_timeout_ms': expected a number, got string");
  // Keys a mode of the list does not read.
  EXPECT_NE(error_of(with(R"(batching = ["none", "static", "continuous"])", R"(batching = ["none", "static"])"))
                .find("key 'matrix.kv_policy': only meaningful with matrix.batching \"continuous\""),
            std::string::npos);
  EXPECT_NE(error_of(with(R"(batching = ["none", "static", "continuous"])", R"(batching = ["none", "continuous"])"))
                .find("key 'matrix.batch_timeout_ms': only meaningful with matrix.batching \"static\""),
            std::string::npos);
  EXPECT_NE(error_of(with("max_batch = [4, 8]", "max_batch = [4, 8]\nworkers = [2]"))
                .find("key 'matrix.workers': static and continuous batching serve from one engine thread: workers must "
                      "be 1, got 2"),
            std::string::npos);
  // The engine's KV pool counts in the memory check, before anything runs (2^24 positions of
  // stories260K: 5 layers x 2 x 64 floats each, 40 GiB).
  {
    const char* before = std::getenv("CIBENCH_MEMORY_AVAILABLE_BYTES");
    const std::string saved = before ? before : "";
    setenv("CIBENCH_MEMORY_AVAILABLE_BYTES", "8000000000", 1);
    const std::string e = error_of(with("kv_pool_tokens = [0, 512]", "kv_pool_tokens = [16777216]"));
    if (before) setenv("CIBENCH_MEMORY_AVAILABLE_BYTES", saved.c_str(), 1);
    else unsetenv("CIBENCH_MEMORY_AVAILABLE_BYTES");
    EXPECT_NE(e.find("b.toml:13:"), std::string::npos) << e;
    EXPECT_NE(e.find("key 'matrix.kv_pool_tokens': variant w8a8 t1 w1 b4 static tok64 kv16777216"), std::string::npos) << e;
    EXPECT_NE(e.find("the batch engine (KV pool, scratch)"), std::string::npos) << e;
  }
  // Prefix caching: a static / continuous key; the shared prefix is the workload's.
  EXPECT_NE(error_of(with("batch_timeout_ms = [5]", "batch_timeout_ms = [5]\nprefix_cache = [1]"))
                .find("key 'matrix.prefix_cache': expected true or false, got integer"),
            std::string::npos);
  EXPECT_NE(error_of(with(R"(batching = ["none", "static", "continuous"]
max_batch = [4, 8]
max_tokens_per_step = [64]
kv_pool_tokens = [0, 512]
kv_policy = ["queue", "preempt"]
batch_timeout_ms = [5])",
                          "batching = [\"none\"]\nprefix_cache = [true]"))
                .find("key 'matrix.prefix_cache': only meaningful with matrix.batching \"static\" or \"continuous\""),
            std::string::npos);
  EXPECT_NE(error_of(with("[load]", "[workload]\nshared_prefixes = 2\n\n[load]"))
                .find("key 'workload.shared_prefixes': only meaningful with shared_prefix_tokens > 0"),
            std::string::npos);
  EXPECT_NE(error_of(with("[load]", "[workload]\nshared_prefix_tokens = -3\n\n[load]")).find("key 'workload.shared_prefix_tokens'"),
            std::string::npos);
  // Batching is a decoder's: a test SUT refuses it, naming the key.
  EXPECT_NE(error_of(with("synthetic:stories260k", "sut:null")).find("key 'matrix.batching': batching \"static\" is "
                                                                     "implemented for Llama-family decoders"),
            std::string::npos);
}

}  // namespace
}  // namespace cibench
