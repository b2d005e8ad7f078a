#pragma once
// SplitMix64: the seeded, counter-friendly mixer behind every synthetic tensor, sampled
// calibration window, seeded permutation, load schedule and bootstrap in cibench.
#include <cstdint>
#include <string>

namespace cibench {

// One SplitMix64 step from `x` (a pure function: mix(x + golden gamma)).
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The generator form: advances `state` and returns the next value (same sequence as
// state = splitmix64 applied to successive counters).
inline uint64_t splitmix64_next(uint64_t& state) {
  const uint64_t z = splitmix64(state);
  state += 0x9e3779b97f4a7c15ull;
  return z;
}

// FNV-1a 64 of a name (seeds per-tensor streams).
inline uint64_t fnv1a64_name(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace cibench
