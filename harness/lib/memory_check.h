#pragma once
// Memory a job needs, checked against what the machine has before anything is allocated: a build
// that cannot fit is refused with the figures and what would fit, instead of being killed by the
// kernel after a minute (a 7B model in f32 needs ~27 GB).
#include <cstdint>
#include <optional>
#include <string>

#include "engines/models/llama.h"
#include "engines/runtime/session.h"

namespace cibench {

// MemAvailable from /proc/meminfo in bytes, or CIBENCH_MEMORY_AVAILABLE_BYTES when set (to check
// the refusal on any machine); nullopt when neither can be read.
std::optional<int64_t> available_memory_bytes();

// Throws Error when `need` bytes exceed 90 % of `available` (nothing is checked when available is
// unknown): "WHAT needs ~N GiB (BREAKDOWN) but M GiB are available; HINT".
void require_memory(const std::string& what, double need, const std::string& breakdown, const std::string& hint,
                    std::optional<int64_t> available = available_memory_bytes());

// Memory held beside the model and its sessions (e.g. an accuracy reference build).
struct ExtraMemory {
  double bytes = 0;
  std::string what;
};

// A Llama model built with `build`, `sessions` sessions of `so` and `extra`: the estimate,
// checked; the hint names what the smaller formats would need.
void require_llama_memory(const std::string& what, const LlamaConfig& c, const LlamaBuildOptions& build,
                          const SessionOptions& so, int sessions = 1, const ExtraMemory& extra = {},
                          std::optional<int64_t> available = available_memory_bytes());

}  // namespace cibench
