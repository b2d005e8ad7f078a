#pragma once
// Options shared by the commands that build and run a Llama model directly (generate, bench):
// model spec, weight formats (with per-class overrides), sparsity, ISA, threads, KV mode.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/runtime/session.h"
#include "harness/lib/sut_llama.h"

namespace cibench::cli {

struct EngineOptions {
  std::string model = "synthetic:tinystories-15m";
  std::string format = "f32";
  std::vector<std::string> class_formats;  // "attention=bf16", "ffn=int8", "output=f32"
  double sparsity = 0.0;
  std::string isa;                          // empty: CIBENCH_ISA or the best the CPU has
  std::string kv_mode = "preallocated";
  int max_context = 0;
  bool pin = false;

  void add_to(CLI::App& app, bool with_format = true);
  // Applies --isa (throws if unsupported) and returns the build options.
  LlamaBuildOptions build_options() const;
  SessionOptions session_options(int threads) const;
};

// Peak and current resident set of this process in bytes (from /proc/self/status), -1 if
// unreadable.
long long peak_rss_bytes();
long long current_rss_bytes();

// (weight_conversion_json: harness/lib/sut_llama.h.)
// The line `generate` and `bench` print for it on stderr; empty when there is none.
std::string weight_conversion_line(const LlamaModel& m);

}  // namespace cibench::cli
