#pragma once
// Task quality of a classifier from per-sentence predictions: accuracy, macro F1, agreement with
// a reference build's predictions (f32), and seeded paired-bootstrap 95 % confidence intervals.
//
//   std::vector<int> pred = ..., gold = ..., ref = ...;     // one entry per eval sentence
//   ClassifierStats s = classifier_stats(pred, gold, ref);  // ref may be empty: no reference
//   s.accuracy, s.macro_f1, *s.agreement, *s.accuracy_delta, s.delta_ci->lo / ->hi
//
// Definitions (n sentences, labels are class indices >= 0):
//   accuracy        = #(pred == gold) / n
//   macro F1        = mean over classes c present in gold or pred of 2 TP_c / (2 TP_c + FP_c + FN_c)
//                     (the scikit-learn "macro" average over the labels that occur)
//   agreement       = #(pred == ref) / n
//   accuracy_delta  = accuracy(pred) - accuracy(ref)   (negative: the variant lost accuracy)
// Bootstrap: `resamples` resamples of n sentence indices drawn with replacement (splitmix64
// seeded by `seed`); the SAME indices score the variant and the reference (paired), so the
// interval of the delta reflects only the sentences where the two builds differ. The 95 %
// interval is the percentile interval: nearest-rank 2.5th and 97.5th percentiles of the
// resampled statistic (as in cibench compare). Deterministic for a seed.
#include <cstdint>
#include <optional>
#include <vector>

namespace cibench {

struct Interval {
  double lo = 0, hi = 0;
};

struct BootstrapOptions {
  int resamples = 1000;  // >= 10
  uint64_t seed = 1;
};

struct ClassifierStats {
  int64_t n = 0;                 // sentences scored
  int classes = 0;               // classes occurring in gold or pred (the macro-F1 average)
  double accuracy = 0;
  double macro_f1 = 0;
  Interval accuracy_ci;          // bootstrap 95 % interval of accuracy
  // Set only when reference predictions were given:
  std::optional<double> agreement;           // with the reference predictions
  std::optional<double> reference_accuracy;  // accuracy of the reference predictions
  std::optional<double> accuracy_delta;      // accuracy - reference_accuracy
  std::optional<Interval> delta_ci;          // paired bootstrap 95 % interval of the delta
  int resamples = 0;
  uint64_t seed = 0;
};

// `pred` and `gold` (and `ref` unless empty) must have the same non-zero size and hold labels
// >= 0; otherwise throws cibench::Error naming the problem.
ClassifierStats classifier_stats(const std::vector<int>& pred, const std::vector<int>& gold,
                                 const std::vector<int>& ref = {}, const BootstrapOptions& boot = {});

// Macro F1 alone (same definition as above).
double macro_f1(const std::vector<int>& pred, const std::vector<int>& gold);

}  // namespace cibench
