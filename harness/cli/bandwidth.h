#pragma once
// Memory read bandwidth for the decode roofline: bytes of weights per token / bandwidth = the
// fastest possible decode step. The probe streams a buffer far larger than the caches through the
// engine's own f32 matrix-vector kernel at the active ISA (four weight rows per step, each
// thread its own block of rows), i.e. the access pattern of decode itself. A single-stream read
// (one dot product per thread) under-reads what the memory system delivers to four concurrent
// streams on many CPUs, which put f32 decode above "100 %" of such a roofline.
#include <cstdint>
#include <map>
#include <memory>

#include "engines/core/buffer.h"
#include "engines/core/thread_pool.h"

namespace cibench::cli {

class ReadBandwidthProbe {
 public:
  // Allocates and touches buffer_mib MiB (rounded down to whole 16 KiB rows, at least 64 rows).
  explicit ReadBandwidthProbe(double buffer_mib = 512);
  // One pass over the buffer with `threads` threads (a pool per thread count, kept); GB/s with
  // 1 GB = 1e9 bytes.
  double measure(int threads);
  double buffer_mib() const { return static_cast<double>(bytes()) / (1024.0 * 1024.0); }
  size_t bytes() const { return static_cast<size_t>(rows_) * kCols * sizeof(float); }

  static constexpr int64_t kCols = 4096;  // floats per row: 16 KiB

 private:
  int64_t rows_ = 0;
  AlignedBuffer w_;
  AlignedBuffer x_;
  AlignedBuffer y_;
  std::map<int, std::unique_ptr<ThreadPool>> pools_;
};

}  // namespace cibench::cli
