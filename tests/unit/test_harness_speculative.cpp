// Speculative decoding in the harness: the speculating Llama SUT (harness/lib/sut_llama_spec.h)
// gives every query the target's own greedy tokens, reports each token once, counts exactly what
// a SpeculativeDecoder counts on the same prompts (warm-ups left out) and splits the generation
// time into prefill, draft and verify; the scenario keys speculative / draft_tokens cross and are
// refused with the key named; a suite stores acceptance and the speed-up against the same build
// without speculation, whichever of the two ran first.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/runtime/sampler.h"
#include "engines/runtime/session.h"
#include "engines/runtime/speculative.h"
#include "harness/lib/family.h"
#include "harness/lib/load.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/suite.h"
#include "harness/lib/sut_llama_spec.h"
#include "test_support.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

std::vector<int> plain_greedy(const LlamaModel& m, const std::vector<int>& prompt, int gen) {
  LlamaSession s(m, SessionOptions{});
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

std::shared_ptr<const LlamaModel> build(const std::string& rel, const std::string& format) {
  LlamaBuildOptions o;
  o.format = format;
  return std::make_shared<const LlamaModel>(build_llama(open_llama_source(test::shared_path(rel)), o));
}

// A query context on a clock that advances 1000 ns at every reading: every interval is known.
class CountingCtx : public QueryContext {
 public:
  int64_t now_ns() const override { return clock_ += 1000; }
  void token() override {
    ++tokens;
    if (phase_ != Phase::prefill || tokens > 1) misordered = misordered || tokens == 1;
  }
  void phase(Phase p) override {
    phases.push_back(p);
    phase_ = p;
    if (p == Phase::decode && tokens != 1) misordered = true;  // decode starts after the first token
  }
  void complete() override { ++completes; }
  void fail(const std::string& why) override { failure = why; }
  int tokens = 0, completes = 0;
  bool misordered = false;
  std::vector<Phase> phases;
  std::string failure;

 private:
  mutable int64_t clock_ = 0;
  Phase phase_ = Phase::decode;
};

Query query(int64_t index, int64_t sample, int prompt, int gen) {
  Query q;
  q.index = index;
  q.sample_index = sample;
  q.prompt_tokens = prompt;
  q.gen_tokens = gen;
  return q;
}

class SpecSutAllIsas : public ::testing::TestWithParam<Isa> {};

// stories5M in w8a8 (int8 activations: verification's logits are a step's bit for bit, so the
// tokens are exactly the plain ones), drafted for by stories260K, by its own int4_g32 weights and
// by prompt lookup on repetitive synthetic prompts (a run of 5 tokens repeated).
TEST_P(SpecSutAllIsas, EveryQueryGetsTheTargetsGreedyTokensAndTheDecodersCounts) {
  CIBENCH_REQUIRE_SHARED("models/stories5M");
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  const auto target = build("models/stories5M/stories5M.bin", "w8a8");
  struct Case {
    std::string drafter;
    std::shared_ptr<const LlamaModel> draft;
  };
  const Case cases[] = {{"draft:stories260K", build("models/stories260K/stories260K.bin", "w8a8")},
                        {"self:int4_g32", build("models/stories5M/stories5M.bin", "int4_g32")},
                        {"lookup:1-3", nullptr}};
  PromptSource ps = PromptSource::synthetic(target->config.vocab_size, 11, 16);
  ps.set_repeat(5);
  auto prompts = std::make_shared<const PromptSource>(ps);
  constexpr int kK = 3, kPrompt = 17, kGen = 30;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.drafter);
    DrafterSpec spec = parse_drafter_spec(c.drafter.rfind("draft:", 0) == 0 ? "draft:x" : c.drafter);
    LlamaSpecSut sut(target, c.draft, spec, kK, SessionOptions{}, 1, prompts);
    sut.start_worker(0);
    // A warm-up query (index < 0) first: served, not counted.
    {
      CountingCtx warm;
      sut.issue(0, query(-1, 9, kPrompt, kGen), warm);
      EXPECT_EQ(warm.tokens, kGen);
    }
    SpeculativeStats expect;
    expect.drafted_at.assign(kK, 0);
    expect.accepted_at.assign(kK, 0);
    for (int64_t s = 0; s < 3; ++s) {
      CountingCtx ctx;
      sut.issue(0, query(s, s, kPrompt, kGen), ctx);
      EXPECT_EQ(ctx.tokens, kGen);
      EXPECT_EQ(ctx.completes, 1);
      EXPECT_FALSE(ctx.misordered);
      ASSERT_FALSE(ctx.phases.empty());
      EXPECT_EQ(ctx.phases.front(), Phase::prefill);
      EXPECT_EQ(ctx.phases.back(), Phase::decode);
      std::vector<int> prompt;
      prompts->fill(s, kPrompt, prompt);
      EXPECT_EQ(sut.last_tokens(0), plain_greedy(*target, prompt, kGen)) << "sample " << s;
      // What a decoder of its own counts on the same prompt.
      LlamaSession ts(*target, SessionOptions{});
      std::unique_ptr<Drafter> d;
      if (c.draft) d = std::make_unique<DraftModelDrafter>(*c.draft, *target, SessionOptions{});
      else d = std::make_unique<PromptLookupDrafter>(1, 3);
      SpeculativeOptions so;
      so.draft_tokens = kK;
      SpeculativeDecoder dec(ts, *d, so);
      EXPECT_EQ(dec.generate(prompt, kGen), sut.last_tokens(0));
      const SpeculativeStats& st = dec.stats();
      expect.drafted += st.drafted;
      expect.accepted += st.accepted;
      expect.draft_steps += st.draft_steps;
      expect.verify_steps += st.verify_steps;
      expect.target_forwards += st.target_forwards;
      expect.draft_forwards += st.draft_forwards;
      expect.generated += st.generated;
      for (int i = 0; i < kK; ++i) {
        expect.drafted_at[i] += st.drafted_at[i];
        expect.accepted_at[i] += st.accepted_at[i];
      }
    }
    sut.stop_worker(0);
    const SpecSutStats got = sut.stats();
    EXPECT_EQ(got.queries, 3);
    EXPECT_EQ(got.spec.generated, 3 * kGen);
    EXPECT_EQ(got.spec.drafted, expect.drafted);
    EXPECT_EQ(got.spec.accepted, expect.accepted);
    EXPECT_EQ(got.spec.draft_steps, expect.draft_steps);
    EXPECT_EQ(got.spec.verify_steps, expect.verify_steps);
    EXPECT_EQ(got.spec.target_forwards, expect.target_forwards);
    EXPECT_EQ(got.spec.draft_forwards, expect.draft_forwards);
    EXPECT_EQ(got.spec.drafted_at, expect.drafted_at);
    EXPECT_EQ(got.spec.accepted_at, expect.accepted_at);
    EXPECT_GT(got.spec.drafted, 0);
    // Every token is a verification's: the steps emitted the generation (1 + accepted per step).
    EXPECT_EQ(got.spec.verify_steps + got.spec.accepted, got.spec.generated);
    if (!c.draft) EXPECT_EQ(got.spec.draft_forwards, 0);
    else EXPECT_GT(got.spec.draft_forwards, 0);
    // On the counting clock every reading is 1000 ns after the previous one: prefill() .. done()
    // is prefill, draft and verify time plus, after each verification, the one reading from
    // handing its tokens out to the next draft (or the end).
    EXPECT_EQ(got.prefill_ns + got.draft_ns + got.verify_ns + 1000 * got.spec.verify_steps, got.total_ns);
    EXPECT_GT(got.verify_ns, 0);
    EXPECT_GT(got.draft_ns, 0);
    EXPECT_DOUBLE_EQ(got.draft_share() + got.verify_share(),
                     static_cast<double>(got.draft_ns + got.verify_ns) / static_cast<double>(got.total_ns));
  }
}

// Two workers, each with its own session and drafter, under a closed loop of two clients (the
// statistics are summed under a lock; the TSan build runs this): every timed query is counted once.
TEST(SpecSut, TwoWorkersServeAClosedLoopAndEveryTimedQueryIsCountedOnce) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const auto target = build("models/stories260K/stories260K.bin", "w8a8");
  PromptSource ps = PromptSource::synthetic(target->config.vocab_size, 5, 32);
  ps.set_repeat(3);
  auto prompts = std::make_shared<const PromptSource>(ps);
  LlamaSpecSut sut(target, nullptr, parse_drafter_spec("lookup:1-2"), 2, SessionOptions{}, 2, prompts);
  LoadSettings s;
  s.pattern = Pattern::closed_loop;
  s.clients = 2;
  s.workers = 2;
  s.prompt.dist = "uniform";
  s.prompt.min = 4;
  s.prompt.max = 12;
  s.gen.dist = "uniform";
  s.gen.min = 2;
  s.gen.max = 10;
  s.n_samples = prompts->size();
  s.warmup_queries = 2;
  s.min_queries = 12;
  s.min_duration_ns = 0;
  s.max_duration_ns = 60'000'000'000;
  const LoadResult r = run_load(sut, s);
  ASSERT_EQ(r.error, "");
  const auto recs = r.recorder->records();
  int64_t tokens = 0;
  for (const auto& rec : recs) tokens += rec.output_tokens;
  const SpecSutStats st = sut.stats();
  EXPECT_EQ(st.queries, static_cast<int64_t>(recs.size()));
  EXPECT_EQ(st.spec.generated, tokens);
  EXPECT_EQ(st.spec.verify_steps + st.spec.accepted, st.spec.generated);
  EXPECT_GE(st.total_ns, st.prefill_ns + st.draft_ns + st.verify_ns);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SpecSutAllIsas, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(SpecSut, RefusesADraftOfAnotherVocabularyAndAMissingOrSurplusDraftModel) {
  CIBENCH_REQUIRE_SHARED("models/stories5M");
  const auto target = build("models/stories5M/stories5M.bin", "w8a8");
  auto prompts = std::make_shared<const PromptSource>(PromptSource::synthetic(target->config.vocab_size, 1, 4));
  // A draft of the 32000-token vocabulary (the synthetic TinyStories-15M shape) for a tok512 target.
  LlamaBuildOptions o;
  o.format = "int4_g32";
  const auto other = std::make_shared<const LlamaModel>(build_llama(open_llama_source("synthetic:tinystories-15m"), o));
  try {
    LlamaSpecSut sut(target, other, parse_drafter_spec("draft:x"), 2, SessionOptions{}, 1, prompts);
    ADD_FAILURE() << "a draft of 32000 tokens for a target of 512 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a vocabulary of 32000 tokens, the target"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" 512: speculative decoding needs the same tokenizer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LlamaSpecSut(target, nullptr, parse_drafter_spec("self:int4_g32"), 2, SessionOptions{}, 1, prompts), Error);
  EXPECT_THROW(LlamaSpecSut(target, target, parse_drafter_spec("lookup"), 2, SessionOptions{}, 1, prompts), Error);
  EXPECT_THROW(LlamaSpecSut(target, nullptr, parse_drafter_spec("lookup"), 0, SessionOptions{}, 1, prompts), Error);
  SessionOptions none;
  none.kv_mode = KvMode::none;
  EXPECT_THROW(LlamaSpecSut(target, nullptr, parse_drafter_spec("lookup"), 2, none, 1, prompts), Error);
}

TEST(DrafterSpecText, ParsesEachDrafterAndRefusesTheRestNamingTheText) {
  EXPECT_EQ(parse_drafter_spec("off").kind, DrafterSpec::Kind::off);
  EXPECT_EQ(parse_drafter_spec("self").text(), "self:int4_g32");
  EXPECT_EQ(parse_drafter_spec("self:int4_g128_a8").text(), "self:int4_g128_a8");
  EXPECT_EQ(parse_drafter_spec("draft:synthetic:stories260k").model, "synthetic:stories260k");
  EXPECT_EQ(parse_drafter_spec("lookup").text(), "lookup:1-3");
  const DrafterSpec l = parse_drafter_spec("lookup:2-5");
  EXPECT_EQ(l.min_ngram, 2);
  EXPECT_EQ(l.max_ngram, 5);
  auto error = [](const std::string& t) {
    try {
      parse_drafter_spec(t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error("self:int3").find("drafter 'self:int3': "), std::string::npos) << error("self:int3");
  EXPECT_NE(error("lookup:3-1").find("1 <= MIN <= MAX <= 16"), std::string::npos);
  EXPECT_NE(error("lookup:1-3x").find("1 <= MIN <= MAX <= 16"), std::string::npos);
  EXPECT_NE(error("lookup:0-2").find("1 <= MIN <= MAX <= 16"), std::string::npos);
  EXPECT_NE(error("draft:").find("draft needs a model"), std::string::npos);
  EXPECT_NE(error("medusa").find("drafter 'medusa': unknown drafter"), std::string::npos);
  EXPECT_NE(error("off:1").find("unknown drafter"), std::string::npos);
}

// ---- scenario keys ------------------------------------------------------------------------

const char* kSpec = R"([scenario]
name = "s"
question = "q"

[model]
source = "synthetic:stories260k"

[matrix]
format = ["w8a8"]
threads = [1, 2]
speculative = ["off", "self:int4_g128_a8", "lookup:1-3"]
draft_tokens = [2, 4]

[load]
pattern = "single_stream"
)";

std::string with(const std::string& from, const std::string& to) {
  std::string t = kSpec;
  const size_t at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return t.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    const Scenario s = parse_scenario_text(text, "s.toml");
    open_model_family(s);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SpeculativeScenario, OffIsNotCrossedWithDraftTokensAndEachDrafterHasItsPlainTwin) {
  const Scenario s = parse_scenario_text(kSpec, "s.toml");
  const auto v = s.variants();
  ASSERT_EQ(v.size(), 2u * (1u + 2u * 2u));  // per thread count: off, 2 drafters x 2 k
  EXPECT_EQ(v[0].label(), "w8a8 t1 w1");
  EXPECT_FALSE(v[0].speculative());
  EXPECT_EQ(v[0].draft_tokens, 0);
  EXPECT_EQ(v[1].label(), "w8a8 t1 w1 spec=self:int4_g128_a8 k2");
  EXPECT_EQ(v[2].label(), "w8a8 t1 w1 spec=self:int4_g128_a8 k4");
  EXPECT_EQ(v[4].label(), "w8a8 t1 w1 spec=lookup:1-3 k4");
  EXPECT_EQ(v[4].drafter.kind, DrafterSpec::Kind::lookup);
  EXPECT_EQ(v[5].label(), "w8a8 t2 w1");
  for (int i = 1; i < 5; ++i) EXPECT_EQ(v[i].spec_baseline, 0) << v[i].label();
  for (int i = 6; i < 10; ++i) EXPECT_EQ(v[i].spec_baseline, 5) << v[i].label();
  EXPECT_EQ(v[0].spec_baseline, -1);
  // Without "off" in the list no variant has a twin.
  const Scenario n = parse_scenario_text(with(R"(["off", "self:int4_g128_a8", "lookup:1-3"])", R"(["lookup"])"), "s.toml");
  for (const Variant& x : n.variants()) EXPECT_EQ(x.spec_baseline, -1);
  // Repetitive synthetic prompts.
  const Scenario r = parse_scenario_text(with("[load]", "[workload]\nprompt_repeat = 6\n\n[load]"), "s.toml");
  EXPECT_EQ(r.prompt_repeat, 6);
}

TEST(SpeculativeScenario, BadKeysAreRefusedNamingTheKey) {
  EXPECT_EQ(error_of(with(R"("lookup:1-3"])", R"("lookup:9-3"])")),
            "s.toml:11:44: key 'matrix.speculative': drafter 'lookup:9-3': lookup takes MIN-MAX n-gram sizes, 1 <= MIN "
            "<= MAX <= 16 (expected off, self[:FORMAT] (the target's weights in FORMAT, default int4_g32), draft:MODEL "
            "(a model with the target's vocabulary) or lookup[:MIN-MAX] (n-gram prompt lookup, default 1-3))");
  EXPECT_NE(error_of(with("self:int4_g128_a8", "self:int5")).find("s.toml:11:23: key 'matrix.speculative': drafter 'self:int5': "),
            std::string::npos);
  EXPECT_EQ(error_of(with("draft_tokens = [2, 4]", "draft_tokens = [0]")),
            "s.toml:12:17: key 'matrix.draft_tokens': must be in [1, 64], got 0");
  EXPECT_NE(error_of(with(R"(["off", "self:int4_g128_a8", "lookup:1-3"])", R"(["off"])"))
                .find("key 'matrix.draft_tokens': only meaningful with a matrix.speculative drafter other than \"off\""),
            std::string::npos);
  EXPECT_NE(error_of(with("self:int4_g128_a8", "draft:no/such/model.bin"))
                .find("key 'matrix.speculative': draft model 'no/such/model.bin' not found"),
            std::string::npos);
  // Not with the batching engine: said in the error.
  const std::string b = error_of(with("threads = [1, 2]", "threads = [1]\nbatching = [\"none\", \"continuous\"]"));
  EXPECT_NE(b.find("key 'matrix.speculative': speculative decoding runs with batching \"none\""), std::string::npos) << b;
  EXPECT_NE(b.find("with batching \"continuous\" it is not implemented"), std::string::npos) << b;
  EXPECT_NE(error_of(with("threads = [1, 2]", "threads = [1]\nkv_mode = [\"none\"]"))
                .find("key 'matrix.speculative': speculative decoding needs a KV cache to roll back"),
            std::string::npos);
  {
    const std::string e = error_of(with("[load]", str("[workload]\nsource = \"eval\"\neval_set = \"",
                                                      test::shared_path("data/tinystories-validation-1000/tinystories_val_first1000.txt"),
                                                      "\"\nprompt_repeat = 3\n\n[load]")));
    EXPECT_NE(e.find("key 'workload.prompt_repeat': only meaningful with source = \"synthetic\""), std::string::npos) << e;
  }
  // Other families refuse it.
  EXPECT_NE(error_of(with("synthetic:stories260k", "sut:null")).find("is implemented for Llama-family decoders"),
            std::string::npos);
}

TEST(SpeculativeScenario, ADraftModelOfAnotherVocabularyIsRefusedBeforeAnythingRuns) {
  CIBENCH_REQUIRE_SHARED("models/stories5M");
  // stories5M reads tok512; the synthetic TinyStories-15M shape has the 32000-token vocabulary
  // (its source opens without generating weights).
  EXPECT_EQ(error_of(with("synthetic:stories260k", test::shared_path("models/stories5M/stories5M.bin"))), "(no error)");
  std::string t = with("synthetic:stories260k", test::shared_path("models/stories5M/stories5M.bin"));
  t.replace(t.find("self:int4_g128_a8"), std::string("self:int4_g128_a8").size(), "draft:synthetic:tinystories-15m");
  const std::string m = error_of(t);
  EXPECT_NE(m.find("key 'matrix.speculative': draft model synthetic:tinystories-15m has a vocabulary of 32000 tokens, "
                   "the target "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("512: speculative decoding needs the same tokenizer"), std::string::npos) << m;
}

// ---- a suite ------------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / str("cibench_spec_", name, "_", getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string db() const { return (path / "r.sqlite").string(); }
};

std::optional<double> num(const SqlValue& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::nullopt;
}

// The plain variant runs between the speculative ones (lookup first): each speed-up is linked
// whichever of the pair ran first, and is the ratio of the stored mean (and p95) TPOTs.
TEST(SpeculativeSuite, StoresAcceptanceAndTheSpeedUpAgainstThePlainTwin) {
  CIBENCH_REQUIRE_SHARED("models/stories5M");
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const std::string text = str(R"([scenario]
name = "spec"
question = "q"

[model]
source = ")", test::shared_path("models/stories5M/stories5M.bin"), R"("

[matrix]
format = ["w8a8"]
speculative = ["lookup:1-3", "off", "draft:)", test::shared_path("models/stories260K/stories260K.bin"), R"("]
draft_tokens = [3]

[workload]
source = "synthetic"
samples = 8
prompt_repeat = 4
prompt_tokens = 16
gen_tokens = 24

[load]
pattern = "single_stream"

[run]
warmup_queries = 1
min_queries = 4
min_duration_ms = 0

[counters]
enabled = false
)");
  TempDir dir("suite");
  SuiteOptions o;
  o.db_path = dir.db();
  const SuiteResult res = run_suite(parse_scenario_text(text, "spec.toml"), o);
  ASSERT_EQ(res.failed_variants, 0);
  Store st(o.db_path, false);
  const QueryResult q = st.query(
      "SELECT variant_id, speculative, draft_tokens, spec_drafted, spec_accepted, spec_draft_steps, spec_acceptance, "
      "spec_mean_accepted_length, spec_acceptance_by_position, spec_draft_forwards, spec_draft_share, spec_verify_share, "
      "spec_reason, spec_baseline_variant_id, spec_speedup, spec_speedup_p95, spec_speedup_reason, tpot_mean_ms, "
      "tpot_p95_ms, output_tokens FROM variants WHERE run_id = ? ORDER BY variant_index",
      {res.run_id});
  ASSERT_EQ(q.rows.size(), 3u);
  auto at = [&](size_t r, const char* c) { return q.rows[r][q.col(c)]; };
  // Row 1: plain.
  EXPECT_EQ(sql_to_string(at(1, "speculative")), "off");
  EXPECT_FALSE(num(at(1, "draft_tokens")));
  EXPECT_FALSE(num(at(1, "spec_acceptance")));
  EXPECT_EQ(sql_to_string(at(1, "spec_reason")), "speculative decoding off");
  const int64_t plain_id = std::get<int64_t>(at(1, "variant_id"));
  for (size_t r : {size_t{0}, size_t{2}}) {
    SCOPED_TRACE(sql_to_string(at(r, "speculative")));
    EXPECT_EQ(*num(at(r, "draft_tokens")), 3);
    const double drafted = *num(at(r, "spec_drafted")), accepted = *num(at(r, "spec_accepted"));
    ASSERT_GT(drafted, 0);
    EXPECT_DOUBLE_EQ(*num(at(r, "spec_acceptance")), accepted / drafted);
    EXPECT_DOUBLE_EQ(*num(at(r, "spec_mean_accepted_length")), 1 + accepted / *num(at(r, "spec_draft_steps")));
    const auto by = nlohmann::json::parse(sql_to_string(at(r, "spec_acceptance_by_position")));
    ASSERT_EQ(by.size(), 3u);
    ASSERT_TRUE(by[0].is_number());
    EXPECT_GE(by[0].get<double>(), 0.0);
    EXPECT_LE(by[0].get<double>(), 1.0);
    const double ds = *num(at(r, "spec_draft_share")), vs = *num(at(r, "spec_verify_share"));
    EXPECT_GE(ds, 0.0);
    EXPECT_GT(vs, 0.0);
    EXPECT_LE(ds + vs, 1.0);
    EXPECT_TRUE(sql_to_string(at(r, "spec_reason")).empty());
    // Linked to the plain row, the ratio of the stored TPOTs.
    EXPECT_EQ(*num(at(r, "spec_baseline_variant_id")), plain_id);
    EXPECT_DOUBLE_EQ(*num(at(r, "spec_speedup")), *num(at(1, "tpot_mean_ms")) / *num(at(r, "tpot_mean_ms")));
    EXPECT_DOUBLE_EQ(*num(at(r, "spec_speedup_p95")), *num(at(1, "tpot_p95_ms")) / *num(at(r, "tpot_p95_ms")));
    EXPECT_TRUE(sql_to_string(at(r, "spec_speedup_reason")).empty());
  }
  EXPECT_EQ(*num(at(0, "spec_draft_forwards")), 0);  // prompt lookup
  EXPECT_GT(*num(at(2, "spec_draft_forwards")), 0);   // stories260K
}

TEST(SpeculativeSuite, WithoutAPlainTwinTheSpeedUpIsNullWithTheReason) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const std::string text = str(R"([scenario]
name = "spec"
question = "q"

[model]
source = ")", test::shared_path("models/stories260K/stories260K.bin"), R"("

[matrix]
format = ["w8a8"]
speculative = ["lookup:1-2"]
draft_tokens = [2]

[workload]
prompt_repeat = 3
prompt_tokens = 9
gen_tokens = 12

[load]
pattern = "single_stream"

[run]
warmup_queries = 0
min_queries = 2
min_duration_ms = 0

[counters]
enabled = false
)");
  TempDir dir("nobase");
  SuiteOptions o;
  o.db_path = dir.db();
  const SuiteResult res = run_suite(parse_scenario_text(text, "spec.toml"), o);
  ASSERT_EQ(res.failed_variants, 0);
  Store st(o.db_path, false);
  const QueryResult q = st.query(
      "SELECT spec_speedup, spec_speedup_reason, spec_baseline_variant_id, spec_acceptance FROM variants WHERE run_id = ?",
      {res.run_id});
  ASSERT_EQ(q.rows.size(), 1u);
  EXPECT_FALSE(num(q.rows[0][0]));
  EXPECT_EQ(sql_to_string(q.rows[0][1]), "no variant of this build with speculative = \"off\" in the matrix");
  EXPECT_FALSE(num(q.rows[0][2]));
  EXPECT_TRUE(num(q.rows[0][3]));
}

}  // namespace
}  // namespace cibench
