#pragma once
// A model family: what the harness needs to know about one kind of model. run_suite opens the
// scenario's family once (open_model_family, before any row is written), and each variant's step
// asks it for the columns that say how the variant is built, a system under test, what only this
// family measures of that SUT after the timed run, and the variant's quality. The suite itself
// never asks which family it has.
//
// Implementations (family.cpp): Llama-family decoders (LlamaFamily), BERT/DistilBERT classifiers
// (BertFamily) and the harness's own test SUTs (TestFamily). A new kind of server (a batching
// scheduler, a speculative decoder) is one more implementation, not a branch in the suite.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/lib/accuracy.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/sut.h"
#include "harness/lib/sut_bert.h"

namespace cibench {

// One variant's quality as its family measured it, or why it was not.
struct VariantQuality {
  std::optional<AccuracyResult> lm;                // language models: KL, top-1, perplexity
  const ClassifierAccuracy* classifier = nullptr;  // classifiers: task accuracy with intervals
  std::string unavailable;                         // why neither, when neither
};

using NoteFn = std::function<void(const std::string&)>;

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  // The model as stored with the run: content hash, container, parameter count (NULL when none).
  virtual Fields model_provenance() const = 0;
  // What the user should know about the model or its inputs but may have meant (stored in
  // runs.warnings with the machine's warnings and printed at the start).
  virtual std::vector<std::string> warnings() const { return {}; }
  // How many samples (prompts, sentences) the queries pick among.
  virtual int64_t samples() const = 0;
  // Whether the traffic columns (uniform sampling, duplicate rate) describe this family's queries.
  virtual bool has_samples() const { return true; }
  // The variant as the console and the store name it.
  virtual std::string label(const Variant& v) const { return v.label(); }
  // Columns saying how this family builds and serves the variant (format, recipe, shape, cache).
  virtual void describe(const Variant& v, Fields& cfg) const = 0;
  // Before the variant is measured: drop what the family keeps for other variants (cached
  // builds), so the resident set measured for this variant holds no earlier variant's weights.
  // The accuracy reference's results (not its build) stay: they serve every variant.
  virtual void release_builds_except(const Variant& /*v*/) {}
  virtual std::unique_ptr<SystemUnderTest> make_sut(const Variant& v) = 0;
  // After the timed run: what only this family measures of its SUT, as columns and console lines.
  virtual void measured(SystemUnderTest& /*sut*/, Fields& /*f*/, std::vector<std::string>& /*lines*/) {}
  // A sample's prompt tokens when the SUT does not report them (classifier sentences).
  virtual std::optional<int32_t> prompt_tokens(int64_t /*sample*/) const { return std::nullopt; }
  // The variant's quality; a step after the first repeats a build already scored at step 0.
  virtual VariantQuality quality(const Variant& v, int step, const NoteFn& note) = 0;
};

// Opens the scenario's model, tokenizer, samples and calibration; throws ScenarioError naming
// file:line:column and the key when something cannot be used.
std::unique_ptr<ModelFamily> open_model_family(const Scenario& sc);

}  // namespace cibench
