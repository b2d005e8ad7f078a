#pragma once
// Helpers shared by the tests: where ../shared is, and skipping when it is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cibench::test {

// ../shared as configured at build time, overridable with CIBENCH_SHARED at run time.
inline std::string shared_dir() {
  if (const char* e = std::getenv("CIBENCH_SHARED"); e && *e) return e;
  return CIBENCH_SHARED_DIR;
}

inline std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

inline bool have_shared(const std::string& rel) {
  return std::filesystem::exists(shared_path(rel));
}

}  // namespace cibench::test

// Real models are required in CI (../shared is always beside the clone); a missing file is a
// failure there, not a silent skip.
#define CIBENCH_REQUIRE_SHARED(rel)                                                     \
  do {                                                                                  \
    if (!::cibench::test::have_shared(rel)) {                                           \
      if (std::getenv("CI")) FAIL() << "missing " << ::cibench::test::shared_path(rel); \
      GTEST_SKIP() << "missing " << ::cibench::test::shared_path(rel);                  \
    }                                                                                   \
  } while (0)
