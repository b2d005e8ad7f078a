#pragma once
// Which sample each query uses: the duplicate structure of the traffic. Counter-based like the
// rest of the schedule (sample of query i = f(seed, i)), so it does not depend on timing.
//   uniform : every sample equally likely (independent draws: duplicates by chance only)
//   zipf    : P(rank k) proportional to 1 / k^s over the n samples; which sample holds rank k is
//             a seeded permutation, so the popular sentences are not the first rows of the file
//   replay  : a file of sample indices (whitespace separated); query i uses entry i mod length
#include <cstdint>
#include <string>
#include <vector>

namespace cibench {

class Traffic {
 public:
  static Traffic uniform(int64_t n_samples, uint64_t seed);
  static Traffic zipf(int64_t n_samples, double s, uint64_t seed);
  // Throws FileError naming the file and line for an unreadable file, a non-integer or an
  // index outside [0, n_samples).
  static Traffic replay(const std::string& path, int64_t n_samples);
  static Traffic replay(std::vector<int64_t> indices, int64_t n_samples, std::string origin);

  int64_t sample(int64_t query_index) const;
  int64_t n_samples() const { return n_; }
  const std::string& kind() const { return kind_; }
  std::string describe() const;  // "zipf s=1.1 seed=2 over 872 samples"
  // Probability of each sample (replay: the empirical frequencies of the file).
  std::vector<double> probabilities() const;
  // Expected duplicate rate of `queries` independent draws: 1 - E[distinct] / queries, with
  // E[distinct] = sum_k 1 - (1 - p_k)^queries. For replay: the exact rate of its first `queries`.
  double expected_duplicate_rate(int64_t queries) const;

 private:
  std::string kind_;
  int64_t n_ = 0;
  uint64_t seed_ = 0;
  double s_ = 0;
  std::vector<double> cdf_;        // zipf: by rank
  std::vector<int64_t> by_rank_;   // zipf: sample of rank k (0-based)
  std::vector<int64_t> replay_;
  std::string origin_;
};

// Measured duplicate rate of a sequence of sample indices: 1 - distinct / count (0 when empty).
double duplicate_rate(const std::vector<int64_t>& samples);

}  // namespace cibench
