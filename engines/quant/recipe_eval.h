#pragma once
// How far a quantised Llama model is from its FP32 build on held-out text, teacher-forced
// through LlamaSession::forward_all: per position KL(P_fp32 || P_q) (mean and p99, nearest
// rank), top-1 agreement, and perplexity of the actual next token for both, with their ratio.
#include <cstdint>
#include <vector>

#include "engines/models/llama.h"

namespace cibench {

struct LmQuality {
  int64_t positions = 0;  // positions compared (KL, top-1)
  int64_t scored = 0;     // next-token predictions scored (perplexity)
  double kl_mean = 0, kl_p99 = 0, top1 = 0, ppl = 0, ppl_ref = 0, ppl_ratio = 0;
};

class LmReference {
 public:
  // `tokens` is cut into windows of `window` tokens, each run from position 0.
  LmReference(const LlamaModel& fp32, std::vector<int> tokens, int window, int threads = 1);
  LmQuality compare(const LlamaModel& variant) const;
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  std::vector<float> log_probs(const LlamaModel& m) const;
  std::vector<int> tokens_;
  int window_;
  int threads_;
  int vocab_;
  std::vector<float> ref_;
};

}  // namespace cibench
