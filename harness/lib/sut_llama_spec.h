#pragma once
// The Llama engine speculating, as a system under test: W workers, each with its own target
// LlamaSession, drafter (a draft model's session, or prompt lookup) and SpeculativeDecoder over
// shared read-only models. Greedy verification: every query's tokens are the target's own greedy
// tokens. Each output token is reported when the verification that produced it ends (the tokens
// of one step at the same instant); the drafting and verifying time is measured on the harness's
// clock (QueryContext::now_ns), the engine reads none.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/runtime/session.h"
#include "engines/runtime/speculative.h"
#include "harness/lib/sut.h"
#include "harness/lib/sut_llama.h"

namespace cibench {

// What the workers' decoders did over the timed queries (warm-ups, index < 0, not counted).
struct SpecSutStats {
  int64_t queries = 0;
  SpeculativeStats spec;  // summed over the queries (drafted_at / accepted_at by position)
  int64_t prefill_ns = 0;  // reading the prompt (target; a draft model reads it in its first draft)
  int64_t draft_ns = 0;    // asking the drafter
  int64_t verify_ns = 0;   // the target's verification forwards and picking the tokens
  int64_t total_ns = 0;    // prefill() to done() of every generation
  void add(const SpeculativeStats& s);
  // draft_ns / total_ns, verify_ns / total_ns; NaN without a timed query.
  double draft_share() const;
  double verify_share() const;
};

class LlamaSpecSut : public SystemUnderTest {
 public:
  // `draft`: the draft model for self / draft drafters (its vocabulary the target's: Error naming
  // both sizes otherwise); nullptr for prompt lookup. draft_tokens >= 1.
  LlamaSpecSut(std::shared_ptr<const LlamaModel> target, std::shared_ptr<const LlamaModel> draft,
               const DrafterSpec& spec, int draft_tokens, const SessionOptions& opts, int workers,
               std::shared_ptr<const PromptSource> prompts);
  ~LlamaSpecSut() override;
  SutInfo info() const override;
  void start_worker(int worker) override;
  void stop_worker(int worker) override;
  void issue(int worker, const Query& q, QueryContext& ctx) override;

  const DrafterSpec& drafter() const { return spec_; }
  int draft_tokens() const { return k_; }
  SpecSutStats stats() const;
  // The tokens of the last query worker w served (for tests).
  const std::vector<int>& last_tokens(int worker) const;

 private:
  struct Worker;
  std::shared_ptr<const LlamaModel> target_, draft_;
  DrafterSpec spec_;
  int k_;
  SessionOptions opts_;
  std::shared_ptr<const PromptSource> prompts_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<size_t> kv_bytes_;
  std::vector<int> isa_;
  mutable std::mutex mu_;
  SpecSutStats stats_;
};

}  // namespace cibench
