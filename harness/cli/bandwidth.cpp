#include "harness/cli/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "engines/core/buffer.h"
#include "engines/core/thread_pool.h"

namespace cibench::cli {
namespace {

// A plain reduction the compiler vectorises; four accumulators keep loads in flight.
__attribute__((noinline)) double sum_range(const double* p, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

}  // namespace

BandwidthResult measure_read_bandwidth(int threads, double buffer_mib, int reps) {
  const size_t bytes = static_cast<size_t>(buffer_mib * 1024 * 1024);
  const int64_t n = static_cast<int64_t>(bytes / sizeof(double));
  AlignedBuffer buf(bytes);
  ThreadPool pool(threads);
  double* d = buf.as<double>();
  // Touch every page from the thread that will read it.
  pool.run([&](int i, int nt) {
    int64_t b, e;
    ThreadPool::split(n, i, nt, &b, &e, 512);
    for (int64_t k = b; k < e; ++k) d[k] = 1.0;
  });
  double best = 0;
  volatile double sink = 0;
  for (int r = 0; r < reps; ++r) {
    double partial[1024] = {};
    auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int i, int nt) {
      int64_t b, e;
      ThreadPool::split(n, i, nt, &b, &e, 512);
      partial[i] = sum_range(d + b, e - b);
    });
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < threads; ++i) sink = sink + partial[i];
    best = std::max(best, bytes / std::chrono::duration<double>(t1 - t0).count() / 1e9);
  }
  return {best, buffer_mib, threads};
}

}  // namespace cibench::cli
