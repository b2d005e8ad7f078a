#include "harness/cli/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "engines/core/buffer.h"
#include "engines/core/thread_pool.h"
#include "engines/kernels/kernels.h"

namespace cibench::cli {
namespace {

// Streams with the engine's own dot product at the active ISA (the loop decode runs), against a
// small L1-resident vector, so the probe measures what the kernels can pull from memory.
double sum_range(const float* p, int64_t n) {
  const KernelTable& k = active_kernels();
  alignas(64) static thread_local float ones[4096];
  if (ones[0] != 1.0f)
    for (float& o : ones) o = 1.0f;
  double s = 0;
  for (int64_t i = 0; i < n; i += 4096) s += k.dot_f32(p + i, ones, std::min<int64_t>(4096, n - i));
  return s;
}

}  // namespace

BandwidthResult measure_read_bandwidth(int threads, double buffer_mib, int reps) {
  const size_t bytes = static_cast<size_t>(buffer_mib * 1024 * 1024);
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  AlignedBuffer buf(bytes);
  ThreadPool pool(threads);
  float* d = buf.as<float>();
  // Touch every page from the thread that will read it.
  pool.run([&](int i, int nt) {
    int64_t b, e;
    ThreadPool::split(n, i, nt, &b, &e, 512);
    for (int64_t k = b; k < e; ++k) d[k] = 1.0f;
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
