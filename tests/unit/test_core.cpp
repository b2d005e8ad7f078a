#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/core/output_file.h"
#include "engines/core/thread_pool.h"

namespace cibench {
namespace {

TEST(Cpu, LevelsAreOrderedAndGenericAlwaysWorks) {
  EXPECT_TRUE(isa_supported(Isa::generic));
  auto s = supported_isas();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.back(), best_supported_isa());
  // Each supported level implies every lower one.
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(static_cast<int>(s[i]), static_cast<int>(i));
  EXPECT_FALSE(cpu_features().flags_string().empty() && isa_supported(Isa::avx2));
}

// CIBENCH_ISA is a ceiling: the usable levels are the CPU's up to it, and a level that cannot run
// says why (the CPU, or the cap). The e2e test isa_ceiling runs the command line under each cap.
TEST(Cpu, UsableLevelsStopAtTheCeilingAndSayWhyNot) {
  EXPECT_EQ(best_supported_isa(), isa_ceiling());
  EXPECT_TRUE(cpu_has_isa(isa_ceiling()));
  EXPECT_LE(static_cast<int>(isa_ceiling()), static_cast<int>(best_cpu_isa()));
  const char* env = std::getenv("CIBENCH_ISA");
  if (!env || !*env) {
    EXPECT_EQ(isa_ceiling(), best_cpu_isa());
    EXPECT_EQ(isa_ceiling_source(), "");
  } else {
    EXPECT_EQ(isa_ceiling_source(), std::string("CIBENCH_ISA=") + env);
  }
  for (Isa i : all_isas()) {
    const bool below = static_cast<int>(i) <= static_cast<int>(isa_ceiling());
    EXPECT_EQ(isa_supported(i), cpu_has_isa(i) && below) << isa_name(i);
    const std::string why = isa_unavailable_reason(i);
    EXPECT_EQ(why.empty(), isa_supported(i)) << isa_name(i) << ": " << why;
    if (!cpu_has_isa(i)) {
      EXPECT_NE(why.find(cpu_features().model_name), std::string::npos) << why;
    } else if (!below) {
      EXPECT_NE(why.find("CIBENCH_ISA="), std::string::npos) << why;
      EXPECT_THROW(set_active_isa(i), Error) << isa_name(i);
    }
  }
}

TEST(Cpu, ParseIsaNamesAndRejectsUnknown) {
  for (Isa i : all_isas()) EXPECT_EQ(parse_isa(isa_name(i)), i);
  try {
    parse_isa("avx1024");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("avx1024"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("generic"), std::string::npos);
  }
}

TEST(Cpu, ForcingAnUnsupportedLevelFailsLoudly) {
  Isa before = active_isa();
  for (Isa i : all_isas()) {
    if (isa_supported(i)) {
      set_active_isa(i);
      EXPECT_EQ(active_isa(), i);
    } else {
      EXPECT_THROW(set_active_isa(i), Error) << isa_name(i);
    }
  }
  set_active_isa(before);
}

TEST(ThreadPool, EveryThreadRunsOnceAndSplitCoversAllRows) {
  for (int n : {1, 2, 3, 8}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> seen(n);
    for (int rep = 0; rep < 100; ++rep) {
      pool.run([&](int i, int total) {
        EXPECT_EQ(total, n);
        seen[i].fetch_add(1);
      });
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 100);
  }
  for (int64_t rows : {0, 1, 15, 16, 17, 172, 1000})
    for (int parts : {1, 2, 3, 7}) {
      int64_t covered = 0, prev_end = 0;
      for (int i = 0; i < parts; ++i) {
        int64_t b, e;
        ThreadPool::split(rows, i, parts, &b, &e, 16);
        EXPECT_EQ(b, prev_end);
        EXPECT_LE(b, e);
        if (e < rows && e > b) {
          EXPECT_EQ(e % 16, 0);
        }
        covered += e - b;
        prev_end = e;
      }
      EXPECT_EQ(covered, rows);
    }
}

// The pool's sleeping paths: a worker slower than the caller's spin (the caller sleeps until the
// last worker wakes it), workers asleep after an idle gap longer than their spin, and two pools
// driven at once from two threads (more runnable threads than cores on a small machine, where
// spinners stand aside). Every run returns only after every thread's share is done.
TEST(ThreadPool, SlowWorkersIdleGapsAndTwoPoolsAtOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> done(3);
  for (int rep = 0; rep < 6; ++rep) {
    if (rep % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // workers fall asleep
    pool.run([&](int i, int) {
      if (i == rep % 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the straggler
      done[i].fetch_add(1);
    });
    for (int i = 0; i < 3; ++i) ASSERT_EQ(done[i].load(), rep + 1) << "thread " << i << " after run " << rep;
  }
  auto drive = [](int64_t* total) {
    ThreadPool p(2);
    std::atomic<int64_t> sum{0};
    for (int rep = 0; rep < 2000; ++rep) p.run([&](int i, int) { sum.fetch_add(i + 1); });
    *total = sum.load();
  };
  int64_t a = 0, b = 0;
  std::thread ta(drive, &a), tb(drive, &b);
  ta.join();
  tb.join();
  EXPECT_EQ(a, 2000 * 3);
  EXPECT_EQ(b, 2000 * 3);
}

TEST(Format, TableRowsRoundTripAndFindByName) {
  EXPECT_EQ(std::string(format_by_name("f32").name), "f32");
  EXPECT_THROW(format_by_name("f31"), Error);
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  for (const FormatRow& f : format_table()) {
    for (int64_t k : {1, 31, 32, 172, 256}) {
      std::vector<float> x(k), y(k);
      for (auto& v : x) v = d(rng);
      std::vector<uint8_t> packed(f.row_bytes(k));
      f.pack_row(x.data(), k, packed.data());
      f.unpack_row(packed.data(), k, y.data());
      if (std::string(f.name) == "f32") {
        for (int64_t i = 0; i < k; ++i) ASSERT_EQ(x[i], y[i]);
      }
    }
  }
}

TEST(Matrix, RunnerMatchesReferenceAtEveryIsaAndThreadCount) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> d(-1, 1);
  const int64_t rows = 172, cols = 64, m = 5;
  std::vector<float> w(rows * cols), x(m * cols);
  for (auto& v : w) v = d(rng);
  for (auto& v : x) v = d(rng);
  std::vector<float> ref(m * rows);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += double(w[r * cols + c]) * x[i * cols + c];
      ref[i * rows + r] = float(s);
    }
  WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, format_by_name("f32"));
  for (Isa isa : supported_isas())
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      MatmulRunner run(pool, isa);
      std::vector<float> y(m * rows), yv(rows);
      run.matmul(wm, x.data(), cols, m, y.data(), rows);
      run.matvec(wm, x.data(), yv.data());
      for (int64_t i = 0; i < m * rows; ++i) ASSERT_NEAR(y[i], ref[i], 1e-4f);
      for (int64_t r = 0; r < rows; ++r) ASSERT_NEAR(yv[r], ref[r], 1e-4f);
    }
}

// A user-named output file is written beside and renamed over: the target of a symlink at the
// path is never written through, a write abandoned before commit() leaves the old file and no
// temporary behind, and a missing folder or a folder in the way is named.
TEST(ReplacingFile, RenamesOverThePathAndNeverWritesThroughALink) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cibench_replacing_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const fs::path target = dir / "precious.txt", link = dir / "out.txt";
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, link);
  write_file_replacing(link.string(), "report", "the report");
  EXPECT_EQ(read(target), "keep me");
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(read(link), "report");

  {
    ReplacingFile f(link.string(), "the report");
    f.stream() << "half a rep";  // abandoned: an exception before commit()
  }
  EXPECT_EQ(read(link), "report");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 2u);  // precious.txt and out.txt: no temporary left

  const auto error_of = [](const std::string& path) {
    try {
      write_file_replacing(path, "x", "the export");
    } catch (const FileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = error_of((dir / "no" / "such" / "out.csv").string());
  EXPECT_NE(missing.find("cannot write the export: the folder " + (dir / "no" / "such").string() + " does not exist"),
            std::string::npos) << missing;
  const std::string folder = error_of(dir.string());
  EXPECT_NE(folder.find("a folder is in the way"), std::string::npos) << folder;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cibench
