#pragma once
// Measures sustained memory read bandwidth with `threads` threads (each streams its own slice of
// a buffer far larger than the caches), for the decode roofline: bytes of weights per token /
// bandwidth = the fastest possible decode step.
namespace cibench::cli {

struct BandwidthResult {
  double gb_per_s = 0;  // best of the repetitions, 1 GB = 1e9 bytes
  double buffer_mib = 0;
  int threads = 0;
};

BandwidthResult measure_read_bandwidth(int threads, double buffer_mib = 1024, int reps = 5);

}  // namespace cibench::cli
