#include "harness/lib/accuracy.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/quant/calibration.h"
#include "harness/lib/metrics.h"
#include "harness/lib/schedule.h"
#include "harness/lib/sut_llama.h"

namespace cibench {

std::vector<int> AccuracyReference::eval_tokens(const std::string& path, const Tokenizer& tok, int max_tokens) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path, "cannot open the accuracy eval set");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int> out;
  for (const auto& d : split_text_documents(ss.str())) {
    const auto ids = tok.encode(d, true, false);
    out.insert(out.end(), ids.begin(), ids.end());
    if (static_cast<int>(out.size()) >= max_tokens) break;
  }
  if (static_cast<int>(out.size()) > max_tokens) out.resize(static_cast<size_t>(max_tokens));
  if (out.size() < 2) throw FileError(path, "fewer than 2 tokens of text for accuracy");
  return out;
}

std::vector<int> AccuracyReference::synthetic_tokens(int vocab, uint64_t seed, int max_tokens) {
  std::vector<int> out(static_cast<size_t>(max_tokens));
  for (int i = 0; i < max_tokens; ++i)
    out[static_cast<size_t>(i)] = static_cast<int>(hash3(seed, 0xacc, static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab));
  return out;
}

AccuracyReference::AccuracyReference(const LlamaModel& reference, const SessionOptions& opts,
                                     std::vector<int> tokens, int window, std::string kind,
                                     std::string eval_set)
    : tokens_(std::move(tokens)), window_(window), vocab_(reference.config.vocab_size),
      kind_(std::move(kind)), eval_set_(std::move(eval_set)) {
  logp_ = run(reference, opts);
}

std::vector<float> AccuracyReference::run(const LlamaModel& m, const SessionOptions& opts) const {
  CIBENCH_CHECK(m.config.vocab_size == vocab_, "accuracy: vocabulary ", m.config.vocab_size, " != reference ", vocab_);
  SessionOptions o = opts;
  LlamaSession s(m, o);
  const int win = std::min(window_, s.context_limit());
  std::vector<float> out(tokens_.size() * static_cast<size_t>(vocab_));
  std::vector<float> logits;
  for (size_t b = 0; b < tokens_.size(); b += static_cast<size_t>(win)) {
    const int n = static_cast<int>(std::min(tokens_.size() - b, static_cast<size_t>(win)));
    logits.resize(static_cast<size_t>(n) * static_cast<size_t>(vocab_));
    s.reset();
    s.forward_all(tokens_.data() + b, n, logits.data());
    for (int i = 0; i < n; ++i) {
      const float* l = logits.data() + static_cast<size_t>(i) * vocab_;
      float* o2 = out.data() + (b + static_cast<size_t>(i)) * vocab_;
      const float mx = *std::max_element(l, l + vocab_);
      double z = 0;
      for (int v = 0; v < vocab_; ++v) z += std::exp(static_cast<double>(l[v] - mx));
      const float lz = static_cast<float>(std::log(z)) + mx;
      for (int v = 0; v < vocab_; ++v) o2[v] = l[v] - lz;
    }
  }
  return out;
}

AccuracyResult AccuracyReference::evaluate(const LlamaModel& variant, const SessionOptions& opts,
                                           const AccuracySpec& floor) const {
  const std::vector<float> lq = run(variant, opts);
  AccuracyResult r;
  r.kind = kind_;
  r.eval_set = eval_set_;
  const size_t n = tokens_.size();
  const int win = std::min(window_, static_cast<int>(n));
  std::vector<double> kls;
  double kl_sum = 0, nll = 0, nll_ref = 0;
  int64_t agree = 0, scored_next = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* p = logp_.data() + i * static_cast<size_t>(vocab_);
    const float* q = lq.data() + i * static_cast<size_t>(vocab_);
    double kl = 0;
    int ap = 0, aq = 0;
    for (int v = 0; v < vocab_; ++v) {
      const double pv = std::exp(static_cast<double>(p[v]));
      kl += pv * (static_cast<double>(p[v]) - static_cast<double>(q[v]));
      if (p[v] > p[ap]) ap = v;
      if (q[v] > q[aq]) aq = v;
    }
    kl = std::max(kl, 0.0);
    kls.push_back(kl);
    kl_sum += kl;
    agree += ap == aq;
    // Perplexity: positions whose next token is in the same window.
    if ((i + 1) % static_cast<size_t>(win) != 0 && i + 1 < n) {
      const int next = tokens_[i + 1];
      nll -= q[next];
      nll_ref -= p[next];
      ++scored_next;
    }
  }
  r.tokens = static_cast<int64_t>(n);
  r.kl_mean = kl_sum / static_cast<double>(n);
  std::sort(kls.begin(), kls.end());
  r.kl_p99 = kls[static_cast<size_t>(nearest_rank_index(static_cast<int64_t>(n), 99) - 1)];
  r.top1_agreement = static_cast<double>(agree) / static_cast<double>(n);
  if (scored_next > 0) {
    r.ppl = std::exp(nll / static_cast<double>(scored_next));
    r.ppl_ref = std::exp(nll_ref / static_cast<double>(scored_next));
    r.ppl_ratio = *r.ppl / *r.ppl_ref;
  }
  std::vector<std::string> fails, checks;
  auto check = [&](const char* what, bool ok, double v, double lim, const char* op) {
    checks.push_back(str(what, " ", v, " ", op, " ", lim));
    if (!ok) fails.push_back(str(what, " ", v, " not ", op, " ", lim));
  };
  if (floor.min_top1_agreement) check("top1_agreement", *r.top1_agreement >= *floor.min_top1_agreement, *r.top1_agreement, *floor.min_top1_agreement, ">=");
  if (floor.max_kl_mean) check("kl_mean", *r.kl_mean <= *floor.max_kl_mean, *r.kl_mean, *floor.max_kl_mean, "<=");
  if (floor.max_kl_p99) check("kl_p99", *r.kl_p99 <= *floor.max_kl_p99, *r.kl_p99, *floor.max_kl_p99, "<=");
  if (floor.max_ppl_ratio && r.ppl_ratio) check("ppl_ratio", *r.ppl_ratio <= *floor.max_ppl_ratio, *r.ppl_ratio, *floor.max_ppl_ratio, "<=");
  if (checks.empty()) {
    r.verdict = "no floor";
    r.reasons = "no quality floor set in [accuracy]";
  } else if (fails.empty()) {
    r.verdict = "pass";
    for (const auto& c : checks) r.reasons += (r.reasons.empty() ? "" : "; ") + c;
  } else {
    r.verdict = "fail";
    for (const auto& c : fails) r.reasons += (r.reasons.empty() ? "" : "; ") + c;
  }
  return r;
}

void judge_task_floors(AccuracyResult& r, const AccuracySpec& floor) {
  if (!r.task) return;
  std::vector<std::string> checks, fails;
  const TaskOutcome& t = *r.task;
  if (floor.min_task_accuracy) {
    const bool ok = t.accuracy >= *floor.min_task_accuracy;
    checks.push_back(str("task ", t.metric, " ", t.accuracy, " >= ", *floor.min_task_accuracy));
    if (!ok) fails.push_back(str("task ", t.metric, " ", t.accuracy, " not >= ", *floor.min_task_accuracy));
  }
  if (floor.max_accuracy_drop) {
    const double drop = t.delta ? -*t.delta : 0.0;  // the reference drops nothing against itself
    checks.push_back(str("task ", t.metric, " drop ", drop, " <= ", *floor.max_accuracy_drop));
    if (drop > *floor.max_accuracy_drop)
      fails.push_back(str("task ", t.metric, " drop ", drop, " not <= ", *floor.max_accuracy_drop));
  }
  if (checks.empty()) return;
  const auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : "; ") + x;
    return out;
  };
  if (r.verdict == "no floor") {
    r.verdict = fails.empty() ? "pass" : "fail";
    r.reasons = join(fails.empty() ? checks : fails);
  } else if (r.verdict == "pass") {
    if (fails.empty()) {
      r.reasons += "; " + join(checks);
    } else {
      r.verdict = "fail";
      r.reasons = join(fails);
    }
  } else if (!fails.empty()) {
    r.reasons += "; " + join(fails);
  }
}

}  // namespace cibench
