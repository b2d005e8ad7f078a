#pragma once
// Accuracy deltas in the same run: a variant's next-token distributions against the reference
// build (f32 by default) of the same model, teacher-forced on the same tokens.
//   KL(P_ref || P_variant) per position: mean and p99 (nearest rank)
//   top-1 agreement: argmax equal
//   perplexity of the actual next token, for both builds, and the ratio variant / reference
// Real models score eval-set text; synthetic models score seeded random token sequences and are
// marked "fidelity on random weights" (a numerical fidelity check, not task quality).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "harness/lib/scenario.h"

namespace cibench {

// A decoder's task accuracy on the scenario's task file (accuracy.task), against the reference
// build on the same items.
struct TaskOutcome {
  std::string file, format, metric;  // format: cibench-mc | hellaswag | cibench-gen
  int64_t items = 0;
  double accuracy = 0;
  Interval accuracy_ci;
  std::optional<double> reference_accuracy, delta, mcnemar_p;
  std::optional<Interval> delta_ci;
  int resamples = 0;
  double items_per_s = 0;
};

struct AccuracyResult {
  std::string kind;      // "fp32 reference on eval text" | "fidelity on random weights"
  std::string eval_set;  // path, or "synthetic tokens (seed N)"
  int64_t tokens = 0;    // positions scored
  std::optional<double> kl_mean, kl_p99, top1_agreement, ppl, ppl_ref, ppl_ratio;
  std::string verdict;   // pass | fail | no floor
  std::string reasons;
  std::optional<TaskOutcome> task;
};

// Adds the task floors of `floor` (min_task_accuracy, max_accuracy_drop) to r's verdict: checked
// against r.task (a drop is reference - variant accuracy; the reference itself has none).
void judge_task_floors(AccuracyResult& r, const AccuracySpec& floor);

// The reference side, computed once per run: token windows and the reference log-probabilities.
class AccuracyReference {
 public:
  // `tokens`: the scored sequence, cut into windows of `window`.
  AccuracyReference(const LlamaModel& reference, const SessionOptions& opts, std::vector<int> tokens,
                    int window, std::string kind, std::string eval_set);
  AccuracyResult evaluate(const LlamaModel& variant, const SessionOptions& opts,
                          const AccuracySpec& floor) const;
  size_t bytes() const { return logp_.size() * sizeof(float); }

  // Tokens to score: the eval text (documents, BOS first) or seeded random ids.
  static std::vector<int> eval_tokens(const std::string& path, const Tokenizer& tok, int max_tokens);
  static std::vector<int> synthetic_tokens(int vocab, uint64_t seed, int max_tokens);

 private:
  // Teacher-forced log-softmax of each window's positions (n_positions x vocab).
  std::vector<float> run(const LlamaModel& m, const SessionOptions& opts) const;
  std::vector<int> tokens_;
  int window_;
  int vocab_;
  std::string kind_, eval_set_;
  std::vector<float> logp_;
};

}  // namespace cibench
