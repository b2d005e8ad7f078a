#pragma once
// Speculative decoding: a cheap drafter proposes k tokens, the target model checks them all in one
// forward over k + 1 positions (LlamaSession::verify), and both caches roll back past the first
// rejected token. Greedy verification gives exactly the target's greedy tokens; sampling
// verification (Leviathan et al., "Fast Inference from Transformers via Speculative Decoding",
// 2023, Algorithm 1) gives exactly the target's sampling distribution. Nothing here reads a clock.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/runtime/session.h"

namespace cibench {

// Seeded uniform numbers for drafting and verification (xorshift64*, as Sampler).
class SpecRng {
 public:
  explicit SpecRng(uint64_t seed) : state_(seed ? seed : 0x853c49e6748fea9bull) {}
  double uniform();  // [0, 1), 53 bits
 private:
  uint64_t state_;
};

// softmax(logits / temperature) into probs (vocab floats); temperature > 0.
void softmax_probs(const float* logits, int vocab, float temperature, float* probs);
// Index drawn from a distribution (vocab probabilities summing to about 1) with one uniform.
int sample_from(const float* probs, int vocab, double u);

// What a drafter returns: up to k tokens and, when the decoder samples, the distribution each was
// drawn from (q, k x vocab floats). An empty q means point masses on the tokens (no model).
struct Draft {
  std::vector<int> tokens;
  std::vector<float> q;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;
  // Proposes up to k tokens to follow `context` (every token so far: prompt and generated). With
  // temperature 0 the tokens are the drafter's best guesses; otherwise drawn with rng and q filled
  // (model drafters) or left empty (point masses).
  virtual void propose(const std::vector<int>& context, int k, float temperature, SpecRng& rng,
                       Draft& out) = 0;
  // How many tokens of the last proposal the target accepted: a drafter with state rolls it back.
  virtual void accepted(int n) { (void)n; }
  // Forgets every context (a new sequence follows).
  virtual void reset() {}
  // Forward passes of the draft model so far (0 for drafters without a model).
  virtual int64_t forwards() const { return 0; }
};

// A smaller model of the same vocabulary drafts, in its own LlamaSession. Its session follows the
// context: a proposal first feeds the context tokens it has not seen (one forward), then steps
// k - 1 times; accepted() rewinds it to the last token the target kept.
class DraftModelDrafter : public Drafter {
 public:
  // Throws Error naming both sizes if the draft's vocabulary is not the target's.
  DraftModelDrafter(const LlamaModel& draft, const LlamaModel& target, const SessionOptions& opts);
  // Owns its draft model (self-speculation builds one).
  DraftModelDrafter(std::shared_ptr<const LlamaModel> draft, const LlamaModel& target,
                    const SessionOptions& opts);
  std::string name() const override;
  void propose(const std::vector<int>& context, int k, float temperature, SpecRng& rng,
               Draft& out) override;
  void accepted(int n) override;
  void reset() override;
  int64_t forwards() const override { return forwards_; }
  const LlamaSession& session() const { return session_; }

 private:
  std::shared_ptr<const LlamaModel> owned_;
  const LlamaModel& draft_;
  LlamaSession session_;
  std::vector<int> fed_;  // the tokens session_ holds, in order
  size_t proposed_from_ = 0;  // context length of the last proposal
  int64_t forwards_ = 0;
  std::vector<float> probs_;
};

// Self-speculation: the target's own weights, built in a compact format (int4_g32 by default),
// draft for it. Mechanically a draft model.
std::unique_ptr<DraftModelDrafter> make_self_drafter(const LlamaSource& src, const LlamaModel& target,
                                                     const SessionOptions& opts,
                                                     const std::string& format = "int4_g32");

// Prompt lookup: the last n tokens of the context (n from max_ngram down to min_ngram) are looked
// for earlier in the context; the tokens that followed the most recent earlier match are proposed,
// and where they reach the end of the context the repetition goes on with the same period (k
// tokens whenever there is a match). No model; point-mass drafts.
class PromptLookupDrafter : public Drafter {
 public:
  PromptLookupDrafter(int min_ngram = 1, int max_ngram = 3);
  std::string name() const override;
  void propose(const std::vector<int>& context, int k, float temperature, SpecRng& rng,
               Draft& out) override;

 private:
  int min_ngram_, max_ngram_;
};

// A drafter named in text, as scenarios and `cibench bench --speculative` write it:
//   off                 no speculation
//   self[:FORMAT]       the target's weights built in FORMAT (default int4_g32)
//   draft:MODEL         another model of the target's vocabulary (a path or synthetic:NAME)
//   lookup[:MIN-MAX]    n-gram prompt lookup, MIN..MAX tokens (default 1-3), 1 <= MIN <= MAX <= 16
struct DrafterSpec {
  enum class Kind { off, self, draft, lookup };
  Kind kind = Kind::off;
  std::string format;  // self
  std::string model;   // draft
  int min_ngram = 1, max_ngram = 3;  // lookup
  std::string text() const;  // canonical: "off", "self:int4_g32", "draft:MODEL", "lookup:1-3"
};
// Throws Error naming the text and what is accepted.
DrafterSpec parse_drafter_spec(const std::string& text);

// Sampling verification of one step (Leviathan et al., Algorithm 1): p holds k + 1 rows of target
// probabilities (after the context, after each draft token), q k rows of draft probabilities
// (nullptr: point masses on the drafts). Draft i is accepted with probability min(1, p(x)/q(x));
// at the first rejection a token is drawn from norm(max(0, p - q)) and the step ends; if all k are
// accepted the bonus token is drawn from p's last row. Returns the accepted count; *token is the
// token appended after them. `residual` is scratch (vocab floats).
int verify_sampled(const float* p, const float* q, const int* drafts, int k, int vocab, SpecRng& rng,
                   int* token, std::vector<float>& residual);

struct SpeculativeOptions {
  int draft_tokens = 4;     // k: tokens proposed per verification
  float temperature = 0.0f;  // 0 = greedy verification
  uint64_t seed = 0;
};

struct SpeculativeStats {
  int64_t drafted = 0;          // draft tokens proposed
  int64_t accepted = 0;         // of them accepted
  int64_t verify_steps = 0;     // target verifications (each one forward over k + 1 positions)
  int64_t draft_steps = 0;      // verifications that had at least one draft token
  int64_t target_forwards = 0;  // target forward passes (prompt prefill + verifications)
  int64_t draft_forwards = 0;   // the drafter's forward passes (0 for prompt lookup)
  int64_t generated = 0;
  std::vector<int64_t> drafted_at, accepted_at;  // by draft position 0 .. k-1
  // accepted / drafted; NaN when nothing was drafted.
  double acceptance_rate() const;
  // 1 + accepted / draft_steps (vLLM's mean acceptance length); NaN without draft steps.
  double mean_accepted_length() const;
};

// Told what the decoder does, in order, for callers that time it or stream its tokens (the engine
// reads no clock). A generation calls prefill() once (before reading the prompt), then per
// verification step draft() (before asking the drafter), verify() (before the target's forward)
// and tokens(t, n) with the tokens the step appended (>= 1: the accepted drafts and the target's
// token), and finally done().
class SpeculativeObserver {
 public:
  virtual ~SpeculativeObserver() = default;
  virtual void prefill() {}
  virtual void draft() {}
  virtual void verify() {}
  virtual void tokens(const int* t, int n) { (void)t, (void)n; }
  virtual void done() {}
};

class SpeculativeDecoder {
 public:
  // Throws Error if the drafter's vocabulary differs (model drafters check at construction) or k < 1.
  SpeculativeDecoder(LlamaSession& target, Drafter& drafter, const SpeculativeOptions& opts);
  // Resets target and drafter, reads the prompt (>= 1 token) and generates n tokens.
  std::vector<int> generate(const std::vector<int>& prompt, int n, SpeculativeObserver* observer = nullptr);
  const SpeculativeStats& stats() const { return stats_; }

 private:
  LlamaSession& target_;
  Drafter& drafter_;
  SpeculativeOptions opts_;
  SpecRng rng_;
  SpeculativeStats stats_;
  Draft draft_;
  std::vector<float> p_, residual_;
};

}  // namespace cibench
