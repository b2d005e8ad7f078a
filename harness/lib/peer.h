#pragma once
// The llama.cpp peer of `cibench bench --peer`: a `llama-bench` the user built, run as a child
// process on a GGUF of the same model, one repetition per invocation so that it alternates with
// cibench's repetitions. This file knows the peer's command line and its JSON (`-o json`), the
// pairing of cibench's weight formats with ggml tensor types, and the ratio statistics; the
// command (harness/cli/cmd_bench_peer.cpp) does the alternating.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/core/error.h"

namespace cibench {

// Something the peer did wrong: it did not start, exited non-zero, printed no JSON or JSON
// without the expected test. The message names the binary and what was wrong.
class PeerError : public Error {
 public:
  using Error::Error;
};

// The ggml tensor type of llama.cpp's nearest build to a cibench format: f32 -> F32, bf16 -> BF16,
// the int8 formats -> Q8_0 (int8_g32_a8 is its very layout and arithmetic), the int4 formats ->
// Q4_0 (ggml's group of 32, symmetric). Formats with
// no ggml counterpart (the sparse ones, asymmetric int4) throw naming the format.
std::string peer_ggml_type(const std::string& cibench_format);

// The result of one llama-bench invocation (-r 1: one sample per test).
struct LlamaBenchSample {
  double prefill_tps = 0;  // the pp test, tokens per second (0 when not requested)
  double decode_tps = 0;   // the tg test, tokens per second (0 when not requested)
  // Identity and flags, as the peer reported them.
  std::string build_commit;
  int64_t build_number = 0;
  std::string cpu_info;
  std::string backends;
  std::string model_type;
  int64_t model_size = 0;  // bytes of weights the peer reports
  nlohmann::json flags;    // n_threads, n_batch, n_ubatch, type_k, type_v, flash_attn, use_mmap, ...
};

// Parses llama-bench's `-o json` output: an array with one object per test. `prompt` and `decode`
// name the tests expected (n_prompt = prompt, n_gen = 0; n_prompt = 0, n_gen = decode; a count of
// 0 means that test was not requested). Throws PeerError naming `origin` and the missing or
// malformed field.
LlamaBenchSample parse_llama_bench_json(const std::string& text, const std::string& origin, int prompt, int decode);

struct LlamaBenchOptions {
  std::string binary;                    // path of llama-bench
  std::vector<std::string> extra_args;   // appended as given (e.g. -fa 1)
};

// The command line of one invocation: -m GGUF -p PROMPT -n DECODE -t THREADS -r 1 -mmp 0
// -ctk/-ctv CACHE -o json, then the extra arguments.
std::vector<std::string> llama_bench_argv(const LlamaBenchOptions& o, const std::string& gguf, int threads,
                                          int prompt, int decode, const std::string& cache_type);

// Runs argv (argv[0] a path, no shell), returns its standard output; throws PeerError naming the
// binary, the exit status and the tail of its standard error when it fails.
std::string run_captured(const std::vector<std::string>& argv);

// One invocation: runs and parses.
LlamaBenchSample run_llama_bench(const LlamaBenchOptions& o, const std::string& gguf, int threads, int prompt,
                                 int decode, const std::string& cache_type);

// cibench / peer over paired repetitions: the ratio of the medians, and a seeded percentile
// bootstrap 95 % interval of it (the repetitions resampled in pairs, as they ran side by side).
struct RatioEstimate {
  double ratio = 0;
  double lo = 0, hi = 0;
  int resamples = 0;
};
RatioEstimate paired_ratio(const std::vector<double>& ours, const std::vector<double>& peer, int resamples = 2000,
                           uint64_t seed = 1);

}  // namespace cibench
