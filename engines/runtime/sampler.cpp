#include "engines/runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"

namespace cibench {

Sampler::Sampler(int vocab_size, float temperature, float top_p, uint64_t seed)
    : vocab_size_(vocab_size), temperature_(temperature), top_p_(top_p),
      state_(seed ? seed : 0x853c49e6748fea9bull), probs_(vocab_size), order_(vocab_size) {
  CIBENCH_CHECK(temperature >= 0.0f && std::isfinite(temperature),
                "temperature must be >= 0, got ", temperature);
  CIBENCH_CHECK(top_p > 0.0f && top_p <= 1.0f, "top-p must be in (0, 1], got ", top_p);
}

int Sampler::argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

float Sampler::next_uniform() {
  // xorshift64*
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return static_cast<float>((state_ * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
}

int Sampler::sample(const float* logits) {
  if (temperature_ == 0.0f) return argmax(logits, vocab_size_);
  const float mx = *std::max_element(logits, logits + vocab_size_);
  double sum = 0;
  for (int i = 0; i < vocab_size_; ++i) {
    probs_[i] = std::exp((logits[i] - mx) / temperature_);
    sum += probs_[i];
  }
  for (int i = 0; i < vocab_size_; ++i) probs_[i] = static_cast<float>(probs_[i] / sum);
  const float r = next_uniform();
  if (top_p_ >= 1.0f) {
    float cdf = 0;
    for (int i = 0; i < vocab_size_; ++i) {
      cdf += probs_[i];
      if (r < cdf) return i;
    }
    return vocab_size_ - 1;
  }
  // Nucleus: the smallest set of most likely tokens whose mass reaches top_p.
  for (int i = 0; i < vocab_size_; ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [&](int a, int b) { return probs_[a] > probs_[b]; });
  float mass = 0;
  int last = vocab_size_ - 1;
  for (int i = 0; i < vocab_size_; ++i) {
    mass += probs_[order_[i]];
    if (mass >= top_p_) {
      last = i;
      break;
    }
  }
  const float target = r * mass;
  float cdf = 0;
  for (int i = 0; i <= last; ++i) {
    cdf += probs_[order_[i]];
    if (target < cdf) return order_[i];
  }
  return order_[last];
}

}  // namespace cibench
