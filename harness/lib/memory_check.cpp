#include "harness/lib/memory_check.h"

#include <cstdlib>
#include <sstream>

#include "engines/core/error.h"
#include "harness/lib/sysinfo.h"

namespace cibench {

std::optional<int64_t> available_memory_bytes() {
  if (const char* e = std::getenv("CIBENCH_MEMORY_AVAILABLE_BYTES"); e && *e) {
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    if (*end == '\0' && v > 0) return v;
    throw Error(str("CIBENCH_MEMORY_AVAILABLE_BYTES='", e, "': expected a positive number of bytes"));
  }
  return meminfo_bytes("MemAvailable");
}

namespace {
std::string gib(double b) {
  std::ostringstream os;
  os.precision(b >= 10.0 * (1 << 30) ? 3 : 2);
  os << b / (1 << 30) << " GiB";
  return os.str();
}
}  // namespace

void require_memory(const std::string& what, double need, const std::string& breakdown, const std::string& hint,
                    std::optional<int64_t> available) {
  if (!available || need <= 0.9 * static_cast<double>(*available)) return;
  throw Error(str(what, " needs ~", gib(need), " (", breakdown, ") but ", gib(static_cast<double>(*available)),
                  " are available", hint.empty() ? std::string() : "; " + hint));
}

void require_llama_memory(const std::string& what, const LlamaConfig& c, const LlamaBuildOptions& build,
                          const SessionOptions& so, int sessions, const ExtraMemory& extra,
                          std::optional<int64_t> available) {
  const double weights = static_cast<double>(estimate_llama_build_bytes(c, build));
  const double session = static_cast<double>(LlamaSession::estimate_bytes(c, so));
  const double need = weights + sessions * session + extra.bytes;
  if (!available || need <= 0.9 * static_cast<double>(*available)) return;
  std::string hint;
  for (const char* f : {"int8", "int4_g32"}) {
    LlamaBuildOptions o = build;
    o.format = f;
    o.class_format.clear();
    hint += str(hint.empty() ? "" : ", ", f, " weights would need ~",
                gib(static_cast<double>(estimate_llama_build_bytes(c, o)) + sessions * session + extra.bytes));
  }
  if (sessions * session > 0.25 * need) hint += "; a shorter context or preallocated-f16 shrinks the KV cache";
  std::string breakdown =
      str("weights ", gib(weights), " in ", build.describe(), ", ", sessions, " session", sessions == 1 ? "" : "s",
          " of ", gib(session), " (KV cache for ", so.max_context > 0 ? so.max_context : c.seq_len, " positions)");
  if (extra.bytes > 0) breakdown += str(", ", extra.what, " ", gib(extra.bytes));
  require_memory(what, need, breakdown, hint, available);
}

}  // namespace cibench
