#include "engines/quant/recipe_eval.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"
#include "engines/runtime/session.h"

namespace cibench {

LmReference::LmReference(const LlamaModel& fp32, std::vector<int> tokens, int window, int threads)
    : tokens_(std::move(tokens)), window_(window), threads_(threads),
      vocab_(fp32.config.vocab_size) {
  CIBENCH_CHECK(tokens_.size() >= 2, "evaluation needs at least 2 tokens, got ", tokens_.size());
  CIBENCH_CHECK(window_ >= 2, "evaluation window must be >= 2 tokens, got ", window_);
  ref_ = log_probs(fp32);
}

std::vector<float> LmReference::log_probs(const LlamaModel& m) const {
  CIBENCH_CHECK(m.config.vocab_size == vocab_, "evaluation: vocabulary ", m.config.vocab_size,
                " differs from the reference's ", vocab_);
  SessionOptions so;
  so.threads = threads_;
  LlamaSession s(m, so);
  const size_t win = static_cast<size_t>(std::min(window_, s.context_limit()));
  std::vector<float> out(tokens_.size() * static_cast<size_t>(vocab_));
  for (size_t b = 0; b < tokens_.size(); b += win) {
    const int n = static_cast<int>(std::min(win, tokens_.size() - b));
    float* lp = out.data() + b * vocab_;
    s.reset();
    s.forward_all(tokens_.data() + b, n, lp);
    for (int i = 0; i < n; ++i) {
      float* l = lp + static_cast<size_t>(i) * vocab_;
      const float mx = *std::max_element(l, l + vocab_);
      double z = 0;
      for (int v = 0; v < vocab_; ++v) z += std::exp(static_cast<double>(l[v]) - mx);
      const float lz = static_cast<float>(std::log(z)) + mx;
      for (int v = 0; v < vocab_; ++v) l[v] -= lz;
    }
  }
  return out;
}

LmQuality LmReference::compare(const LlamaModel& variant) const {
  const std::vector<float> q = log_probs(variant);
  LmQuality r;
  const size_t n = tokens_.size();
  const size_t win = static_cast<size_t>(window_);
  std::vector<double> kls(n);
  double kl_sum = 0, nll = 0, nll_ref = 0;
  int64_t agree = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* lp = ref_.data() + i * vocab_;
    const float* lq = q.data() + i * vocab_;
    double kl = 0;
    int ap = 0, aq = 0;
    for (int v = 0; v < vocab_; ++v) {
      kl += std::exp(static_cast<double>(lp[v])) * (static_cast<double>(lp[v]) - lq[v]);
      if (lp[v] > lp[ap]) ap = v;
      if (lq[v] > lq[aq]) aq = v;
    }
    kls[i] = std::max(kl, 0.0);
    kl_sum += kls[i];
    agree += ap == aq;
    if ((i + 1) % win != 0 && i + 1 < n) {  // the next token is in the same window
      nll -= lq[tokens_[i + 1]];
      nll_ref -= lp[tokens_[i + 1]];
      ++r.scored;
    }
  }
  r.positions = static_cast<int64_t>(n);
  r.kl_mean = kl_sum / static_cast<double>(n);
  std::sort(kls.begin(), kls.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));  // nearest rank
  r.kl_p99 = kls[std::max<size_t>(rank, 1) - 1];
  r.top1 = static_cast<double>(agree) / static_cast<double>(n);
  if (r.scored > 0) {
    r.ppl = std::exp(nll / static_cast<double>(r.scored));
    r.ppl_ref = std::exp(nll_ref / static_cast<double>(r.scored));
    r.ppl_ratio = r.ppl / r.ppl_ref;
  }
  return r;
}

}  // namespace cibench
