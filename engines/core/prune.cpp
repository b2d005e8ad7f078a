#include "engines/core/prune.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engines/core/error.h"

namespace cibench {
namespace {

// Zeroes the n_zero items of smallest score (ties: lower index first); item i covers columns
// [i * width, min(cols, (i + 1) * width)).
void zero_smallest(float* row, int64_t cols, int64_t width, const std::vector<double>& score,
                   int64_t n_zero, std::vector<int64_t>& order) {
  const int64_t n = static_cast<int64_t>(score.size());
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return score[a] < score[b]; });
  for (int64_t j = 0; j < n_zero && j < n; ++j) {
    const int64_t i = order[j];
    for (int64_t c = i * width; c < std::min(cols, (i + 1) * width); ++c) row[c] = 0.f;
  }
}

}  // namespace

void prune_magnitude(float* w, int64_t rows, int64_t cols, double sparsity,
                     const std::string& pattern) {
  CIBENCH_CHECK(sparsity >= 0.0 && sparsity < 1.0, "prune_magnitude: sparsity must be in [0, 1), got ",
                sparsity);
  CIBENCH_CHECK(pattern == "unstructured" || pattern == "block" || pattern == "2:4",
                "prune_magnitude: unknown pattern '", pattern,
                "' (expected unstructured, block or 2:4)");
  if (sparsity == 0.0 || rows <= 0 || cols <= 0) return;
  std::vector<double> score;
  std::vector<int64_t> order;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w + r * cols;
    if (pattern == "unstructured") {
      score.resize(static_cast<size_t>(cols));
      for (int64_t c = 0; c < cols; ++c) score[c] = std::fabs(row[c]);
      const auto n_zero = static_cast<int64_t>(std::llround(sparsity * static_cast<double>(cols)));
      zero_smallest(row, cols, 1, score, n_zero, order);
    } else if (pattern == "block") {
      const int64_t nb = (cols + kPruneBlockCols - 1) / kPruneBlockCols;
      score.assign(static_cast<size_t>(nb), 0.0);
      for (int64_t c = 0; c < cols; ++c)
        score[c / kPruneBlockCols] += static_cast<double>(row[c]) * row[c];
      const auto n_zero = static_cast<int64_t>(std::llround(sparsity * static_cast<double>(nb)));
      zero_smallest(row, cols, kPruneBlockCols, score, n_zero, order);
    } else {  // 2:4
      for (int64_t g = 0; g < cols; g += 4) {
        const int64_t n = std::min<int64_t>(4, cols - g);
        if (n <= 2) continue;
        score.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) score[i] = std::fabs(row[g + i]);
        zero_smallest(row + g, n, 1, score, n - 2, order);
      }
    }
  }
}

void prune_magnitude_global(const std::vector<PruneTarget>& targets, double sparsity) {
  CIBENCH_CHECK(sparsity >= 0.0 && sparsity < 1.0,
                "prune_magnitude_global: sparsity must be in [0, 1), got ", sparsity);
  int64_t total = 0;
  for (const PruneTarget& t : targets) total += t.rows * t.cols;
  const auto n_zero = static_cast<int64_t>(std::llround(sparsity * static_cast<double>(total)));
  if (n_zero <= 0) return;
  // The n_zero-th smallest |w| is the threshold: everything below it goes, and of the values
  // equal to it only as many as make the count exact (earliest first).
  std::vector<float> mags;
  mags.reserve(static_cast<size_t>(total));
  for (const PruneTarget& t : targets)
    for (int64_t i = 0; i < t.rows * t.cols; ++i) mags.push_back(std::fabs(t.w[i]));
  std::nth_element(mags.begin(), mags.begin() + (n_zero - 1), mags.end());
  const float thr = mags[static_cast<size_t>(n_zero - 1)];
  int64_t below = 0;
  for (const PruneTarget& t : targets)
    for (int64_t i = 0; i < t.rows * t.cols; ++i) below += std::fabs(t.w[i]) < thr;
  int64_t equal_left = n_zero - below;
  for (const PruneTarget& t : targets)
    for (int64_t i = 0; i < t.rows * t.cols; ++i) {
      const float a = std::fabs(t.w[i]);
      if (a < thr) {
        t.w[i] = 0.f;
      } else if (a == thr && equal_left > 0) {
        t.w[i] = 0.f;
        --equal_left;
      }
    }
}

bool is_per_matrix_prune_pattern(const std::string& pattern) {
  return pattern == "unstructured" || pattern == "block" || pattern == "2:4";
}

void prune_targets(const std::vector<PruneTarget>& targets, double sparsity, const std::string& pattern) {
  if (pattern == "global") {
    prune_magnitude_global(targets, sparsity);
    return;
  }
  CIBENCH_CHECK(is_per_matrix_prune_pattern(pattern), "unknown pruning pattern '", pattern,
                "' (expected unstructured, block, 2:4 or global)");
  for (const PruneTarget& t : targets) prune_magnitude(t.w, t.rows, t.cols, sparsity, pattern);
}

const char* prune_pattern_for_format(const std::string& format_name) {
  auto ends_with = [&](const char* suffix) {
    const std::string s = suffix;
    return format_name.size() >= s.size() &&
           format_name.compare(format_name.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("_24")) return "2:4";
  if (ends_with("_bs")) return "block";
  return "unstructured";
}

}  // namespace cibench
