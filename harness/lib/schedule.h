#pragma once
// Schedules are data: arrival times and per-query choices (which sample, how many prompt and
// output tokens) are pure functions of named seeds, computed before the clock starts.
//
// Three independent seeds, so that changing one choice never moves the others:
//   arrivals  -> Poisson or Gamma (bursty) gaps (server, stepped)
//   samples   -> which sample of the workload query i uses
//   lengths   -> prompt and generation lengths of query i
// Per-query choices are counter-based (a hash of seed and query index), so query i of a
// closed-loop run gets the same sample and lengths whatever the timing.
#include <cstdint>
#include <string>
#include <vector>

#include "engines/core/splitmix.h"

namespace cibench {

// Hash of (seed, a, b): counter-based random bits.
constexpr uint64_t hash3(uint64_t seed, uint64_t a, uint64_t b = 0) {
  return splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b);
}
// Uniform double in [0, 1) from the top 53 bits.
constexpr double unit_double(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A sequential generator (splitmix64) for streams such as Poisson gaps.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64_next(state_); }
  double uniform() { return unit_double(next()); }
  // Exponential with the given rate (events per unit): -ln(1 - U) / rate.
  double exponential(double rate);
  // Standard normal (Box-Muller, one value per two uniforms).
  double normal();
  // Gamma with shape k > 0 and scale 1 (Marsaglia-Tsang; k < 1 through Gamma(k + 1) U^(1/k)).
  double gamma(double k);

 private:
  uint64_t state_;
};

// A distribution of token counts. fixed: value; uniform: integers in [min, max];
// lognormal: exp(N(ln median, sigma)) rounded and clamped to [min, max].
struct LengthDist {
  std::string dist = "fixed";
  int64_t value = 0;
  int64_t min = 1;
  int64_t max = 1;
  double median = 0;
  double sigma = 0;
  // Added to every draw: the tokens of a shared system prompt in front of the drawn length.
  int64_t offset = 0;

  // Deterministic draw from two independent 64-bit random words (offset included).
  int64_t draw(uint64_t r1, uint64_t r2) const { return offset + draw_length(r1, r2); }
  int64_t upper_bound() const { return offset + (dist == "fixed" ? value : max); }
  std::string describe() const;

 private:
  int64_t draw_length(uint64_t r1, uint64_t r2) const;
};

// What query `index` asks for: a sample of the workload and the lengths.
struct QueryChoice {
  int64_t sample_index = 0;
  int prompt_tokens = 0;
  int gen_tokens = 0;
};

struct ChoiceSeeds {
  uint64_t samples = 0;
  uint64_t lengths = 0;
};

QueryChoice choose_query(int64_t index, const ChoiceSeeds& seeds, int64_t n_samples,
                         const LengthDist& prompt, const LengthDist& gen);

// Poisson arrivals at `rate_qps` (exponential gaps), in ns from the start, until both
// `min_queries` have arrived and the last arrival is at or after `min_duration_ns`.
// The first arrival is at the first gap, not at 0 (as LoadGen's server scenario).
std::vector<int64_t> poisson_arrivals_ns(double rate_qps, uint64_t seed, int64_t min_queries,
                                         int64_t min_duration_ns);

// Bursty arrivals as vLLM's benchmark draws them: Gamma-distributed gaps with shape `burstiness`
// and scale 1 / (rate_qps * burstiness), so the mean rate is rate_qps whatever the burstiness and
// the gaps' coefficient of variation is 1 / sqrt(burstiness). burstiness = 1 is Poisson (and
// returns exactly poisson_arrivals_ns); below 1 the arrivals come in bursts, above 1 they are more
// even. Throws Error unless burstiness is finite and > 0. Same stopping rule as above.
std::vector<int64_t> gamma_arrivals_ns(double rate_qps, double burstiness, uint64_t seed,
                                       int64_t min_queries, int64_t min_duration_ns);

}  // namespace cibench
