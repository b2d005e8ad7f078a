#include "harness/lib/traffic.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "harness/lib/schedule.h"

namespace cibench {

Traffic Traffic::uniform(int64_t n, uint64_t seed) {
  CIBENCH_CHECK(n >= 1, "traffic: no samples to draw from");
  Traffic t;
  t.kind_ = "uniform";
  t.n_ = n;
  t.seed_ = seed;
  return t;
}

Traffic Traffic::zipf(int64_t n, double s, uint64_t seed) {
  CIBENCH_CHECK(n >= 1, "traffic: no samples to draw from");
  CIBENCH_CHECK(s > 0 && std::isfinite(s), "traffic: zipf exponent must be > 0, got ", s);
  Traffic t;
  t.kind_ = "zipf";
  t.n_ = n;
  t.seed_ = seed;
  t.s_ = s;
  t.cdf_.resize(static_cast<size_t>(n));
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) {
    acc += std::pow(static_cast<double>(k + 1), -s);
    t.cdf_[static_cast<size_t>(k)] = acc;
  }
  for (double& c : t.cdf_) c /= acc;
  t.cdf_.back() = 1.0;
  t.by_rank_.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) t.by_rank_[static_cast<size_t>(k)] = k;
  Rng rng(hash3(seed, 0x21bf));  // Fisher-Yates
  for (int64_t k = n - 1; k > 0; --k)
    std::swap(t.by_rank_[static_cast<size_t>(k)], t.by_rank_[rng.next() % static_cast<uint64_t>(k + 1)]);
  return t;
}

Traffic Traffic::replay(std::vector<int64_t> idx, int64_t n, std::string origin) {
  if (idx.empty()) throw FileError(origin, "the replay list is empty");
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || idx[i] >= n)
      throw FileError(origin, str("entry ", i + 1, ": sample index ", idx[i], " is outside [0, ", n, ")"));
  Traffic t;
  t.kind_ = "replay";
  t.n_ = n;
  t.replay_ = std::move(idx);
  t.origin_ = std::move(origin);
  return t;
}

Traffic Traffic::replay(const std::string& path, int64_t n) {
  require_regular_file(path);
  std::ifstream in(path);
  if (!in) throw FileError(path, "cannot open the replay file");
  std::vector<int64_t> idx;
  std::string line, tok;
  for (int ln = 1; std::getline(in, line); ++ln) {
    std::istringstream ls(line);
    while (ls >> tok) {
      if (tok[0] == '#') break;
      size_t used = 0;
      int64_t v = -1;
      try {
        v = std::stoll(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != tok.size()) throw FileError(path, str("line ", ln, ": '", tok, "' is not a sample index"));
      if (v < 0 || v >= n) throw FileError(path, str("line ", ln, ": sample index ", v, " is outside [0, ", n, ")"));
      idx.push_back(v);
    }
  }
  return replay(std::move(idx), n, path);
}

int64_t Traffic::sample(int64_t i) const {
  if (kind_ == "replay") {
    const int64_t m = static_cast<int64_t>(replay_.size());
    return replay_[static_cast<size_t>(((i % m) + m) % m)];
  }
  const uint64_t bits = hash3(seed_, static_cast<uint64_t>(i), 0x7a1f);
  if (kind_ == "uniform") return static_cast<int64_t>(bits % static_cast<uint64_t>(n_));
  const double u = unit_double(bits);
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  const size_t rank = std::min(static_cast<size_t>(it - cdf_.begin()), cdf_.size() - 1);
  return by_rank_[rank];
}

std::string Traffic::describe() const {
  if (kind_ == "zipf") return str("zipf s=", s_, " seed=", seed_, " over ", n_, " samples");
  if (kind_ == "replay") return str("replay of ", replay_.size(), " indices from ", origin_, " over ", n_, " samples");
  return str("uniform seed=", seed_, " over ", n_, " samples");
}

std::vector<double> Traffic::probabilities() const {
  std::vector<double> p(static_cast<size_t>(n_), 0.0);
  if (kind_ == "uniform") {
    std::fill(p.begin(), p.end(), 1.0 / static_cast<double>(n_));
  } else if (kind_ == "zipf") {
    for (size_t k = 0; k < cdf_.size(); ++k) p[static_cast<size_t>(by_rank_[k])] = cdf_[k] - (k ? cdf_[k - 1] : 0.0);
  } else {
    for (int64_t v : replay_) p[static_cast<size_t>(v)] += 1.0 / static_cast<double>(replay_.size());
  }
  return p;
}

double Traffic::expected_duplicate_rate(int64_t queries) const {
  if (queries <= 0) return 0;
  if (kind_ == "replay") {
    std::vector<int64_t> seq(static_cast<size_t>(queries));
    for (int64_t i = 0; i < queries; ++i) seq[static_cast<size_t>(i)] = sample(i);
    return duplicate_rate(seq);
  }
  const double m = static_cast<double>(queries);
  if (kind_ == "uniform") {  // closed form: n (1 - (1 - 1/n)^m) distinct samples
    const double n = static_cast<double>(n_);
    return 1.0 - n * -std::expm1(m * std::log1p(-1.0 / n)) / m;
  }
  double distinct = 0;
  for (double pk : probabilities()) distinct += 1.0 - std::exp(m * std::log1p(-std::min(pk, 1.0 - 1e-16)));
  return 1.0 - distinct / m;
}

double duplicate_rate(const std::vector<int64_t>& samples) {
  if (samples.empty()) return 0;
  std::unordered_set<int64_t> seen(samples.begin(), samples.end());
  return 1.0 - static_cast<double>(seen.size()) / static_cast<double>(samples.size());
}

}  // namespace cibench
