#pragma once
// The Llama engine as a system under test: W workers, each with its own LlamaSession (KV cache,
// scratch, T threads) over one shared read-only model. A query is a prompt (token ids of its
// sample, cut to the query's prompt length) and a generation length; decoding is greedy. The
// SUT reports each output token through the harness's callback and never reads a clock.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/quant/quantized_file.h"
#include "engines/models/tokenizer.h"
#include "engines/quant/calibration.h"
#include "engines/quant/recipe.h"
#include "engines/runtime/session.h"
#include "harness/lib/sut.h"

namespace cibench {

// LlamaModel::conversion for reports and the store: per class and "overall", each {stored_types,
// format, relative_rms, tensors, copied}; null when the source stores no quantised weights.
nlohmann::json weight_conversion_json(const LlamaModel& m);
// The same into a SutInfo's weight_conversion fields (NULL + reason when there is nothing).
void set_weight_conversion(const LlamaModel& m, SutInfo& info);

// What a variant's weights were made with, for the store (empty/"" when no recipe was applied).
struct RecipeRecord {
  std::string recipe;           // "gptq"
  std::string params_json;      // {"damp":0.01,...}: every parameter, defaults included
  std::string calibration_json; // {"slice":..,"docs":..,"text_hash":..,"samples":..,...}
  std::string quantized_file;   // the .cbq the weights were loaded from
};

// Opens a model source once and builds (format, recipe, sparsity) variants on demand, keeping the
// most recent builds so a sweep over threads re-uses them.
//   spec = a model (file, folder, synthetic:NAME): builds pack its weights, or the output of a
//          recipe applied to them (calibrated on the set given to set_calibration).
//   spec = a quantised model file (.cbq) with source_model = the FP32 model it was made from: the
//          file's content-hash record must match that model (FileError naming the file and both
//          hashes otherwise). The file's format builds from the file; other formats (the accuracy
//          reference) build from the FP32 model.
class LlamaModels {
 public:
  explicit LlamaModels(const std::string& spec, const std::string& source_model = "");
  // The FP32 weights (for a .cbq: the source model).
  const LlamaSource& source() const { return src_; }
  const QuantizedModelFile* quantized() const { return cbq_.get(); }
  bool synthetic() const { return src_.container == "synthetic"; }
  // Calibration windows for recipes; statistics are collected at the first recipe build
  // (Hessians only when `hessians`, i.e. some recipe is gptq).
  void set_calibration(std::shared_ptr<const CalibrationSet> calib, bool hessians, int threads);
  std::shared_ptr<const LlamaModel> get(const std::string& format, double sparsity,
                                        const std::string& recipe = "");
  // Drops every cached build but (format, sparsity, recipe)'s.
  void keep_only(const std::string& format, double sparsity, const std::string& recipe = "");
  // How the weights of (format, recipe) are made, for the store.
  RecipeRecord record(const std::string& format, double sparsity, const std::string& recipe) const;

 private:
  LlamaSource src_;
  std::unique_ptr<QuantizedModelFile> cbq_;
  std::shared_ptr<const CalibrationSet> calib_;
  std::unique_ptr<CalibrationStats> stats_;
  bool hessians_ = false;
  int calib_threads_ = 1;
  std::vector<std::pair<std::string, std::shared_ptr<const LlamaModel>>> cache_;  // most recent last
};

// The token ids of each sample: documents of an eval text (tokenized, BOS first) or, for
// synthetic models, ids drawn uniformly from the vocabulary with the samples seed.
class PromptSource {
 public:
  static PromptSource synthetic(int vocab_size, uint64_t seed, int64_t n_samples);
  // Splits the text into documents at lines "<|endoftext|>" (or blank lines when absent).
  static PromptSource eval_text(const std::string& path, const Tokenizer& tok, int64_t max_docs = 4096);
  int64_t size() const { return n_; }
  // Writes `len` tokens of sample `s` into out (a document shorter than len is repeated). With
  // a shared prefix, the first min(len, tokens) are prefix s mod count, then the sample's own.
  void fill(int64_t s, int len, std::vector<int>& out) const;
  // Every prompt starts with one of `count` shared prefixes of `tokens` tokens (a system prompt):
  // synthetic, seeded token ids; from an eval set, the opening of document k for prefix k.
  // Throws Error on tokens < 0 or count < 1.
  void set_shared_prefix(int tokens, int count);
  int shared_prefix_tokens() const { return prefix_tokens_; }
  // Synthetic samples: a sample's own tokens are a random run of `period` tokens repeated (a
  // repetitive text); 0 = every token drawn. Throws Error on period < 0.
  void set_repeat(int period);

 private:
  int64_t n_ = 0;
  int vocab_ = 0;
  uint64_t seed_ = 0;
  int prefix_tokens_ = 0, prefix_count_ = 1;
  int repeat_ = 0;
  std::vector<std::vector<int>> docs_;  // empty for synthetic
};

class LlamaSut : public SystemUnderTest {
 public:
  LlamaSut(std::shared_ptr<const LlamaModel> model, const SessionOptions& opts, int workers,
           std::shared_ptr<const PromptSource> prompts);
  ~LlamaSut() override;
  SutInfo info() const override;
  void start_worker(int worker) override;
  void stop_worker(int worker) override;
  void issue(int worker, const Query& q, QueryContext& ctx) override;

 private:
  std::shared_ptr<const LlamaModel> model_;
  SessionOptions opts_;
  std::shared_ptr<const PromptSource> prompts_;
  std::vector<std::unique_ptr<LlamaSession>> sessions_;
  std::vector<std::vector<int>> scratch_;
  std::vector<size_t> kv_bytes_;  // per worker, remembered after the session is gone
  std::vector<int> isa_;          // per worker: the level its session runs (-1: not started)
};

}  // namespace cibench
