#include "harness/lib/metrics.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"

namespace cibench {

int64_t nearest_rank_index(int64_t n, double p) {
  CIBENCH_CHECK(p > 0 && p <= 100, "percentile must be in (0, 100], got ", p);
  // Guard against p/100*n landing a hair above an integer through rounding (e.g. 99.9% of 1000).
  const double r = std::ceil(p / 100.0 * static_cast<double>(n) - 1e-9);
  return std::clamp<int64_t>(static_cast<int64_t>(r), 1, n);
}

int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  CIBENCH_CHECK(!sorted.empty(), "percentile of an empty sample");
  return sorted[static_cast<size_t>(nearest_rank_index(static_cast<int64_t>(sorted.size()), p) - 1)];
}

// ---- Histogram ----------------------------------------------------------------------------

Histogram::Histogram() : counts_(kBuckets, 0) {}

int Histogram::bucket_of(uint64_t v) {
  if (v < static_cast<uint64_t>(kSub)) return static_cast<int>(v);
  const int e = 63 - __builtin_clzll(v);  // floor(log2 v) >= kSubBits
  const int g = e - kSubBits;
  const int m = static_cast<int>(v >> g);  // in [kSub, 2 kSub)
  return (g + 1) * kSub + (m - kSub);
}

uint64_t Histogram::bucket_lower(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  const int g = b / kSub - 1;
  const uint64_t m = static_cast<uint64_t>(b % kSub + kSub);
  return m << g;
}

uint64_t Histogram::bucket_width(int b) { return b < kSub ? 1 : uint64_t{1} << (b / kSub - 1); }

void Histogram::add(int64_t v) {
  if (v < 0) v = 0;
  counts_[bucket_of(static_cast<uint64_t>(v))]++;
  if (count_ == 0 || v < min_) min_ = v;
  if (count_ == 0 || v > max_) max_ = v;
  ++count_;
  sum_ += static_cast<double>(v);
}

void Histogram::merge(const Histogram& o) {
  if (o.count_ == 0) return;
  for (int b = 0; b < kBuckets; ++b) counts_[b] += o.counts_[b];
  min_ = count_ ? std::min(min_, o.min_) : o.min_;
  max_ = count_ ? std::max(max_, o.max_) : o.max_;
  count_ += o.count_;
  sum_ += o.sum_;
}

int64_t Histogram::percentile(double p) const {
  CIBENCH_CHECK(count_ > 0, "percentile of an empty histogram");
  if (p >= 100) return max_;
  const int64_t r = nearest_rank_index(count_, p);
  int64_t cum = 0;
  for (int b = 0; b < kBuckets; ++b) {
    cum += static_cast<int64_t>(counts_[b]);
    if (cum >= r) {
      // Clamp to the observed range so p-values never fall outside [min, max].
      return std::clamp(static_cast<int64_t>(bucket_value(b)), min_, max_);
    }
  }
  return max_;
}

// ---- Distribution / Recorder --------------------------------------------------------------

const char* metric_name(Metric m) {
  static const char* names[] = {"latency", "queue", "service", "ttft", "tpot", "itl"};
  return names[static_cast<int>(m)];
}

int64_t Distribution::at(double p) const {
  if (p == 50) return p50_ns;
  if (p == 90) return p90_ns;
  if (p == 95) return p95_ns;
  if (p == 99) return p99_ns;
  if (p == 99.9) return p999_ns;
  if (p == 100) return max_ns;
  throw Error(str("no stored percentile p", p, " (have 50, 90, 95, 99, 99.9, 100)"));
}

Recorder::Recorder(int workers, int64_t exact_cap, int64_t expected_requests)
    : exact_cap_(exact_cap) {
  for (int w = 0; w < workers; ++w) workers_.push_back(std::make_unique<PerWorker>());
  kept_.resize(static_cast<size_t>(std::clamp<int64_t>(expected_requests, 0, exact_cap)));
}

void Recorder::add(const RequestRecord& rec, const int64_t* token_ns, int64_t n_tokens) {
  PerWorker& pw = *workers_[static_cast<size_t>(rec.worker)];
  pw.n++;
  if (!rec.ok) {
    pw.failed++;
  } else {
    pw.tokens += rec.output_tokens;
    pw.h[0].add(rec.latency_ns());
    pw.h[1].add(rec.queue_ns());
    pw.h[2].add(rec.service_ns());
    if (rec.ttft_ns() >= 0) pw.h[3].add(rec.ttft_ns());
    if (rec.tpot_ns() >= 0) pw.h[4].add(rec.tpot_ns());
    if (token_ns && n_tokens >= 2) {
      const int64_t gaps = n_tokens - 1;
      const int64_t slot = gap_slots_.fetch_add(gaps, std::memory_order_relaxed);
      const int64_t keep = std::clamp<int64_t>(exact_cap_ - slot, 0, gaps);
      if (keep < gaps) gaps_dropped_.fetch_add(gaps - keep, std::memory_order_relaxed);
      for (int64_t k = 1; k < n_tokens; ++k) {
        const int64_t g = std::max<int64_t>(token_ns[k] - token_ns[k - 1], 0);
        pw.h[5].add(g);
        if (k <= keep) pw.gaps.push_back(g);
      }
    }
  }
  const int64_t slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
  if (slot < static_cast<int64_t>(kept_.size())) kept_[static_cast<size_t>(slot)] = rec;
  // Records beyond the preallocated size are only kept up to the cap (rarely: when the
  // expected count was too low; guarded by the caller, who sizes for the schedule).
}

int64_t Recorder::count() const {
  int64_t n = 0;
  for (auto& w : workers_) n += w->n;
  return n;
}
int64_t Recorder::failed() const {
  int64_t n = 0;
  for (auto& w : workers_) n += w->failed;
  return n;
}
int64_t Recorder::output_tokens() const {
  int64_t n = 0;
  for (auto& w : workers_) n += w->tokens;
  return n;
}

std::vector<RequestRecord> Recorder::records() const {
  const int64_t n = std::min<int64_t>(next_slot_.load(), static_cast<int64_t>(kept_.size()));
  return std::vector<RequestRecord>(kept_.begin(), kept_.begin() + n);
}

Histogram Recorder::merged(Metric m) const {
  Histogram h;
  for (auto& w : workers_) h.merge(w->h[static_cast<int>(m)]);
  return h;
}

size_t Recorder::bytes_reserved() const {
  return kept_.size() * sizeof(RequestRecord) +
         workers_.size() * (sizeof(PerWorker) + kMetricCount * Histogram::kBuckets * 8);
}

namespace {
Distribution exact_distribution(std::vector<int64_t> v) {
  Distribution d;
  d.count = static_cast<int64_t>(v.size());
  d.exact = true;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double s = 0;
  for (int64_t x : v) s += static_cast<double>(x);
  d.mean_ns = s / static_cast<double>(v.size());
  d.p50_ns = nearest_rank(v, 50);
  d.p90_ns = nearest_rank(v, 90);
  d.p95_ns = nearest_rank(v, 95);
  d.p99_ns = nearest_rank(v, 99);
  d.p999_ns = nearest_rank(v, 99.9);
  d.max_ns = v.back();
  return d;
}
}  // namespace

Distribution Recorder::distribution(Metric m) const {
  if (m == Metric::itl && all_gaps_kept()) {
    std::vector<int64_t> v;
    for (auto& w : workers_) v.insert(v.end(), w->gaps.begin(), w->gaps.end());
    return exact_distribution(std::move(v));
  }
  Distribution d;
  const bool exact = m != Metric::itl && next_slot_.load() <= static_cast<int64_t>(kept_.size());
  if (exact) {
    std::vector<int64_t> v;
    v.reserve(kept_.size());
    for (const auto& r : records()) {
      if (!r.ok) continue;
      int64_t x = -1;
      switch (m) {
        case Metric::latency: x = r.latency_ns(); break;
        case Metric::queue: x = r.queue_ns(); break;
        case Metric::service: x = r.service_ns(); break;
        case Metric::ttft: x = r.ttft_ns(); break;
        case Metric::tpot: x = r.tpot_ns(); break;
        case Metric::itl: break;
      }
      if (x >= 0 || m == Metric::latency || m == Metric::queue || m == Metric::service)
        v.push_back(std::max<int64_t>(x, 0));
    }
    return exact_distribution(std::move(v));
  }
  const Histogram h = merged(m);
  d.count = h.count();
  d.exact = false;
  if (d.count == 0) return d;
  d.mean_ns = h.mean();
  d.p50_ns = h.percentile(50);
  d.p90_ns = h.percentile(90);
  d.p95_ns = h.percentile(95);
  d.p99_ns = h.percentile(99);
  d.p999_ns = h.percentile(99.9);
  d.max_ns = h.max();
  return d;
}

Occupancy occupancy(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t duration_ns) {
  Occupancy o;
  if (duration_ns <= 0) return o;
  // +1 at each start, -1 at each end; at equal times the ends go first.
  std::vector<std::pair<int64_t, int>> events;
  events.reserve(intervals.size() * 2);
  double open_ns = 0;
  for (auto [from, to] : intervals) {
    from = std::clamp<int64_t>(from, 0, duration_ns);
    to = std::clamp<int64_t>(to, 0, duration_ns);
    if (to <= from) continue;
    open_ns += static_cast<double>(to - from);
    events.emplace_back(from, +1);
    events.emplace_back(to, -1);
  }
  std::sort(events.begin(), events.end());
  int64_t now = 0;
  for (const auto& e : events) {
    now += e.second;
    o.max = std::max(o.max, now);
  }
  o.mean = open_ns / static_cast<double>(duration_ns);
  return o;
}

}  // namespace cibench
