#pragma once
// The Llama engine as a system under test: W workers, each with its own LlamaSession (KV cache,
// scratch, T threads) over one shared read-only model. A query is a prompt (token ids of its
// sample, cut to the query's prompt length) and a generation length; decoding is greedy. The
// SUT reports each output token through the harness's callback and never reads a clock.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "harness/lib/sut.h"

namespace cibench {

// Opens a model source once and builds (format, sparsity) variants on demand, keeping the most
// recent builds so a sweep over threads re-uses them.
class LlamaModels {
 public:
  explicit LlamaModels(const std::string& spec);
  const LlamaSource& source() const { return src_; }
  bool synthetic() const { return src_.container == "synthetic"; }
  std::shared_ptr<const LlamaModel> get(const std::string& format, double sparsity);

 private:
  LlamaSource src_;
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
  // Writes `len` tokens of sample `s` into out (a document shorter than len is repeated).
  void fill(int64_t s, int len, std::vector<int>& out) const;

 private:
  int64_t n_ = 0;
  int vocab_ = 0;
  uint64_t seed_ = 0;
  std::vector<std::vector<int>> docs_;  // empty for synthetic
};

// Splits text into documents (used by the prompts and by accuracy).
std::vector<std::string> split_documents(const std::string& text);

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
