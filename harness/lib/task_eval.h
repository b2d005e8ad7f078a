#pragma once
// Task accuracy of a decoder on the user's own items (docs/tasks.md), as lm-evaluation-harness
// defines it:
//   multiple choice  {"context": ..., "choices": [...], "answer": i} (and HellaSwag's own JSONL:
//                    [acc_per_token, llama.cpp's hellaswag normalisation, is a third metric]
//                    ctx_a, ctx_b, activity_label, endings, label, preprocessed as lm-eval does):
//                    each choice scored by the summed log-likelihood of its tokens given the
//                    context; acc = the highest one is the answer, acc_norm = the highest per
//                    byte of the choice text is. A choice is the continuation " " + choice; its
//                    tokens are those of context + continuation after the context's (lm-eval's
//                    _encode_pair, so a word is tokenised as it would be in running text).
//   generation       {"prompt": ..., "target": ..., "stop": [...]}: greedy tokens until EOS, a
//                    stop string (looked for after the output's leading white space, so " " ends
//                    the first word) or max_new_tokens; exact match (after normalisation: trimmed,
//                    lower-case, runs of white space as one space) and contains (the normalised
//                    target inside the normalised output).
// All choices of an item share one prefill of the context: the continuations are scored with
// LlamaSession::verify and rewound (score_naive is the one-sequence-per-choice loop, for the
// side-by-side speed figure and as the test's reference).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "harness/lib/classifier_stats.h"

namespace cibench {

class TaskError : public Error {
 public:
  using Error::Error;
};

enum class TaskKind { multiple_choice, generation };
const char* task_kind_name(TaskKind k);

struct TaskItem {
  int line = 0;  // 1-based line of the file
  // multiple choice
  std::string context;
  std::vector<std::string> choices;
  int answer = -1;
  // generation
  std::string prompt, target;
  std::vector<std::string> stop;
};

struct TaskSet {
  std::string path;
  TaskKind kind = TaskKind::multiple_choice;
  std::string format;  // "cibench-mc", "hellaswag", "cibench-gen"
  std::vector<TaskItem> items;
};

// Reads a JSONL task file (one item per non-empty line; every line of one kind). Throws TaskError
// naming file:line and the field for: a line that is not a JSON object, a missing or mistyped
// field, an answer outside the choices, fewer than two choices, an empty choice or context, an
// empty target, lines of two kinds, an empty file.
TaskSet read_task_file(const std::string& path);
TaskSet parse_task_text(const std::string& text, const std::string& path);

// lm-eval's HellaSwag preprocessing: trimmed, " [title]" -> ". ", other [bracketed] tags removed,
// double spaces collapsed.
std::string hellaswag_preprocess(const std::string& text);
// Generation's normalisation: trimmed, lower-case (ASCII), white-space runs as one space.
std::string normalize_answer(const std::string& text);

// The tokens scored for one multiple-choice item: the context's (BOS first) and each choice's
// continuation tokens.
struct EncodedItem {
  std::vector<int> context;
  std::vector<std::vector<int>> continuations;
  // Leading continuation tokens all choices share (llama.cpp's common prefix of the whole
  // sequences, less the context): acc_per_token leaves them out.
  size_t shared = 0;
};
EncodedItem encode_item(const Tokenizer& tok, const TaskItem& item);

struct ChoiceScores {
  std::vector<double> loglik;  // per choice: summed log-probability of its tokens
  int chosen = -1;             // argmax loglik (acc)
  int chosen_norm = -1;        // argmax loglik / bytes of the choice (acc_norm)
  // argmax of the mean log-probability per token after the tokens all choices share
  // (acc_per_token: llama.cpp's llama-perplexity --hellaswag score)
  int chosen_per_token = -1;
};

struct GenerationResult {
  std::string output;  // the greedy continuation, cut at the first stop string
  bool exact = false, contains = false;
};

struct TaskScores {
  TaskKind kind = TaskKind::multiple_choice;
  std::vector<ChoiceScores> mc;          // per item
  std::vector<GenerationResult> gen;     // per item
  int64_t tokens = 0;                    // positions run through the model
  double seconds = 0;                    // wall time of the scoring
  // Per item of `set` (the set scored): 1 when correct under `metric` (acc, acc_norm for multiple
  // choice; exact_match, contains for generation); TaskError for another metric.
  std::vector<int> correct(const std::string& metric, const TaskSet& set) const;
  double items_per_s() const;
};

using TaskProgress = std::function<void(size_t done, size_t total)>;

// Scores every item of `set` with one session of `model`. Throws TaskError naming file:line when
// an item (context and longest choice, or prompt and max_new_tokens) does not fit the context.
TaskScores score_task(const LlamaModel& model, const SessionOptions& opts, const Tokenizer& tok, const TaskSet& set,
                      int max_new_tokens = 32, const TaskProgress& progress = {});
// The naive loop: every choice as its own sequence (reset, context + continuation, all logits).
TaskScores score_naive(const LlamaModel& model, const SessionOptions& opts, const Tokenizer& tok, const TaskSet& set);

// The metrics a task kind has, the first its default (multiple choice also has acc_per_token:
// the mean log-probability per token after the tokens all choices share, as llama.cpp's
// llama-perplexity --hellaswag scores).
std::vector<std::string> task_metrics(TaskKind k);
// "acc_norm, acc, acc_per_token"
std::string join_metrics(const std::vector<std::string>& metrics);

// McNemar's exact test on paired outcomes: b = items the variant got right and the reference
// wrong, c = the reverse; the two-sided p-value 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2),
// capped at 1 (1 when b + c = 0).
double mcnemar_exact_p(int64_t b, int64_t c);

// A variant's task accuracy against the reference's on the same items: accuracy with its
// bootstrap interval, the delta with its paired interval (classifier_stats), McNemar's p.
struct TaskStats {
  ClassifierStats stats;
  int64_t b = 0, c = 0;  // discordant pairs (variant right / reference right)
  double mcnemar_p = 1;
};
TaskStats task_stats(const std::vector<int>& correct, const std::vector<int>& reference_correct,
                     const BootstrapOptions& boot = {});

}  // namespace cibench
