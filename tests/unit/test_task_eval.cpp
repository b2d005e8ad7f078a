// Task accuracy of decoders (harness/lib/task_eval.h): the JSONL readers and their errors
// (file:line and the field), HellaSwag's preprocessing as lm-evaluation-harness does it, the
// answer normalisation, McNemar's exact test, the shared-context scoring against the naive
// one-sequence-per-choice loop on the real stories260K, chance on random weights, and the shipped
// TinyStories tasks above chance on the trained model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engines/models/llama_config.h"
#include "engines/models/synthetic.h"
#include "harness/lib/task_eval.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_task_text(text, "t.jsonl");
  } catch (const TaskError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TaskEval, MultipleChoiceHellaSwagAndGenerationLinesRead) {
  const TaskSet mc = parse_task_text(
      "{\"context\": \"Tom has a ball.\", \"choices\": [\"He kicks it.\", \"The sky eats.\"], \"answer\": 0}\n\n"
      "{\"context\": \"Sue is sad.\", \"choices\": [\"She smiles\", \"She cries\", \"Rocks fly\"], \"answer\": 1}\n",
      "t.jsonl");
  EXPECT_EQ(mc.kind, TaskKind::multiple_choice);
  EXPECT_EQ(mc.format, "cibench-mc");
  ASSERT_EQ(mc.items.size(), 2u);
  EXPECT_EQ(mc.items[1].line, 3);
  EXPECT_EQ(mc.items[1].answer, 1);
  EXPECT_EQ(mc.items[1].choices.size(), 3u);
  // HellaSwag's own line (label as a string, as the dataset stores it), preprocessed as lm-eval.
  const TaskSet hs = parse_task_text(
      R"({"ind": 4, "activity_label": "Removing ice from car", "ctx_a": "Then, the man writes over the snow covering the window of a car, and a woman wearing winter clothes smiles.", "ctx_b": "then", "endings": [", the man adds wax to the windshield and cuts it.", ", a person board a ski lift, while two men supporting the head of the person wearing winter clothes snow as the we girls sled.", ", the man puts on a christmas coat, knitted with netting.", ", the man continues removing the snow on his car."], "label": "3"})"
      "\n",
      "hs.jsonl");
  EXPECT_EQ(hs.format, "hellaswag");
  ASSERT_EQ(hs.items.size(), 1u);
  EXPECT_EQ(hs.items[0].context,
            "Removing ice from car: Then, the man writes over the snow covering the window of a car, and a woman wearing "
            "winter clothes smiles. Then");
  EXPECT_EQ(hs.items[0].choices[3], ", the man continues removing the snow on his car.");
  EXPECT_EQ(hs.items[0].answer, 3);
  EXPECT_EQ(hellaswag_preprocess("  How to x [title] Step one [step] ends.  "), "How to x. Step one ends.");
  const TaskSet gen = parse_task_text(R"({"prompt": "Q: 2+2? A:", "target": "4", "stop": ["\n"]})", "g.jsonl");
  EXPECT_EQ(gen.kind, TaskKind::generation);
  EXPECT_EQ(gen.items[0].stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(normalize_answer("  The   Big\tDog \n"), "the big dog");
  EXPECT_EQ(task_metrics(TaskKind::multiple_choice), (std::vector<std::string>{"acc_norm", "acc", "acc_per_token"}));
  EXPECT_EQ(join_metrics(task_metrics(TaskKind::generation)), "exact_match, contains");
}

TEST(TaskEval, BadLinesNameTheFileLineAndField) {
  const std::string ok = "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 0}\n";
  EXPECT_NE(error_of(ok + "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 0\n").find("t.jsonl:2: not a JSON object"),
            std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 2}\n")
                .find("t.jsonl:1: \"answer\" is 2, outside the 2 choices (0 to 1)"),
            std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"a\", \"choices\": [\"b\", \" \"], \"answer\": 0}\n").find("t.jsonl:1: \"choices\"[1] is empty"),
            std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"a\", \"choices\": [\"b\"], \"answer\": 0}\n").find("1 choices, at least 2"),
            std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"a\", \"choices\": [\"b\", 3], \"answer\": 0}\n")
                .find("t.jsonl:1: \"choices\"[1] is number, expected a string"),
            std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"\", \"choices\": [\"b\", \"c\"], \"answer\": 0}\n").find("t.jsonl:1: the context is empty"),
            std::string::npos);
  EXPECT_NE(error_of("{\"choices\": [\"b\", \"c\"], \"answer\": 0}\n").find("t.jsonl:1: no \"context\""), std::string::npos);
  EXPECT_NE(error_of("{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": \"x\"}\n").find("\"answer\" is \"x\""),
            std::string::npos);
  EXPECT_NE(error_of(ok + "{\"prompt\": \"p\", \"target\": \"t\"}\n").find("t.jsonl:2: a cibench-gen item in a file of cibench-mc"),
            std::string::npos);
  EXPECT_NE(error_of("{\"prompt\": \"p\", \"target\": \"\"}\n").find("t.jsonl:1: \"target\" is empty"), std::string::npos);
  EXPECT_NE(error_of("{\"prompt\": \"p\", \"target\": \"t\", \"stop\": [\"\"]}\n").find("\"stop\"[0] is empty"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]\n").find("t.jsonl:1: a array, expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"question\": 1}\n").find("t.jsonl:1: neither a multiple-choice item"), std::string::npos);
  EXPECT_NE(error_of("\n  \n").find("t.jsonl: no items (an empty task file)"), std::string::npos);
  EXPECT_THROW(read_task_file("/nonexistent/t.jsonl"), TaskError);
}

TEST(TaskEval, McNemarExactAndPairedStats) {
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 0), 1);
  EXPECT_NEAR(mcnemar_exact_p(1, 5), 2.0 * 7 / 64, 1e-12);  // P(X <= 1), X ~ B(6, 1/2) = 7/64
  EXPECT_NEAR(mcnemar_exact_p(6, 0), 2.0 / 64, 1e-12);
  EXPECT_NEAR(mcnemar_exact_p(3, 3), 1.0, 1e-12);
  EXPECT_LT(mcnemar_exact_p(0, 40), 1e-11);
  // 10 items: the variant loses items 0 and 1, gains item 9.
  const std::vector<int> ref{1, 1, 1, 1, 0, 0, 1, 1, 0, 0}, var{0, 0, 1, 1, 0, 0, 1, 1, 0, 1};
  const TaskStats t = task_stats(var, ref);
  EXPECT_DOUBLE_EQ(t.stats.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(*t.stats.reference_accuracy, 0.6);
  EXPECT_NEAR(*t.stats.accuracy_delta, -0.1, 1e-12);
  EXPECT_EQ(t.b, 1);
  EXPECT_EQ(t.c, 2);
  EXPECT_NEAR(t.mcnemar_p, 1.0, 1e-12);  // 2 * P(X <= 1), X ~ B(3, 1/2) = 2 * 4/8
  EXPECT_LE(t.stats.delta_ci->lo, -0.1);
  EXPECT_GE(t.stats.delta_ci->hi, -0.1);
  EXPECT_THROW(task_stats({}, {}), TaskError);
  EXPECT_THROW(task_stats({1, 0}, {1}), TaskError);
}

struct Model {
  LlamaModel m;
  std::unique_ptr<Tokenizer> tok;
};
Model stories260k(const std::string& format = "f32") {
  LlamaBuildOptions o;
  o.format = format;
  Model m{build_llama(open_llama_source(test::shared_path("models/stories260K/stories260K.bin")), o), nullptr};
  m.tok = open_tokenizer(test::shared_path("models/stories260K/tok512.bin"), m.m.config.vocab_size);
  return m;
}

// One prefill per item and verify() for the continuations gives the naive loop's log-likelihoods
// (every choice its own sequence, every position's logits): to f32 rounding, the same choices.
TEST(TaskEval, SharedContextScoringEqualsTheNaiveLoop) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  CIBENCH_REQUIRE_SHARED("models/stories260K/tok512.bin");
  const Model m = stories260k();
  TaskSet set = read_task_file(std::string(CIBENCH_SOURCE_DIR) + "/scenarios/tasks/tinystories-cloze.jsonl");
  set.items.resize(40);
  const TaskScores fast = score_task(m.m, {}, *m.tok, set);
  const TaskScores naive = score_naive(m.m, {}, *m.tok, set);
  ASSERT_EQ(fast.mc.size(), 40u);
  double worst = 0;
  int same = 0;
  for (size_t i = 0; i < fast.mc.size(); ++i) {
    ASSERT_EQ(fast.mc[i].loglik.size(), naive.mc[i].loglik.size());
    for (size_t k = 0; k < fast.mc[i].loglik.size(); ++k) {
      const double d = std::fabs(fast.mc[i].loglik[k] - naive.mc[i].loglik[k]);
      worst = std::max(worst, d / std::max(1.0, std::fabs(naive.mc[i].loglik[k])));
    }
    same += fast.mc[i].chosen == naive.mc[i].chosen;
  }
  // Sums of ~20 log-probabilities each computed in f32 through different kernels (matmul rows vs
  // the all-positions forward): agreement to about 1e-5 relative; 1e-4 leaves room.
  EXPECT_LT(worst, 1e-4);
  EXPECT_GE(same, 39);
  // The shared prefill runs fewer positions: the context once per item, not once per choice.
  EXPECT_LT(fast.tokens, naive.tokens);
  // Scores do not depend on a task being scored alone: the first item again gives the same numbers.
  TaskSet one = set;
  one.items.resize(1);
  EXPECT_EQ(score_task(m.m, {}, *m.tok, one).mc[0].loglik, fast.mc[0].loglik);
}

// The shipped cloze discriminates: random weights sit at chance (25 % with four choices, acc),
// the trained stories260K well above it.
TEST(TaskEval, ShippedClozeIsAtChanceOnRandomWeightsAndAboveItTrained) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const std::string file = std::string(CIBENCH_SOURCE_DIR) + "/scenarios/tasks/tinystories-cloze.jsonl";
  const TaskSet set = read_task_file(file);
  ASSERT_EQ(set.items.size(), 200u);
  const Model trained = stories260k();
  const TaskStats t = task_stats(score_task(trained.m, {}, *trained.tok, set).correct("acc", set), {});
  const LlamaModel random = build_llama(synthetic_llama_source("synthetic:stories260k"));
  const TaskStats r = task_stats(score_task(random, {}, *trained.tok, set).correct("acc", set), {});
  EXPECT_LE(r.stats.accuracy_ci.lo, 0.25);
  EXPECT_GE(r.stats.accuracy_ci.hi, 0.25);
  EXPECT_GT(t.stats.accuracy_ci.lo, 0.25) << "trained: " << t.stats.accuracy;
  EXPECT_GT(t.stats.accuracy, r.stats.accuracy + 0.08);
  // The generation task: the trained model names some next words, contains >= exact match.
  const TaskSet gen = read_task_file(std::string(CIBENCH_SOURCE_DIR) + "/scenarios/tasks/tinystories-nextword.jsonl");
  const TaskScores gs = score_task(trained.m, {}, *trained.tok, gen, 8);
  const auto exact = gs.correct("exact_match", gen), contains = gs.correct("contains", gen);
  const int ne = std::count(exact.begin(), exact.end(), 1), nc = std::count(contains.begin(), contains.end(), 1);
  EXPECT_GT(ne, 20);
  EXPECT_GE(nc, ne);
  for (size_t i = 0; i < gs.gen.size(); ++i) {
    if (!exact[i]) continue;
    EXPECT_EQ(normalize_answer(gs.gen[i].output), normalize_answer(gen.items[i].target));
  }
  EXPECT_THROW(gs.correct("acc", gen), TaskError);
}

TEST(TaskEval, AnItemLongerThanTheContextIsNamed) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  const Model m = stories260k();
  std::string longctx;
  for (int i = 0; i < 400; ++i) longctx += "Tom ran far. ";
  const TaskSet set = parse_task_text("{\"context\": \"hi\", \"choices\": [\"a\", \"b\"], \"answer\": 0}\n"
                                      "{\"context\": \"" + longctx + "\", \"choices\": [\"a\", \"b\"], \"answer\": 0}\n",
                                      "long.jsonl");
  try {
    score_task(m.m, {}, *m.tok, set);
    FAIL() << "no error";
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("long.jsonl:2: the context and its longest choice are"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cibench
