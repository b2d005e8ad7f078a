#pragma once
// A least-recently-used result cache for a classifier service, keyed by the normalised input
// (here: the WordPiece ids of the sentence, so two texts that normalise alike share an entry).
// Limits: at most `max_entries` entries and/or at most `max_bytes` bytes (0 = no limit of that
// kind; at least one must be set). Inserting evicts least-recently-used entries until both
// limits hold; an entry larger than max_bytes on its own is not stored. get() moves a hit to
// the front. Thread-safe (one mutex): the workers of a SUT share one cache.
//
// Memory is an estimate of what the entries hold: the key and value bytes plus a fixed
// per-entry bookkeeping cost (list node, hash-map node and bucket pointer), kEntryOverhead.
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cibench {

struct CacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t insertions = 0;
  int64_t evictions = 0;
  int64_t entries = 0;     // now
  int64_t bytes = 0;       // now (estimate, see above)
  int64_t peak_bytes = 0;
  double hit_rate() const { return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0; }
};

class ResultCache {
 public:
  static constexpr int64_t kEntryOverhead = 96;

  ResultCache(int64_t max_entries, int64_t max_bytes);
  // Key of a token-id sequence (its bytes).
  static std::string key_of(const int* ids, int n);

  // The cached value, counted as a hit or a miss.
  std::optional<std::vector<float>> get(const std::string& key);
  void put(const std::string& key, const std::vector<float>& value);
  CacheStats stats() const;
  // Keys from most to least recently used (for tests and inspection).
  std::vector<std::string> keys_mru() const;
  int64_t max_entries() const { return max_entries_; }
  int64_t max_bytes() const { return max_bytes_; }
  static int64_t entry_bytes(const std::string& key, const std::vector<float>& value);

 private:
  struct Entry {
    std::string key;
    std::vector<float> value;
    int64_t bytes;
  };
  void evict_locked();

  int64_t max_entries_, max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
  CacheStats st_;
};

}  // namespace cibench
