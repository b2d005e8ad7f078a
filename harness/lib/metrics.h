#pragma once
// Per-request timings and their distributions.
//
// Percentile estimator (documented in docs/harness.md): NEAREST RANK on the sorted sample.
// For percentile p in (0, 100] of n values sorted ascending x[1..n], the estimate is x[r] with
// r = ceil(p / 100 * n) (r = 1 when that is 0). It always returns an observed value, needs no
// interpolation, and p100 is the maximum. Exact whenever the run kept every request (at most
// `exact_cap` requests, see Recorder); beyond that the same rank is looked up in a log-bucketed
// histogram (Histogram) and the bucket's midpoint is reported: relative error <= 1/256 (0.4 %).
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cibench {

// Nearest-rank percentile of an ascending-sorted sample (p in (0, 100]). Throws on empty input.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double p);
// 1-based rank used by the estimator: ceil(p / 100 * n), at least 1.
int64_t nearest_rank_index(int64_t n, double p);

// HDR-style histogram of non-negative integers (nanoseconds): values below 128 are counted
// exactly; above, each power of two is split into 128 equal buckets, so a bucket spans at most
// 1/128 of its lower bound. Fixed size (7424 buckets, 58 KiB) whatever the count.
class Histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  Histogram();
  void add(int64_t v);
  void merge(const Histogram& o);
  int64_t count() const { return count_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  // Value reported for nearest-rank percentile p (bucket midpoint; exact max for p == 100).
  int64_t percentile(double p) const;

  static int bucket_of(uint64_t v);
  static uint64_t bucket_lower(int b);
  static uint64_t bucket_width(int b);
  static uint64_t bucket_value(int b) { return bucket_lower(b) + (bucket_width(b) - 1) / 2; }
  uint64_t bucket_count(int b) const { return counts_[b]; }

 private:
  std::vector<uint64_t> counts_;
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

// One request as the harness saw it (all times in ns since the run's start; -1 = not reached).
struct RequestRecord {
  int64_t index = 0;           // query index in the schedule
  int64_t sample_index = 0;
  int64_t scheduled_ns = 0;    // arrival time from the schedule (latency is measured from here)
  int64_t start_ns = 0;        // a worker started serving it
  int64_t first_token_ns = -1; // first output token (generative SUTs)
  int64_t end_ns = 0;          // completion
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  int32_t worker = 0;
  int32_t ok = 1;

  int64_t latency_ns() const { return end_ns - scheduled_ns; }
  int64_t queue_ns() const { return start_ns - scheduled_ns; }
  int64_t service_ns() const { return end_ns - start_ns; }
  int64_t ttft_ns() const { return first_token_ns >= 0 ? first_token_ns - scheduled_ns : -1; }
  // Time per output token after the first: (end - first) / (tokens - 1); -1 when < 2 tokens.
  int64_t tpot_ns() const {
    return first_token_ns >= 0 && output_tokens >= 2
               ? (end_ns - first_token_ns) / (output_tokens - 1)
               : -1;
  }
};

// Per-request metrics (one value per request) and the inter-token latency: every gap between
// consecutive output tokens of a request (tokens - 1 values per request), the distribution vLLM
// reports as ITL.
enum class Metric { latency = 0, queue = 1, service = 2, ttft = 3, tpot = 4, itl = 5 };
constexpr int kMetricCount = 6;
constexpr Metric kRequestMetrics[] = {Metric::latency, Metric::queue, Metric::service, Metric::ttft, Metric::tpot};
constexpr Metric kAllMetrics[] = {Metric::latency, Metric::queue, Metric::service, Metric::ttft, Metric::tpot, Metric::itl};
const char* metric_name(Metric m);  // "latency", "queue", "service", "ttft", "tpot", "itl"

struct Distribution {
  int64_t count = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0, p90_ns = 0, p95_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
  bool exact = true;  // nearest-rank on every value (false: histogram, <= 0.4 % error)
  // Value for a percentile in {50, 90, 95, 99, 99.9, 100}; throws on others.
  int64_t at(double p) const;
};

// Records requests from W worker threads without locks: each worker owns its histograms; the
// first `exact_cap` records go into a shared preallocated array (one atomic increment each), and
// the first `exact_cap` inter-token gaps into per-worker arrays.
// Memory is bounded: W * 6 histograms + exact_cap records and gaps, whatever the number of requests.
class Recorder {
 public:
  Recorder(int workers, int64_t exact_cap, int64_t expected_requests);
  // Called on worker `rec.worker`'s thread. `token_ns`: the harness's timestamp of each of the
  // request's n_tokens output tokens (ascending), whose gaps are its inter-token latencies.
  void add(const RequestRecord& rec, const int64_t* token_ns = nullptr, int64_t n_tokens = 0);

  int64_t count() const;
  int64_t failed() const;
  int64_t output_tokens() const;
  // The kept records (all of them when count() <= exact_cap), in completion order.
  std::vector<RequestRecord> records() const;
  bool all_kept() const { return count() <= exact_cap_; }
  // Whether every inter-token gap was kept (the ITL percentiles are then exact).
  bool all_gaps_kept() const { return gaps_dropped_.load() == 0; }
  Distribution distribution(Metric m) const;
  Histogram merged(Metric m) const;
  size_t bytes_reserved() const;

 private:
  struct alignas(64) PerWorker {
    std::array<Histogram, kMetricCount> h;
    int64_t n = 0, failed = 0, tokens = 0;
    std::vector<int64_t> gaps;  // kept inter-token gaps
  };
  std::vector<std::unique_ptr<PerWorker>> workers_;
  int64_t exact_cap_;
  std::atomic<int64_t> gap_slots_{0};
  std::atomic<int64_t> gaps_dropped_{0};
  std::vector<RequestRecord> kept_;
  std::atomic<int64_t> next_slot_{0};
};

// How many requests were open at once over [0, duration_ns], each request being open over one
// interval [from, to) (in flight: arrival to completion; queued: arrival to service start):
// the time-weighted mean (sum of the clipped interval lengths / duration, Little's law) and the
// maximum. A request that ends when another starts is not counted with it.
struct Occupancy {
  double mean = 0;
  int64_t max = 0;
};
Occupancy occupancy(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t duration_ns);

}  // namespace cibench
