#pragma once
// Helpers shared by the tests: where ../shared is, and skipping when it is absent.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "engines/core/cpu.h"

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

// ---- Every ISA level as a test parameter -------------------------------------------------------
// Model-level tests are instantiated over all_isas() with isa_param_name, so their names carry the
// level (".../avx512") and a level this process cannot use is reported as skipped, with the
// reason, in the test summary. Inside the test, IsaScope makes that level the process's level
// (sessions, matmul runners and recipes built with default options then run at it).

inline std::string isa_param_name(const ::testing::TestParamInfo<Isa>& p) { return isa_name(p.param); }

class IsaScope {
 public:
  explicit IsaScope(Isa isa) : before_(active_isa()) { set_active_isa(isa); }
  ~IsaScope() { set_active_isa(before_); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;

 private:
  Isa before_;
};

// ---- Floating-point error bounds ----------------------------------------------------------------
// Unit roundoff of IEEE binary32 (round to nearest): u = 2^-24.
constexpr double kF32U = 0x1p-24;

// gamma_n = n u / (1 - n u): the standard bound (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., Lemma 3.1) on the relative error accumulated by n binary32 roundings.
// The largest |a[i] - b[i]| (sizes must match), and the largest |v[i]|, in binary64.
template <typename A, typename B>
double max_abs_diff(const A& a, const B& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

template <typename T>
double max_abs(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

inline double gamma_f32(double n) { return n * kF32U / (1.0 - n * kF32U); }

// Two binary32 evaluations of the same dot product of length k (any summation order, with or
// without fused multiply-adds) each lie within gamma_k * sum|x_i y_i| of the exact value
// (Higham, eq. 3.5), so they differ from each other by at most 2 gamma_k sum|x_i y_i|.
inline double f32_dot_pair_bound(int64_t k, double sum_abs_products) {
  return 2.0 * gamma_f32(static_cast<double>(k)) * sum_abs_products;
}

// A fresh directory under the system temp dir (named by `tag`, the pid and a counter), removed
// with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("cibench_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }
  // Names of everything in the folder, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

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

// Skips the running test, with the reason in the summary, when `isa` cannot run in this process.
#define CIBENCH_REQUIRE_ISA(isa)                                                      \
  do {                                                                                \
    const std::string cibench_isa_reason_ = ::cibench::isa_unavailable_reason(isa); \
    if (!cibench_isa_reason_.empty()) GTEST_SKIP() << cibench_isa_reason_;            \
  } while (0)
