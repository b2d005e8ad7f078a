#pragma once
// What machine ran this: CPU, ISA, cores, kernel, and the knobs that move numbers (frequency
// governor, turbo, SMT, transparent huge pages). A knob that cannot be read is kept as
// "unknown" with the reason, never guessed.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cibench {

// A value read from the system, or why it could not be read.
struct Readable {
  std::optional<std::string> value;
  std::string reason;  // set when value is empty
};

struct SystemInfo {
  std::string hostname;
  std::string kernel;  // uname: sysname release version machine
  std::string cpu_vendor;
  std::string cpu_model;
  std::string cpu_flags;
  std::string isa_best;
  std::string isa_active;
  int logical_cpus = 0;
  Readable physical_cores;
  Readable mem_total_bytes;
  Readable governor;  // scaling_governor of cpu0 (e.g. "performance", "powersave")
  Readable turbo;     // "on" / "off" (cpufreq boost or intel_pstate no_turbo)
  Readable smt;       // "on" / "off" / "notsupported"
  Readable thp;       // the bracketed choice in transparent_hugepage/enabled
  // Warnings in the Google Benchmark spirit: things that make the numbers less trustworthy.
  std::vector<std::string> warnings;

  nlohmann::json to_json() const;
};

// A field of /proc/meminfo ("MemTotal", "MemAvailable") in bytes, or nullopt when absent.
std::optional<int64_t> meminfo_bytes(const std::string& field, const std::string& root = "");

// Reads everything once (cheap; no caching so tests can vary the root).
// `sysfs_root` lets tests point at a fake tree ("" = the real /).
SystemInfo collect_system_info(const std::string& sysfs_root = "");

// Resident-set peak (VmHWM) of this process in bytes, or nullopt; reset_peak_rss() asks the
// kernel to restart the peak from the current resident set (writes 5 to /proc/self/clear_refs),
// returning false if refused, with the reason in *why when given.
std::optional<int64_t> peak_rss_bytes();
bool reset_peak_rss(std::string* why = nullptr);
// Returns the heap's free memory to the kernel (glibc malloc_trim(0) over every arena): memory a
// finished variant freed stays resident otherwise, and a peak restarted from the current
// resident set would count it.
void release_free_memory();

std::string utc_now_iso();

}  // namespace cibench
