#include "harness/lib/schedule.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"

namespace cibench {

double Rng::exponential(double rate) { return -std::log1p(-uniform()) / rate; }

double Rng::normal() {
  const double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::gamma(double k) {
  if (k < 1) {
    const double u = 1.0 - uniform();  // (0, 1]
    return gamma(k + 1) * std::pow(u, 1.0 / k);
  }
  const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

int64_t LengthDist::draw_length(uint64_t r1, uint64_t r2) const {
  if (dist == "fixed") return value;
  if (dist == "uniform") {
    const uint64_t span = static_cast<uint64_t>(max - min + 1);
    return min + static_cast<int64_t>(r1 % span);
  }
  if (dist == "lognormal") {
    // Box-Muller from two uniforms; u1 in (0, 1].
    const double u1 = 1.0 - unit_double(r1), u2 = unit_double(r2);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    const double v = std::round(median * std::exp(sigma * z));
    return std::clamp(static_cast<int64_t>(v), min, max);
  }
  throw Error(str("unknown length distribution '", dist, "'"));
}

std::string LengthDist::describe() const {
  if (offset > 0) {
    LengthDist d = *this;
    d.offset = 0;
    return str(offset, " shared + ", d.describe());
  }
  if (dist == "fixed") return str(value);
  if (dist == "uniform") return str("uniform[", min, ",", max, "]");
  return str("lognormal(median ", median, ", sigma ", sigma, ") in [", min, ",", max, "]");
}

QueryChoice choose_query(int64_t index, const ChoiceSeeds& seeds, int64_t n_samples,
                         const LengthDist& prompt, const LengthDist& gen) {
  QueryChoice c;
  const uint64_t i = static_cast<uint64_t>(index);
  c.sample_index =
      n_samples > 0 ? static_cast<int64_t>(hash3(seeds.samples, i) % static_cast<uint64_t>(n_samples))
                    : 0;
  c.prompt_tokens = static_cast<int>(prompt.draw(hash3(seeds.lengths, i, 1), hash3(seeds.lengths, i, 2)));
  c.gen_tokens = static_cast<int>(gen.draw(hash3(seeds.lengths, i, 3), hash3(seeds.lengths, i, 4)));
  return c;
}

std::vector<int64_t> poisson_arrivals_ns(double rate_qps, uint64_t seed, int64_t min_queries,
                                         int64_t min_duration_ns) {
  CIBENCH_CHECK(rate_qps > 0, "Poisson rate must be > 0 queries/s, got ", rate_qps);
  Rng rng(splitmix64(seed));
  std::vector<int64_t> t;
  t.reserve(static_cast<size_t>(std::max<double>(min_queries, rate_qps * 1e-9 * min_duration_ns) * 1.1) + 16);
  double now_s = 0;
  while (static_cast<int64_t>(t.size()) < min_queries ||
         (t.empty() ? 0 : t.back()) < min_duration_ns) {
    now_s += rng.exponential(rate_qps);
    t.push_back(static_cast<int64_t>(std::llround(now_s * 1e9)));
  }
  return t;
}

std::vector<int64_t> gamma_arrivals_ns(double rate_qps, double burstiness, uint64_t seed,
                                       int64_t min_queries, int64_t min_duration_ns) {
  CIBENCH_CHECK(std::isfinite(burstiness) && burstiness > 0, "burstiness must be a finite number > 0, got ",
                burstiness);
  if (burstiness == 1) return poisson_arrivals_ns(rate_qps, seed, min_queries, min_duration_ns);
  CIBENCH_CHECK(rate_qps > 0, "arrival rate must be > 0 queries/s, got ", rate_qps);
  Rng rng(splitmix64(seed));
  const double scale = 1.0 / (rate_qps * burstiness);
  std::vector<int64_t> t;
  t.reserve(static_cast<size_t>(std::max<double>(min_queries, rate_qps * 1e-9 * min_duration_ns) * 1.1) + 16);
  double now_s = 0;
  while (static_cast<int64_t>(t.size()) < min_queries || (t.empty() ? 0 : t.back()) < min_duration_ns) {
    now_s += rng.gamma(burstiness) * scale;
    t.push_back(static_cast<int64_t>(std::llround(now_s * 1e9)));
  }
  return t;
}

}  // namespace cibench
