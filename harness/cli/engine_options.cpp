#include "harness/cli/engine_options.h"

#include <fstream>
#include <sstream>

#include "engines/core/cpu.h"
#include "engines/core/error.h"

namespace cibench::cli {

void EngineOptions::add_to(CLI::App& app, bool with_format) {
  app.add_option("-m,--model", model,
                 "model: llama2.c .bin, Hugging Face folder, .gguf, or synthetic:NAME[@seed]")
      ->capture_default_str();
  if (with_format) {
    app.add_option("-f,--format", format, "weight format for every tensor class (see `cibench formats`)")
        ->capture_default_str();
    app.add_option("--format-class", class_formats,
                   "per-class override CLASS=FORMAT (classes: attention, ffn, output); repeatable");
    app.add_option("--sparsity", sparsity, "magnitude-prune this fraction of weights at load (0..1)")
        ->capture_default_str();
  }
  app.add_option("--isa", isa, "force an instruction-set level (generic, avx2, avx512, avx512_vnni, amx)");
  app.add_option("--kv,--kv-mode", kv_mode,
                 "KV cache mode: " + kv_mode_list() +
                     " (none recomputes the prefix; preallocated-f16 stores IEEE halves)")
      ->capture_default_str();
  app.add_option("--max-context", max_context,
                 "context length in positions (default: the model's; at most 1048576)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--pin", pin, "pin thread i to CPU i");
}

LlamaBuildOptions EngineOptions::build_options() const {
  if (!isa.empty()) set_active_isa(parse_isa(isa));
  LlamaBuildOptions b;
  b.format = format;
  b.sparsity = sparsity;
  for (const std::string& cf : class_formats) {
    auto eq = cf.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == cf.size())
      throw Error(str("--format-class expects CLASS=FORMAT, got '", cf, "'"));
    b.class_format[cf.substr(0, eq)] = cf.substr(eq + 1);
  }
  return b;
}

SessionOptions EngineOptions::session_options(int threads) const {
  SessionOptions s;
  s.threads = threads;
  s.pin_threads = pin;
  s.kv_mode = parse_kv_mode(kv_mode);
  s.max_context = max_context;
  s.isa = static_cast<int>(active_isa());
  return s;
}

namespace {
long long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream ss(line.substr(std::string(key).size()));
      long long kb = -1;
      ss >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}
}  // namespace

long long peak_rss_bytes() { return status_kb("VmHWM:"); }
long long current_rss_bytes() { return status_kb("VmRSS:"); }

std::string weight_conversion_line(const LlamaModel& m) {
  if (m.conversion.empty()) return "";
  return str("cibench: ", m.origin, ": quantised weights converted (relative RMS error vs the stored values): ",
             m.conversion_summary());
}

}  // namespace cibench::cli
