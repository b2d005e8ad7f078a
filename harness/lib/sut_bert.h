#pragma once
// BERT/DistilBERT sequence classifiers as a system under test, and what a classifier scenario
// prepares once per run (the model source, the tokenizer, the labelled eval sentences, the
// traffic and the accuracy reference).
//
// BertSut: W workers, each with its own BertSession (scratch, T threads) over one shared
// read-only BertModel. A query names a sentence (sample); the worker tokenizes it (WordPiece,
// in the timed path), looks it up in the result cache (when on: one LRU shared by the workers,
// keyed by the token ids), and runs the encoder:
//   shape "dynamic": one sequence at its own length; a batch padded to its longest sentence
//   shape "padded" : every sequence (and batch) padded to pad_to with an attention mask
// Batches are formed by the harness (LoadSettings::max_batch/max_wait_ns); cache hits complete
// at once, the misses of a batch run as one padded batch. Warm-up queries (index < 0) bypass
// the cache so they neither fill it nor count. The SUT never reads a clock.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engines/models/bert.h"
#include "engines/models/classifier_tokenizer.h"
#include "engines/models/wordpiece.h"
#include "harness/lib/classifier_stats.h"
#include "engines/models/sentences.h"
#include "harness/lib/result_cache.h"
#include "harness/lib/scenario.h"
#include "harness/lib/sut.h"

namespace cibench {

// The samples a classifier serves: sentences (tokenized per request) or, for synthetic models
// without a vocabulary, seeded random id sequences. Immutable once built; shared by workers.
struct ClassifierInputs {
  std::vector<std::string> texts;           // empty for id inputs
  std::vector<int> labels;                  // per sample, -1 when unlabelled (empty: none)
  std::vector<std::vector<int>> ids;        // [CLS] ... [SEP] per sample (also for texts)
  std::shared_ptr<const ClassifierTokenizer> tokenizer;  // null for id inputs
  int max_length = 128;                     // truncation length of the tokenizer
  int pad_id = 0;

  int64_t size() const { return static_cast<int64_t>(ids.size()); }
  int longest() const;
  // The ids of sample s as the service computes them (tokenizes texts).
  void encode(int64_t s, std::vector<int>& out) const;
};

struct BertSutOptions {
  int workers = 1;
  int threads = 1;
  bool pin_threads = false;
  int isa = -1;
  Shape shape = Shape::dynamic;
  int pad_to = 128;
  int max_batch = 1;
  bool cache = false;
  int64_t cache_entries = 0, cache_bytes = 0;
  // Called with each completed query's predicted label (from the worker thread; tests).
  std::function<void(const Query&, int label)> on_result;
};

class BertSut : public SystemUnderTest {
 public:
  BertSut(std::shared_ptr<const BertModel> model, std::shared_ptr<const ClassifierInputs> inputs,
          const BertSutOptions& o);
  ~BertSut() override;
  SutInfo info() const override;
  void start_worker(int worker) override;
  void stop_worker(int worker) override;
  void issue(int worker, const Query& q, QueryContext& ctx) override;
  void issue_batch(int worker, const Query* qs, QueryContext* const* ctxs, int n) override;
  // Cache statistics so far (nullopt when the cache is off).
  std::optional<CacheStats> cache_stats() const;
  const BertSutOptions& options() const { return o_; }

 private:
  struct Worker;
  std::shared_ptr<const BertModel> model_;
  std::shared_ptr<const ClassifierInputs> in_;
  BertSutOptions o_;
  std::unique_ptr<ResultCache> cache_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

// One variant's task quality against the reference build's predictions on the eval set.
struct ClassifierAccuracy {
  std::string kind;      // "f32 reference on labelled eval set" | "fidelity on random weights"
  std::string eval_set;
  int64_t examples = 0;
  std::optional<ClassifierStats> stats;  // labelled eval sets
  double agreement = 0;                  // with the reference predictions
  std::string verdict;                   // pass | fail | no floor
  std::string reasons;
};

// The classifier side of a scenario, opened once per run (before any row is written: the
// constructor throws ScenarioError naming the key).
class ClassifierBench {
 public:
  explicit ClassifierBench(const Scenario& sc);
  const BertSource& source() const { return src_; }
  std::shared_ptr<const ClassifierInputs> inputs() const { return inputs_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The model packed in `format` (builds are kept: the reference and the most recent other).
  std::shared_ptr<const BertModel> model(const std::string& format, double sparsity);
  // Drops every kept build but (format, sparsity)'s, the reference's included (its predictions,
  // once made, are kept; a later accuracy() of a new format rebuilds it when they are not).
  void keep_only(const std::string& format, double sparsity);
  BertSutOptions sut_options(const Variant& v) const;
  // Predictions of the eval set (dynamic shapes, one sentence at a time).
  std::vector<int> predict_all(const BertModel& m, int threads) const;
  // Accuracy of (format, sparsity), computed once per run and reused by its other variants.
  const ClassifierAccuracy& accuracy(const std::string& format, double sparsity, int threads);

 private:
  const Scenario& sc_;
  BertSource src_;
  std::shared_ptr<const ClassifierInputs> inputs_;
  std::map<std::string, std::shared_ptr<const BertModel>> models_;
  std::optional<std::vector<int>> ref_pred_;
  std::map<std::string, ClassifierAccuracy> acc_;
  std::vector<std::string> warnings_;
};

// The floor check of a classifier's accuracy (exposed for tests).
void classifier_verdict(ClassifierAccuracy& a, const AccuracySpec& floor);

}  // namespace cibench
