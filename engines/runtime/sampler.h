#pragma once
// Token sampling: greedy (temperature 0), temperature, and nucleus (top-p), seeded.
#include <cstdint>
#include <vector>

namespace cibench {

class Sampler {
 public:
  Sampler(int vocab_size, float temperature, float top_p, uint64_t seed);
  // Picks the next token from logits (vocab_size floats; not modified).
  int sample(const float* logits);

  static int argmax(const float* v, int n);

 private:
  float next_uniform();  // [0, 1)
  int vocab_size_;
  float temperature_;
  float top_p_;
  uint64_t state_;
  std::vector<float> probs_;
  std::vector<int> order_;
};

}  // namespace cibench
