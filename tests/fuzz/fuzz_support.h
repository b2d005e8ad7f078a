#pragma once
// What the fuzz entry points share: a scratch folder in memory when possible (inputs are
// rewritten for every run), writing an input as a file, and treating cibench::Error as the clean
// rejection of a bad input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engines/core/error.h"

namespace cibench::fuzz {

// $CIBENCH_FUZZ_TMP, /dev/shm when writable, else the temporary folder; a folder per process.
inline std::filesystem::path scratch_dir(const std::string& name) {
  std::filesystem::path base = std::filesystem::temp_directory_path();
  if (const char* e = std::getenv("CIBENCH_FUZZ_TMP"); e && *e) base = e;
  else if (::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
  return base / (name + "_" + std::to_string(::getpid()));
}

inline void write_input(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// How many reads finished and how many were cleanly rejected (fuzz_smoke reports them, and
// checks that every seed is read in full by at least one reader).
inline long reads_completed = 0;
inline long reads_rejected = 0;

template <typename F>
void rejecting_errors(F&& f) {
  try {
    f();
    ++reads_completed;
  } catch (const cibench::Error&) {
    ++reads_rejected;  // a clean rejection of a bad input
  }
}

}  // namespace cibench::fuzz
