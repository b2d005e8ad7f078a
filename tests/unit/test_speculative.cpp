// Speculative decoding: KV rollback, one-forward verification, the drafters, greedy output equal
// to plain greedy decoding, and the sampling rule's output distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/models/llama_reference.h"
#include "engines/models/synthetic.h"
#include "engines/runtime/sampler.h"
#include "engines/runtime/session.h"
#include "engines/runtime/speculative.h"
#include "pair_tolerance.h"
#include "test_support.h"

using namespace cibench;

namespace {

const std::string k260 = "models/stories260K/stories260K.bin";
const std::string k5M = "models/stories5M/stories5M.bin";

LlamaModel build(const LlamaSource& src, const std::string& format) {
  LlamaBuildOptions bo;
  bo.format = format;
  return build_llama(src, bo);
}

SessionOptions at_isa(Isa isa, int max_batch = 128) {
  SessionOptions so;
  so.isa = static_cast<int>(isa);
  so.max_batch = max_batch;
  return so;
}

std::vector<int> some_tokens(int n, int vocab, int salt) {
  std::vector<int> t = {1};  // BOS
  for (int i = 1; i < n; ++i) t.push_back((i * 37 + 11 + 53 * salt) % vocab);
  return t;
}

// ---- Rewind ----------------------------------------------------------------------------------

TEST(SessionRewind, RejectsPositionsOutsideTheContext) {
  CIBENCH_REQUIRE_SHARED(k260);
  const LlamaModel model = build_llama(open_llama_source(test::shared_path(k260)));
  LlamaSession s(model, SessionOptions{});
  const std::vector<int> t = some_tokens(6, 512, 0);
  s.prefill(t.data(), 6);
  EXPECT_THROW(s.rewind(7), Error);
  EXPECT_THROW(s.rewind(-1), Error);
  EXPECT_EQ(s.position(), 6);
  s.rewind(6);
  EXPECT_EQ(s.position(), 6);
  s.rewind(2);
  EXPECT_EQ(s.position(), 2);
  EXPECT_THROW(s.rewind(3), Error);
  s.rewind(0);
  EXPECT_EQ(s.position(), 0);
}

// Decoding past a rewind gives the logits of a session that never saw the dropped tokens, bit for
// bit (both step one token at a time, so every position is computed the same way), for every KV mode.
TEST(SessionRewind, ContinuesAsIfTheDroppedTokensWereNeverFed) {
  CIBENCH_REQUIRE_SHARED(k260);
  const LlamaSource src = open_llama_source(test::shared_path(k260));
  for (const char* format : {"f32", "w8a8"}) {
    const LlamaModel model = build(src, format);
    const int V = model.config.vocab_size;
    const std::vector<int> first = some_tokens(10, V, 1), alt = some_tokens(5, V, 2);
    std::vector<int> expect_toks(first.begin(), first.begin() + 6);
    expect_toks.insert(expect_toks.end(), alt.begin() + 1, alt.end());  // 4 other tokens
    for (KvMode kv : all_kv_modes()) {
      SCOPED_TRACE(std::string(format) + " kv " + kv_mode_name(kv));
      SessionOptions so;
      so.kv_mode = kv;
      LlamaSession a(model, so), b(model, so);
      std::vector<float> la(static_cast<size_t>(10) * V), lb(static_cast<size_t>(10) * V);
      a.forward_all(first.data(), 10, la.data());
      a.rewind(6);
      a.forward_all(expect_toks.data() + 6, 4, la.data());
      b.forward_all(expect_toks.data(), 10, lb.data());
      EXPECT_EQ(a.position(), 10);
      EXPECT_EQ(0, std::memcmp(la.data(), lb.data() + static_cast<size_t>(6) * V, static_cast<size_t>(4) * V * sizeof(float)));
    }
  }
}

// ---- Verify: one forward over n positions against n steps ------------------------------------
// Expected: bit-identical for the formats with int8 activations (their matrix kernels compute each
// output as an exact int32 sum times one float expression whatever the number of rows; everything
// else is per row), within pair_tolerance for f32 activations (matmul rows against matvec: the same
// network in binary32 with sums in other orders). Chunks of 4 check verify across chunk borders.

struct IsaModel {
  std::string model;
  Isa isa;
};

class Verify : public ::testing::TestWithParam<IsaModel> {};

TEST_P(Verify, LogitsOfOneForwardEqualStepsOrWithinRounding) {
  const IsaModel& c = GetParam();
  const std::string rel = c.model == "stories5M" ? k5M : k260;
  CIBENCH_REQUIRE_SHARED(rel);
  CIBENCH_REQUIRE_ISA(c.isa);
  test::IsaScope at(c.isa);
  const LlamaSource src = open_llama_source(test::shared_path(rel));
  const int V = src.config.vocab_size;
  const std::vector<int> toks = some_tokens(16, V, 3);
  const int pre = 5, n = 11;
  double tol = -1;
  const std::vector<std::pair<std::string, bool>> formats = {
      {"w8a8", true}, {"int4_g32_a8", true}, {"f32", false}, {"int4_g32", false}};
  for (const auto& [format, bit_identical] : formats) {
    const LlamaModel model = build(src, format);
    for (int max_batch : {128, 4}) {
      SCOPED_TRACE(format + " max_batch " + std::to_string(max_batch));
      LlamaSession a(model, at_isa(c.isa, max_batch)), b(model, at_isa(c.isa));
      a.prefill(toks.data(), pre);
      const float* got = a.verify(toks.data() + pre, n);
      EXPECT_EQ(a.position(), pre + n);
      std::vector<float> ref(static_cast<size_t>(pre + n) * V);
      b.forward_all(toks.data(), pre + n, ref.data());
      const float* want = ref.data() + static_cast<size_t>(pre) * V;
      double worst = 0;
      for (size_t j = 0; j < static_cast<size_t>(n) * V; ++j)
        worst = std::max(worst, std::fabs(static_cast<double>(got[j]) - want[j]));
      if (bit_identical) {
        EXPECT_EQ(0, std::memcmp(got, want, static_cast<size_t>(n) * V * sizeof(float))) << "worst " << worst;
      } else {
        if (tol < 0) tol = test::pair_tolerance(src, toks);
        EXPECT_LE(worst, tol);
      }
      std::printf("[ %s %s %s batch %d ] verify vs steps: max |logit difference| %.3g (tolerance %s)\n",
                  c.model.c_str(), isa_name(c.isa), format.c_str(), max_batch, worst,
                  bit_identical ? "0" : std::to_string(tol).c_str());
    }
  }
}

TEST(SessionVerify, RefusesKvModeNoneAndOverflow) {
  CIBENCH_REQUIRE_SHARED(k260);
  const LlamaModel model = build_llama(open_llama_source(test::shared_path(k260)));
  SessionOptions so;
  so.kv_mode = KvMode::none;
  LlamaSession none(model, so);
  const std::vector<int> t = some_tokens(4, 512, 0);
  EXPECT_THROW(none.verify(t.data(), 4), Error);
  so.kv_mode = KvMode::preallocated;
  so.max_context = 3;
  LlamaSession small(model, so);
  EXPECT_THROW(small.verify(t.data(), 4), Error);
}

// ---- Greedy speculative decoding equals plain greedy decoding ------------------------------------

struct Plain {
  std::vector<int> tokens;
  std::vector<float> logits;  // the logits each token was chosen from
};

Plain plain_greedy(const LlamaModel& model, Isa isa, const std::vector<int>& prompt, int n) {
  const int V = model.config.vocab_size;
  LlamaSession s(model, at_isa(isa));
  Plain r;
  const float* l = s.prefill(prompt.data(), static_cast<int>(prompt.size()));
  for (int i = 0; i < n; ++i) {
    r.logits.insert(r.logits.end(), l, l + V);
    r.tokens.push_back(Sampler::argmax(l, V));
    if (i + 1 < n) l = s.step(r.tokens.back());
  }
  return r;
}

// Tokens equal; for f32 activations (bit_identical false) a first difference is allowed only where
// plain greedy's two candidates are within twice the pair tolerance (a tie that rounding may break
// either way), and the comparison stops there.
void expect_same_greedy(const Plain& want, const std::vector<int>& got, int V, bool bit_identical, double tol) {
  ASSERT_EQ(got.size(), want.tokens.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want.tokens[i]) continue;
    ASSERT_FALSE(bit_identical) << "token " << i << ": speculative " << got[i] << ", plain " << want.tokens[i];
    const float* l = want.logits.data() + i * V;
    const double gap = static_cast<double>(l[want.tokens[i]]) - l[got[i]];
    EXPECT_LE(gap, 2.0 * tol) << "token " << i << ": speculative " << got[i] << ", plain " << want.tokens[i];
    std::printf("near tie at token %zu (gap %.3g), compared up to there\n", i, gap);
    return;
  }
}

void expect_consistent(const SpeculativeStats& st, int n, int prompt_len) {
  EXPECT_EQ(st.generated, n);
  EXPECT_LE(st.accepted, st.drafted);
  EXPECT_EQ(st.target_forwards, st.verify_steps + (prompt_len > 1 ? 1 : 0));
  EXPECT_EQ(st.verify_steps + st.accepted, n) << "each verification yields its accepted drafts and one token";
  int64_t d = 0, a = 0;
  for (size_t i = 0; i < st.drafted_at.size(); ++i) {
    d += st.drafted_at[i];
    a += st.accepted_at[i];
    EXPECT_LE(st.accepted_at[i], st.drafted_at[i]);
    if (i > 0) {
      EXPECT_LE(st.accepted_at[i], st.accepted_at[i - 1]);
    }
  }
  EXPECT_EQ(d, st.drafted);
  EXPECT_EQ(a, st.accepted);
}

class GreedySpeculative : public ::testing::TestWithParam<Isa> {};

TEST_P(GreedySpeculative, EveryDrafterGivesThePlainGreedyTokens) {
  const Isa isa = GetParam();
  CIBENCH_REQUIRE_SHARED(k5M);
  CIBENCH_REQUIRE_SHARED(k260);
  CIBENCH_REQUIRE_ISA(isa);
  test::IsaScope at(isa);
  const LlamaSource src5 = open_llama_source(test::shared_path(k5M));
  const LlamaSource src260 = open_llama_source(test::shared_path(k260));
  const LlamaModel small = build(src260, "f32");
  const int n = 40;
  const std::vector<int> prompt = some_tokens(7, 512, 4);
  double tol = -1;
  for (const auto& [format, bit_identical] : std::vector<std::pair<std::string, bool>>{{"w8a8", true}, {"f32", false}}) {
    const LlamaModel target = build(src5, format);
    const int V = target.config.vocab_size;
    const Plain want = plain_greedy(target, isa, prompt, n);
    // For prompt lookup, a context that repeats itself: the prompt and the target's own greedy
    // continuation (stories5M's greedy text loops), continued for n more tokens.
    std::vector<int> rep = prompt;
    const Plain longer = plain_greedy(target, isa, prompt, 160);
    rep.insert(rep.end(), longer.tokens.begin(), longer.tokens.end());
    const Plain want_rep = plain_greedy(target, isa, rep, n);
    if (!bit_identical && tol < 0) {
      std::vector<int> all = prompt;
      all.insert(all.end(), want.tokens.begin(), want.tokens.end());
      tol = test::pair_tolerance(src5, all);
    }
    DraftModelDrafter by_small(small, target, at_isa(isa));
    std::unique_ptr<DraftModelDrafter> self = make_self_drafter(src5, target, at_isa(isa), "int4_g32");
    PromptLookupDrafter lookup(1, 3);
    struct Case {
      const char* what;
      Drafter* d;
      const std::vector<int>* prompt;
      const Plain* want;
    };
    for (const Case& cs : {Case{"stories260K draft", &by_small, &prompt, &want},
                           Case{"self int4_g32", self.get(), &prompt, &want},
                           Case{"prompt lookup", &lookup, &rep, &want_rep}}) {
      for (int k : {1, 2, 4, 8}) {
        SCOPED_TRACE(std::string(cs.what) + " target " + format + " k " + std::to_string(k));
        LlamaSession ts(target, at_isa(isa));
        SpeculativeOptions so;
        so.draft_tokens = k;
        SpeculativeDecoder dec(ts, *cs.d, so);
        const std::vector<int> got = dec.generate(*cs.prompt, n);
        expect_same_greedy(*cs.want, got, V, bit_identical, tol);
        const SpeculativeStats& st = dec.stats();
        expect_consistent(st, n, static_cast<int>(cs.prompt->size()));
        EXPECT_GT(st.accepted, 0) << "no draft token was ever accepted";
        if (cs.d == &lookup) {
          EXPECT_EQ(st.draft_forwards, 0);
        } else {
          EXPECT_GT(st.draft_forwards, 0);
        }
        std::printf("[ %s target %s %s k %d ] drafted %lld accepted %lld (%.2f), mean accepted length %.2f, "
                    "target forwards %lld, draft forwards %lld\n",
                    isa_name(isa), format.c_str(), cs.what, k, static_cast<long long>(st.drafted),
                    static_cast<long long>(st.accepted), st.acceptance_rate(), st.mean_accepted_length(),
                    static_cast<long long>(st.target_forwards), static_cast<long long>(st.draft_forwards));
        // A second run of the same decoder (reset state) gives the same tokens.
        EXPECT_EQ(dec.generate(*cs.prompt, n), got);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GreedySpeculative, ::testing::ValuesIn(all_isas()), test::isa_param_name);

std::vector<IsaModel> verify_cases() {
  std::vector<IsaModel> v;
  for (const char* m : {"stories260K", "stories5M"})
    for (Isa isa : all_isas()) v.push_back({m, isa});
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllIsas, Verify, ::testing::ValuesIn(verify_cases()),
                         [](const ::testing::TestParamInfo<IsaModel>& p) {
                           return p.param.model + "_" + isa_name(p.param.isa);
                         });

TEST(Speculative, RefusesADraftOfAnotherVocabulary) {
  CIBENCH_REQUIRE_SHARED(k260);
  const LlamaModel target = build_llama(open_llama_source(test::shared_path(k260)));
  const LlamaModel other = build_llama(synthetic_llama_source("synthetic:tinystories-15m"));
  ASSERT_EQ(other.config.vocab_size, 32000);
  try {
    DraftModelDrafter d(other, target, SessionOptions{});
    FAIL() << "a draft of 32000 tokens was accepted for a target of 512";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("32000"), std::string::npos) << m;
    EXPECT_NE(m.find("512"), std::string::npos) << m;
  }
}

TEST(Speculative, PromptLookupProposesWhatFollowedTheMostRecentMatch) {
  PromptLookupDrafter d(1, 3);
  SpecRng rng(1);
  Draft out;
  // "5 6 7" occurs at 1 and 6; the most recent earlier match is at 6, followed by 9 4.
  d.propose({1, 5, 6, 7, 8, 2, 5, 6, 7, 9, 4, 5, 6, 7}, 4, 0.0f, rng, out);
  EXPECT_EQ(out.tokens, (std::vector<int>{9, 4, 5, 6}));
  EXPECT_TRUE(out.q.empty());
  d.propose({1, 5, 6, 7, 8, 2, 5, 6, 7, 9, 4, 5, 6, 7}, 2, 0.0f, rng, out);
  EXPECT_EQ(out.tokens, (std::vector<int>{9, 4}));
  // No 3-gram or 2-gram match; the 1-gram "3" matched at 2: "4 3" followed it, then the period of
  // 2 goes on past the end of the context.
  d.propose({1, 2, 3, 4, 3}, 3, 0.0f, rng, out);
  EXPECT_EQ(out.tokens, (std::vector<int>{4, 3, 4}));
  d.propose({1, 2, 3, 4, 3}, 5, 0.0f, rng, out);
  EXPECT_EQ(out.tokens, (std::vector<int>{4, 3, 4, 3, 4}));
  // A token repeated: its 3-gram matched one position back, a period of 1.
  d.propose({5, 7, 7, 7, 7}, 4, 0.0f, rng, out);
  EXPECT_EQ(out.tokens, (std::vector<int>{7, 7, 7, 7}));
  d.propose({1, 2, 3}, 3, 0.0f, rng, out);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_THROW(PromptLookupDrafter(0, 2), Error);
}

// ---- The sampling rule ------------------------------------------------------------------------
// Leviathan et al.'s rule makes the emitted token distributed exactly as the target's p, whatever
// the draft's q. Fixed p and q over 8 tokens; N seeded trials of one verification, the first
// emitted token counted; Pearson's chi-square against N p with 7 degrees of freedom must stay below
// 24.32, the 0.999 quantile (significance 0.001). The test cannot flake: the generator is our own
// xorshift with fixed seeds and the arithmetic (products and comparisons of given binary32/binary64
// numbers, no library functions) is the same on every machine, so the statistic is one fixed number
// (a correct rule would exceed the threshold for only 0.1% of seeds). Its power is checked too: the
// draft's own distribution q, which an "accept everything" bug would emit, scores far above it.

constexpr int kV = 8;
const float kP[2][kV] = {{0.30f, 0.05f, 0.15f, 0.10f, 0.02f, 0.08f, 0.20f, 0.10f},
                         {0.10f, 0.10f, 0.10f, 0.10f, 0.20f, 0.20f, 0.10f, 0.10f}};
const float kQ[kV] = {0.10f, 0.25f, 0.05f, 0.20f, 0.15f, 0.05f, 0.10f, 0.10f};
constexpr double kChi2Critical = 24.322;  // chi-square, 7 degrees of freedom, upper 0.001 quantile
constexpr int kTrials = 200000;

double chi_square(const std::vector<int64_t>& counts, const float* p, int64_t total) {
  double s = 0;
  for (int i = 0; i < kV; ++i) {
    const double e = static_cast<double>(total) * p[i];
    s += (counts[i] - e) * (counts[i] - e) / e;
  }
  return s;
}

TEST(SpeculativeSampling, EmittedTokenFollowsTheTargetDistribution) {
  // p rows for k = 3 (each position's target distribution), q rows the same kQ at every position.
  std::vector<float> p, q;
  for (int i = 0; i < 4; ++i) p.insert(p.end(), kP[i % 2], kP[i % 2] + kV);
  for (int i = 0; i < 3; ++i) q.insert(q.end(), kQ, kQ + kV);
  std::vector<float> residual;
  for (int k : {1, 3}) {
    for (bool point_mass : {false, true}) {
      SCOPED_TRACE("k " + std::to_string(k) + (point_mass ? " point-mass drafts" : " sampled drafts"));
      SpecRng rng(20261126 + k * 2 + point_mass);
      std::vector<int64_t> first(kV, 0), drafted(kV, 0);
      int64_t accepted = 0;
      for (int t = 0; t < kTrials; ++t) {
        int drafts[3];
        for (int i = 0; i < k; ++i)
          drafts[i] = point_mass ? (t + i) % kV  // any fixed rule: prompt lookup's tokens are given
                                 : sample_from(kQ, kV, rng.uniform());
        ++drafted[drafts[0]];
        int token = -1;
        const int a = verify_sampled(p.data(), point_mass ? nullptr : q.data(), drafts, k, kV, rng, &token, residual);
        ASSERT_GE(a, 0);
        ASSERT_LE(a, k);
        ASSERT_GE(token, 0);
        ASSERT_LT(token, kV);
        ++first[a > 0 ? drafts[0] : token];
        accepted += a > 0;
      }
      const double chi = chi_square(first, kP[0], kTrials);
      std::printf("k %d %s: chi-square %.2f (critical %.2f), first draft accepted %.3f\n", k,
                  point_mass ? "point mass" : "sampled", chi, kChi2Critical, static_cast<double>(accepted) / kTrials);
      EXPECT_LT(chi, kChi2Critical);
      if (!point_mass) {
        // Sampled drafts accepted with probability sum_x min(p(x), q(x)) = 1 - TV(p, q) = 0.57.
        EXPECT_NEAR(static_cast<double>(accepted) / kTrials, 0.57, 0.01);
        EXPECT_GT(chi_square(drafted, kP[0], kTrials), 100 * kChi2Critical) << "the test has no power";
      }
    }
  }
}

// The token after k accepted drafts (the bonus) follows the last p row; given a first draft
// accepted, the second emitted token follows the second row.
TEST(SpeculativeSampling, TokenAfterAnAcceptedDraftFollowsTheNextRow) {
  std::vector<float> p, residual;
  for (int i = 0; i < 2; ++i) p.insert(p.end(), kP[i], kP[i] + kV);
  SpecRng rng(77);
  std::vector<int64_t> second(kV, 0);
  int64_t n = 0;
  for (int t = 0; t < 2 * kTrials; ++t) {
    const int d = sample_from(kQ, kV, rng.uniform());
    int token = -1;
    if (verify_sampled(p.data(), kQ, &d, 1, kV, rng, &token, residual) == 1) {
      ++second[token];
      ++n;
    }
  }
  const double chi = chi_square(second, kP[1], n);
  std::printf("bonus token: chi-square %.2f over %lld (critical %.2f)\n", chi, static_cast<long long>(n), kChi2Critical);
  EXPECT_LT(chi, kChi2Critical);
}

// Sampling end to end on the real pair: deterministic for a seed, tokens in the vocabulary, the
// statistics consistent.
TEST(SpeculativeSampling, DecoderIsSeededAndConsistent) {
  CIBENCH_REQUIRE_SHARED(k5M);
  const LlamaSource src = open_llama_source(test::shared_path(k5M));
  const LlamaModel target = build(src, "w8a8");
  std::unique_ptr<DraftModelDrafter> self = make_self_drafter(src, target, SessionOptions{});
  PromptLookupDrafter lookup;
  for (Drafter* d : {static_cast<Drafter*>(self.get()), static_cast<Drafter*>(&lookup)}) {
    SCOPED_TRACE(d->name());
    LlamaSession ts(target, SessionOptions{});
    SpeculativeOptions so;
    so.draft_tokens = 4;
    so.temperature = 0.8f;
    so.seed = 5;
    const std::vector<int> prompt = some_tokens(5, 512, 7);
    SpeculativeDecoder a(ts, *d, so);
    const std::vector<int> x = a.generate(prompt, 30);
    expect_consistent(a.stats(), 30, 5);
    for (int t : x) EXPECT_TRUE(t >= 0 && t < 512);
    SpeculativeDecoder b(ts, *d, so);
    EXPECT_EQ(b.generate(prompt, 30), x);
  }
}

}  // namespace
