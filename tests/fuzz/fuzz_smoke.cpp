// fuzz_smoke: replays seed files, then deterministic mutations of them (bit flips, truncations,
// overwritten length/count/offset fields, inserted and deleted bytes) through the same entry
// point as the libFuzzer target, so compilers without libFuzzer (g++) still exercise it.
//   fuzz_smoke [--iterations N] [--seed S] FILE...
// Exit 0 when every input was handled (a cibench::Error is a clean rejection), 77 (skipped)
// when a seed file is missing outside CI, 1 on usage errors; anything else crashes loudly.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Values that make length, count and offset fields interesting.
const uint64_t kInteresting[] = {0,
                                 1,
                                 2,
                                 3,
                                 7,
                                 31,
                                 32,
                                 64,
                                 255,
                                 4096,
                                 65535,
                                 0x7fffffffull,
                                 0x80000000ull,
                                 0xffffffffull,
                                 0x100000000ull,
                                 uint64_t{1} << 40,
                                 uint64_t{1} << 62,
                                 0x7fffffffffffffffull,
                                 0x8000000000000000ull,
                                 0xffffffffffffffffull};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::vector<uint8_t> mutate(const std::vector<uint8_t>& seed) {
    std::vector<uint8_t> b = seed;
    const int kind = static_cast<int>(below(6));
    const int rounds = 1 + static_cast<int>(below(3));
    for (int r = 0; r < rounds && !b.empty(); ++r) {
      // Most structure lives in the first few KiB (headers, metadata, tensor directories).
      const size_t span = below(4) == 0 ? b.size() : std::min<size_t>(b.size(), 16384);
      switch (kind) {
        case 0: {  // bit flips
          const int flips = 1 + static_cast<int>(below(8));
          for (int i = 0; i < flips; ++i) b[below(span)] ^= static_cast<uint8_t>(1u << below(8));
          break;
        }
        case 1:  // truncation
          b.resize(below(b.size()));
          break;
        case 2:    // 8-byte field overwrite (GGUF/safetensors lengths, counts, offsets)
        case 3: {  // 4-byte field overwrite (llama2.c header, GGUF types and versions)
          const size_t width = kind == 2 ? 8 : 4;
          if (b.size() < width) break;
          size_t at = below(std::min(span, b.size() - width + 1));
          if (below(2)) at &= ~(width - 1);  // aligned fields are the common case
          uint64_t v = below(3) == 0 ? rng_() : kInteresting[below(std::size(kInteresting))];
          if (below(4) == 0) v = b.size() + below(64) - 32;  // near the file size
          std::memcpy(b.data() + at, &v, width);
          break;
        }
        case 4: {  // insert random bytes
          const size_t at = below(span + 1), n = 1 + below(16);
          std::vector<uint8_t> ins(n);
          for (auto& x : ins) x = static_cast<uint8_t>(rng_());
          b.insert(b.begin() + static_cast<long>(std::min(at, b.size())), ins.begin(), ins.end());
          break;
        }
        case 5: {  // delete a range
          const size_t at = below(span), n = std::min<size_t>(1 + below(64), b.size() - at);
          b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
          break;
        }
      }
    }
    return b;
  }

 private:
  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  long iterations = 3000;
  uint64_t seed = 1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: fuzz_smoke [--iterations N] [--seed S] FILE...\n");
      return 1;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_smoke: no seed files given\n");
    return 1;
  }
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& f : files) {
    if (!std::filesystem::exists(f)) {
      std::fprintf(stderr, "fuzz_smoke: missing seed %s\n", f.c_str());
      return std::getenv("CI") ? 1 : 77;
    }
    seeds.push_back(read_bytes(f));
  }

  const auto t0 = std::chrono::steady_clock::now();
  // Every seed must be read in full by at least one reader: a seed every reader rejects fuzzes
  // nothing but the first check.
  for (size_t i = 0; i < seeds.size(); ++i) {
    const long before = cibench::fuzz::reads_completed;
    LLVMFuzzerTestOneInput(seeds[i].data(), seeds[i].size());
    if (cibench::fuzz::reads_completed == before) {
      std::fprintf(stderr, "fuzz_smoke: seed %s was rejected by every reader\n", files[i].c_str());
      return 1;
    }
  }
  const long seed_reads = cibench::fuzz::reads_completed + cibench::fuzz::reads_rejected;
  Mutator m(seed);
  for (long i = 0; i < iterations; ++i) {
    const auto input = m.mutate(seeds[static_cast<size_t>(i) % seeds.size()]);
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long mutated_reads = cibench::fuzz::reads_completed + cibench::fuzz::reads_rejected - seed_reads;
  std::printf("fuzz_smoke: %zu seeds and %ld mutations handled in %.1f s (seed %llu); of %ld reads of mutations, "
              "%ld cleanly rejected\n",
              seeds.size(), iterations, s, static_cast<unsigned long long>(seed), mutated_reads,
              cibench::fuzz::reads_rejected);
  return 0;
}
