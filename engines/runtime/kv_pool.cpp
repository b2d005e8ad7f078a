#include "engines/runtime/kv_pool.h"

#include <algorithm>

namespace cibench {

namespace {

struct PoolSizes {
  int32_t blocks = 0;
  size_t elem = 0, block_elems = 0, layer_bytes = 0;
  PoolSizes(const LlamaConfig& c, const KvPoolOptions& o) {
    CIBENCH_CHECK(o.block_tokens > 0 && o.block_tokens % 8 == 0,
                  "KV pool block_tokens must be a positive multiple of 8, got ", o.block_tokens);
    CIBENCH_CHECK(o.token_budget > 0, "KV pool token_budget must be > 0, got ", o.token_budget);
    CIBENCH_CHECK(o.kv_mode != KvMode::none, "KV mode ", kv_mode_name(o.kv_mode),
                  " keeps no cache, so it cannot be pooled (use ", kv_mode_name(KvMode::preallocated),
                  " or ", kv_mode_name(KvMode::preallocated_f16), ")");
    const int64_t b = KvBlockPool::blocks_for(o.token_budget, o.block_tokens);
    CIBENCH_CHECK(b <= INT32_MAX, "KV pool token_budget ", o.token_budget, " is too many blocks");
    blocks = static_cast<int32_t>(b);
    elem = o.kv_mode == KvMode::preallocated_f16 ? sizeof(uint16_t) : sizeof(float);
    block_elems = static_cast<size_t>(c.n_kv_heads) * o.block_tokens * c.head_dim();
    layer_bytes = static_cast<size_t>(blocks) * block_elems * elem;
  }
};

}  // namespace

size_t KvBlockPool::estimate_bytes(const LlamaConfig& c, const KvPoolOptions& o) {
  const PoolSizes z(c, o);
  return 2 * static_cast<size_t>(c.n_layers) * z.layer_bytes;
}

KvBlockPool::KvBlockPool(const LlamaConfig& c, const KvPoolOptions& o)
    : block_tokens_(o.block_tokens), kv_mode_(o.kv_mode) {
  const PoolSizes z(c, o);
  total_blocks_ = z.blocks;
  elem_bytes_ = z.elem;
  block_elems_ = z.block_elems;
  layer_bytes_ = z.layer_bytes;
  keys_ = AlignedBuffer(static_cast<size_t>(c.n_layers) * layer_bytes_);
  values_ = AlignedBuffer(static_cast<size_t>(c.n_layers) * layer_bytes_);
  const size_t nb = static_cast<size_t>(total_blocks_);
  refs_.assign(nb, 0);
  cached_.assign(nb, 0);
  parent_.assign(nb, -1);
  parent_gen_.assign(nb, 0);
  gen_.assign(nb, 0);
  hash_.assign(nb, 0);
  prev_.assign(nb, -1);
  next_.assign(nb, -1);
  free_.reserve(nb);
  // Block 0 on top of the stack: a fresh pool hands out 0, 1, 2, ...
  for (int32_t i = total_blocks_ - 1; i >= 0; --i) free_.push_back(i);
}

bool KvBlockPool::allocate(int32_t n, std::vector<int32_t>& out) {
  CIBENCH_CHECK(n >= 0, "cannot allocate ", n, " KV blocks");
  if (n > free_blocks()) return false;
  for (int32_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = lru_head_;  // the least recently released cached block
      evict(id);
    }
    refs_[id] = 1;
    out.push_back(id);
  }
  return true;
}

void KvBlockPool::release(const int32_t* ids, size_t n) {
  for (size_t i = 0; i < n; ++i)
    CIBENCH_CHECK(ids[i] >= 0 && ids[i] < total_blocks_, "KV block id ", ids[i],
                  " outside the pool of ", total_blocks_, " blocks");
  // Check every block has as many holders as releases before changing anything.
  for (size_t i = 0; i < n; ++i) {
    size_t times = 0;
    for (size_t j = 0; j < n; ++j) times += ids[j] == ids[i];
    if (static_cast<size_t>(refs_[ids[i]]) < times)
      throw Error(str("KV block ", ids[i], " released ", times, " time(s) but held by ", refs_[ids[i]],
                      " (double free?)"));
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (--refs_[id] > 0) continue;
    if (cached_[id])
      lru_push_back(id);
    else
      free_.push_back(id);
  }
}

// ---- prefix cache ---------------------------------------------------------------------------

uint64_t KvBlockPool::content_hash(int32_t parent, uint32_t parent_gen, const int* tokens) const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  };
  mix(static_cast<uint64_t>(static_cast<uint32_t>(parent)));
  mix(parent_gen);
  for (int t = 0; t < block_tokens_; ++t) mix(static_cast<uint64_t>(static_cast<uint32_t>(tokens[t])));
  return h;
}

bool KvBlockPool::same_content(int32_t id, int32_t parent, uint32_t parent_gen, const int* tokens) const {
  if (parent_[id] != parent || parent_gen_[id] != parent_gen) return false;
  const int* mine = tokens_.data() + static_cast<size_t>(id) * block_tokens_;
  for (int t = 0; t < block_tokens_; ++t)
    if (mine[t] != tokens[t]) return false;
  return true;
}

int32_t KvBlockPool::find_cached(int32_t parent, const int* tokens) const {
  if (parent != -1 && !is_cached(parent)) return -1;
  const uint32_t pg = parent < 0 ? 0 : gen_[parent];
  const uint64_t h = content_hash(parent, pg, tokens);
  auto [lo, hi] = index_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (same_content(it->second, parent, pg, tokens)) return it->second;
  return -1;
}

bool KvBlockPool::publish(int32_t id, int32_t parent, const int* tokens) {
  CIBENCH_CHECK(in_use(id), "KV block ", id, " published but not held");
  CIBENCH_CHECK(!cached_[id], "KV block ", id, " published twice");
  CIBENCH_CHECK(parent == -1 || is_cached(parent), "KV block ", id, " published under block ", parent,
                ", which is not cached");
  CIBENCH_CHECK(parent != id, "KV block ", id, " published as its own parent");
  if (find_cached(parent, tokens) >= 0) return false;
  if (tokens_.empty()) tokens_.assign(static_cast<size_t>(total_blocks_) * block_tokens_, 0);
  const uint32_t pg = parent < 0 ? 0 : gen_[parent];
  cached_[id] = 1;
  parent_[id] = parent;
  parent_gen_[id] = pg;
  std::copy(tokens, tokens + block_tokens_, tokens_.begin() + static_cast<std::ptrdiff_t>(id) * block_tokens_);
  hash_[id] = content_hash(parent, pg, tokens);
  index_.emplace(hash_[id], id);
  ++cached_count_;
  return true;
}

void KvBlockPool::acquire(int32_t id) {
  CIBENCH_CHECK(id >= 0 && id < total_blocks_, "KV block id ", id, " outside the pool of ", total_blocks_,
                " blocks");
  CIBENCH_CHECK(refs_[id] > 0 || cached_[id], "KV block ", id, " acquired but neither held nor cached");
  if (refs_[id] == 0) lru_remove(id);
  ++refs_[id];
}

void KvBlockPool::lru_push_back(int32_t id) {
  prev_[id] = lru_tail_;
  next_[id] = -1;
  if (lru_tail_ >= 0) next_[lru_tail_] = id;
  else lru_head_ = id;
  lru_tail_ = id;
  ++lru_size_;
}

void KvBlockPool::lru_remove(int32_t id) {
  if (prev_[id] >= 0) next_[prev_[id]] = next_[id];
  else lru_head_ = next_[id];
  if (next_[id] >= 0) prev_[next_[id]] = prev_[id];
  else lru_tail_ = prev_[id];
  prev_[id] = next_[id] = -1;
  --lru_size_;
}

void KvBlockPool::evict(int32_t id) {
  lru_remove(id);
  auto [lo, hi] = index_.equal_range(hash_[id]);
  for (auto it = lo; it != hi; ++it)
    if (it->second == id) {
      index_.erase(it);
      break;
    }
  cached_[id] = 0;
  parent_[id] = -1;
  ++gen_[id];  // entries naming this block as their parent no longer match
  --cached_count_;
  ++evictions_;
}

}  // namespace cibench
