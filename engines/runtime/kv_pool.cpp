#include "engines/runtime/kv_pool.h"

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
  used_.assign(static_cast<size_t>(total_blocks_), 0);
  free_.reserve(static_cast<size_t>(total_blocks_));
  // Block 0 on top of the stack: a fresh pool hands out 0, 1, 2, ...
  for (int32_t i = total_blocks_ - 1; i >= 0; --i) free_.push_back(i);
}

bool KvBlockPool::allocate(int32_t n, std::vector<int32_t>& out) {
  CIBENCH_CHECK(n >= 0, "cannot allocate ", n, " KV blocks");
  if (n > free_blocks()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.back();
    free_.pop_back();
    used_[id] = 1;
    out.push_back(id);
  }
  return true;
}

void KvBlockPool::release(const int32_t* ids, size_t n) {
  for (size_t i = 0; i < n; ++i)
    CIBENCH_CHECK(ids[i] >= 0 && ids[i] < total_blocks_, "KV block id ", ids[i],
                  " outside the pool of ", total_blocks_, " blocks");
  for (size_t i = 0; i < n; ++i) {
    if (!used_[ids[i]]) {
      for (size_t j = 0; j < i; ++j) used_[ids[j]] = 1;  // undo: nothing is released
      throw Error(str("KV block ", ids[i], " released but not allocated (double free?)"));
    }
    used_[ids[i]] = 0;
  }
  free_.insert(free_.end(), ids, ids + n);
}

}  // namespace cibench
