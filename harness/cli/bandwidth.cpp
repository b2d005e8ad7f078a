#include "harness/cli/bandwidth.h"

#include <chrono>

#include "engines/core/error.h"
#include "engines/kernels/kernels.h"

namespace cibench::cli {

ReadBandwidthProbe::ReadBandwidthProbe(double buffer_mib) {
  CIBENCH_CHECK(buffer_mib > 0, "bandwidth probe: buffer size must be positive, got ", buffer_mib);
  const double row_bytes = static_cast<double>(kCols * sizeof(float));
  rows_ = static_cast<int64_t>(buffer_mib * 1024 * 1024 / row_bytes);
  if (rows_ < 64) rows_ = 64;
  w_ = AlignedBuffer(bytes());
  x_ = AlignedBuffer(kCols * sizeof(float));
  y_ = AlignedBuffer(static_cast<size_t>(rows_) * sizeof(float));
  float* w = w_.as<float>();
  const size_t n = static_cast<size_t>(rows_) * kCols;
  for (size_t i = 0; i < n; ++i) w[i] = 1.0f;  // every page touched before the first pass
  float* x = x_.as<float>();
  for (int64_t i = 0; i < kCols; ++i) x[i] = 1.0f;
}

double ReadBandwidthProbe::measure(int threads) {
  CIBENCH_CHECK(threads >= 1, "bandwidth probe: thread count must be >= 1, got ", threads);
  std::unique_ptr<ThreadPool>& pool = pools_[threads];
  if (!pool) pool = std::make_unique<ThreadPool>(threads);
  const KernelTable& k = active_kernels();
  const float* w = w_.as<float>();
  const float* x = x_.as<float>();
  float* y = y_.as<float>();
  const int64_t rows = rows_;
  const auto t0 = std::chrono::steady_clock::now();
  pool->run([&](int i, int nt) {
    int64_t b, e;
    ThreadPool::split(rows, i, nt, &b, &e, 4);
    if (e > b) k.matvec_f32(w + b * kCols, kCols, x, y + b, e - b, kCols);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every output must be the row sum (kCols ones), or the pass did not read what it claims.
  CIBENCH_CHECK(y[0] == static_cast<float>(kCols) && y[rows - 1] == static_cast<float>(kCols),
                "bandwidth probe: matrix-vector check failed (", y[0], ", ", y[rows - 1], ")");
  return static_cast<double>(bytes()) / s / 1e9;
}

}  // namespace cibench::cli
