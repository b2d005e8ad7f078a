#include "harness/lib/result_cache.h"

#include <algorithm>

#include "engines/core/error.h"

namespace cibench {

ResultCache::ResultCache(int64_t max_entries, int64_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {
  CIBENCH_CHECK(max_entries >= 0 && max_bytes >= 0, "result cache: negative limit (entries ", max_entries, ", bytes ",
                max_bytes, ")");
  CIBENCH_CHECK(max_entries > 0 || max_bytes > 0, "result cache: set a limit in entries or in bytes");
}

std::string ResultCache::key_of(const int* ids, int n) {
  return std::string(reinterpret_cast<const char*>(ids), static_cast<size_t>(n) * sizeof(int));
}

int64_t ResultCache::entry_bytes(const std::string& key, const std::vector<float>& value) {
  return kEntryOverhead + static_cast<int64_t>(key.size() + value.size() * sizeof(float));
}

std::optional<std::vector<float>> ResultCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lk(mu_);
  const auto it = map_.find(key);
  if (it == map_.end()) {
    ++st_.misses;
    return std::nullopt;
  }
  ++st_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

void ResultCache::evict_locked() {
  while (!lru_.empty() && ((max_entries_ > 0 && st_.entries > max_entries_) || (max_bytes_ > 0 && st_.bytes > max_bytes_))) {
    const Entry& e = lru_.back();
    st_.bytes -= e.bytes;
    --st_.entries;
    ++st_.evictions;
    map_.erase(e.key);
    lru_.pop_back();
  }
}

void ResultCache::put(const std::string& key, const std::vector<float>& value) {
  const int64_t b = entry_bytes(key, value);
  std::lock_guard<std::mutex> lk(mu_);
  if (max_bytes_ > 0 && b > max_bytes_) return;
  if (const auto it = map_.find(key); it != map_.end()) {  // refresh
    st_.bytes += b - it->second->bytes;
    it->second->value = value;
    it->second->bytes = b;
    lru_.splice(lru_.begin(), lru_, it->second);
  } else {
    lru_.push_front(Entry{key, value, b});
    map_.emplace(key, lru_.begin());
    ++st_.entries;
    st_.bytes += b;
    ++st_.insertions;
  }
  evict_locked();
  st_.peak_bytes = std::max(st_.peak_bytes, st_.bytes);
}

CacheStats ResultCache::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return st_;
}

std::vector<std::string> ResultCache::keys_mru() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<std::string> out;
  for (const auto& e : lru_) out.push_back(e.key);
  return out;
}

}  // namespace cibench
