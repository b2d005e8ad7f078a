#include "harness/lib/classifier_stats.h"

#include <algorithm>

#include "engines/core/error.h"
#include "harness/lib/metrics.h"
#include "harness/lib/schedule.h"

namespace cibench {
namespace {

void check_labels(const std::vector<int>& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i)
    CIBENCH_CHECK(v[i] >= 0, "classifier stats: ", what, "[", i, "] = ", v[i], " is not a class index (>= 0)");
}

Interval percentile_interval(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const int64_t n = static_cast<int64_t>(v.size());
  return {v[static_cast<size_t>(nearest_rank_index(n, 2.5) - 1)], v[static_cast<size_t>(nearest_rank_index(n, 97.5) - 1)]};
}

}  // namespace

double macro_f1(const std::vector<int>& pred, const std::vector<int>& gold) {
  CIBENCH_CHECK(pred.size() == gold.size() && !pred.empty(), "macro F1: ", pred.size(), " predictions for ",
                gold.size(), " labels");
  check_labels(pred, "pred");
  check_labels(gold, "gold");
  const int k = 1 + std::max(*std::max_element(pred.begin(), pred.end()), *std::max_element(gold.begin(), gold.end()));
  std::vector<int64_t> tp(static_cast<size_t>(k)), fp(static_cast<size_t>(k)), fn(static_cast<size_t>(k));
  for (size_t i = 0; i < pred.size(); ++i) {
    if (pred[i] == gold[i]) {
      ++tp[static_cast<size_t>(pred[i])];
    } else {
      ++fp[static_cast<size_t>(pred[i])];
      ++fn[static_cast<size_t>(gold[i])];
    }
  }
  double sum = 0;
  int present = 0;
  for (size_t c = 0; c < static_cast<size_t>(k); ++c) {
    const int64_t d = 2 * tp[c] + fp[c] + fn[c];
    if (d == 0) continue;  // class absent from both
    sum += static_cast<double>(2 * tp[c]) / static_cast<double>(d);
    ++present;
  }
  return sum / present;
}

ClassifierStats classifier_stats(const std::vector<int>& pred, const std::vector<int>& gold,
                                 const std::vector<int>& ref, const BootstrapOptions& boot) {
  CIBENCH_CHECK(!pred.empty(), "classifier stats: no predictions");
  CIBENCH_CHECK(pred.size() == gold.size(), "classifier stats: ", pred.size(), " predictions for ", gold.size(),
                " gold labels");
  CIBENCH_CHECK(ref.empty() || ref.size() == pred.size(), "classifier stats: ", ref.size(),
                " reference predictions for ", pred.size(), " predictions");
  CIBENCH_CHECK(boot.resamples >= 10, "classifier stats: bootstrap needs at least 10 resamples (got ", boot.resamples, ")");
  check_labels(ref, "ref");
  ClassifierStats s;
  const size_t n = pred.size();
  s.n = static_cast<int64_t>(n);
  s.resamples = boot.resamples;
  s.seed = boot.seed;
  s.macro_f1 = macro_f1(pred, gold);
  {
    std::vector<char> seen;
    for (size_t i = 0; i < n; ++i)
      for (int c : {pred[i], gold[i]}) {
        if (static_cast<size_t>(c) >= seen.size()) seen.resize(static_cast<size_t>(c) + 1, 0);
        seen[static_cast<size_t>(c)] = 1;
      }
    s.classes = static_cast<int>(std::count(seen.begin(), seen.end(), 1));
  }
  // Per-sentence correctness of both builds, then counts over resampled indices.
  std::vector<uint8_t> ok(n), ok_ref(ref.empty() ? 0 : n);
  int64_t correct = 0, correct_ref = 0, agree = 0;
  for (size_t i = 0; i < n; ++i) {
    ok[i] = pred[i] == gold[i];
    correct += ok[i];
    if (!ref.empty()) {
      ok_ref[i] = ref[i] == gold[i];
      correct_ref += ok_ref[i];
      agree += pred[i] == ref[i];
    }
  }
  const double dn = static_cast<double>(n);
  s.accuracy = static_cast<double>(correct) / dn;
  if (!ref.empty()) {
    s.agreement = static_cast<double>(agree) / dn;
    s.reference_accuracy = static_cast<double>(correct_ref) / dn;
    s.accuracy_delta = s.accuracy - *s.reference_accuracy;
  }
  Rng rng(splitmix64(boot.seed));
  std::vector<double> acc(static_cast<size_t>(boot.resamples)), delta(ref.empty() ? 0 : acc.size());
  for (size_t k = 0; k < acc.size(); ++k) {
    int64_t c = 0, d = 0;
    for (size_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(rng.next() % n);
      c += ok[i];
      if (!ref.empty()) d += static_cast<int64_t>(ok[i]) - static_cast<int64_t>(ok_ref[i]);
    }
    acc[k] = static_cast<double>(c) / dn;
    if (!ref.empty()) delta[k] = static_cast<double>(d) / dn;
  }
  s.accuracy_ci = percentile_interval(acc);
  if (!ref.empty()) s.delta_ci = percentile_interval(delta);
  return s;
}

}  // namespace cibench
