#pragma once
// A paged KV cache shared by many sequences: a fixed token budget cut into blocks of
// block_tokens positions. A sequence holds a block table (the ids of its blocks in position
// order) and takes one more block each time it crosses a block boundary, so memory follows the
// tokens actually cached instead of max_context per slot. Running out of blocks is reported
// (allocate() returns false, LlamaBatch::step throws KvPoolExhausted), never a crash: the
// scheduler queues or preempts.
//
// Storage, for keys and for values alike: (n_layers, n_blocks, n_kv_heads, block_tokens,
// head_dim) elements, f32 or IEEE halves. One head of one block is block_tokens contiguous rows
// of head_dim, so attention streams a block's rows like the session's contiguous cache
// (KernelTable::attention_paged).
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/llama_config.h"
#include "engines/runtime/session.h"

namespace cibench {

struct KvPoolOptions {
  int64_t token_budget = 0;  // positions the pool holds over all sequences (> 0; rounded up to whole blocks)
  int block_tokens = 16;     // positions per block: a positive multiple of 8
  // KvMode::preallocated (f32) or KvMode::preallocated_f16 (IEEE halves, half the bytes).
  // KvMode::none keeps no cache and is refused.
  KvMode kv_mode = KvMode::preallocated;
};

// Thrown by LlamaBatch::step when the free blocks cannot hold the step's new positions. Nothing
// was changed: the scheduler can free or preempt a sequence, or drop items, and try again.
class KvPoolExhausted : public Error {
 public:
  KvPoolExhausted(int32_t needed_blocks, int32_t free_blocks)
      : Error(str("KV pool exhausted: the step needs ", needed_blocks, " more block(s), ",
                  free_blocks, " free")),
        needed_(needed_blocks),
        free_(free_blocks) {}
  int32_t needed_blocks() const { return needed_; }
  int32_t free_blocks() const { return free_; }

 private:
  int32_t needed_, free_;
};

class KvBlockPool {
 public:
  // Blocks that hold `tokens` positions.
  static int32_t blocks_for(int64_t tokens, int block_tokens) {
    return static_cast<int32_t>((tokens + block_tokens - 1) / block_tokens);
  }
  // Bytes the pool allocates for this config (keys + values), without allocating them.
  static size_t estimate_bytes(const LlamaConfig& c, const KvPoolOptions& o);

  // Throws Error on a bad budget, block size or KV mode.
  KvBlockPool(const LlamaConfig& c, const KvPoolOptions& o);

  int block_tokens() const { return block_tokens_; }
  int32_t total_blocks() const { return total_blocks_; }
  // Blocks allocate() can hand out: never used, or cached with no holder (evicted on demand).
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()) + lru_size_; }
  int32_t used_blocks() const { return total_blocks_ - free_blocks(); }  // held by a sequence
  int64_t token_capacity() const { return static_cast<int64_t>(total_blocks_) * block_tokens_; }
  KvMode kv_mode() const { return kv_mode_; }
  size_t element_bytes() const { return elem_bytes_; }  // 4 (f32) or 2 (IEEE half)
  size_t bytes() const { return keys_.size() + values_.size(); }

  // Takes n blocks and appends their ids to `out`, each with one holder. Never-used blocks go
  // first (the most recently released first); then cached blocks nobody holds, least recently
  // released first (an eviction: their content leaves the cache). All or nothing: returns
  // false, taking none, when fewer than n can be had.
  bool allocate(int32_t n, std::vector<int32_t>& out);
  // Drops one holder of each block. A block left without holders is free again, or, when it is
  // cached, stays cached and becomes the most recently released (evictable) one. Throws Error
  // (and changes nothing) on an id out of range or more releases than holders (a double free).
  void release(const int32_t* ids, size_t n);
  bool in_use(int32_t id) const { return id >= 0 && id < total_blocks_ && refs_[id] > 0; }
  int32_t holders(int32_t id) const { return id >= 0 && id < total_blocks_ ? refs_[id] : 0; }

  // ---- prefix cache ----
  // A full block can be published under its content: the block before it in its sequence (its
  // parent; -1 for a sequence's first block) and its block_tokens token ids. The KV of a position
  // depends only on the tokens up to it, so a sequence whose prompt starts with the same tokens
  // can hold the same blocks instead of computing them again. A published block is never written
  // (a sequence only writes positions past the blocks it shares). Evicting a block invalidates
  // the entries of its children (they name the parent's generation), so a lookup can never
  // follow a chain whose parent id was reused for other content.
  //
  // The cached block with this parent and these block_tokens tokens, or -1.
  int32_t find_cached(int32_t parent, const int* tokens) const;
  // Publishes held block `id` (full, never published). Returns false, publishing nothing, when
  // the same content is already cached under another block. Throws Error on a bad id or parent.
  bool publish(int32_t id, int32_t parent, const int* tokens);
  // One more holder of a cached or held block (a cached block nobody held stops being evictable).
  void acquire(int32_t id);
  bool is_cached(int32_t id) const { return id >= 0 && id < total_blocks_ && cached_[id]; }
  int32_t cached_blocks() const { return cached_count_; }     // published, held or not
  int32_t evictable_blocks() const { return lru_size_; }     // published, held by nobody
  int64_t evictions() const { return evictions_; }            // cached blocks handed out again

  // Elements of one block of one layer (n_kv_heads * block_tokens * head_dim) and the start of a
  // layer's keys or values (floats or uint16 halves per element_bytes()).
  size_t block_elements() const { return block_elems_; }
  uint8_t* layer(bool value, int l) {
    return (value ? values_ : keys_).data() + static_cast<size_t>(l) * layer_bytes_;
  }
  const uint8_t* layer(bool value, int l) const {
    return (value ? values_ : keys_).data() + static_cast<size_t>(l) * layer_bytes_;
  }

 private:
  uint64_t content_hash(int32_t parent, uint32_t parent_gen, const int* tokens) const;
  bool same_content(int32_t id, int32_t parent, uint32_t parent_gen, const int* tokens) const;
  void lru_push_back(int32_t id);
  void lru_remove(int32_t id);
  void evict(int32_t id);  // a cached block nobody holds leaves the cache

  int block_tokens_;
  int32_t total_blocks_;
  KvMode kv_mode_;
  size_t elem_bytes_, block_elems_, layer_bytes_;
  AlignedBuffer keys_, values_;
  std::vector<int32_t> free_;   // a stack of never-used (or evicted-and-released) ids
  std::vector<int32_t> refs_;   // per block: holders
  // Prefix cache, per block: published, its parent and the parent's generation when published,
  // its token ids, its own generation (bumped when its cached content is evicted); the LRU of
  // evictable blocks (a doubly linked list through prev/next, head = least recently released).
  std::vector<uint8_t> cached_;
  std::vector<int32_t> parent_;
  std::vector<uint32_t> parent_gen_, gen_;
  std::vector<int> tokens_;
  std::vector<uint64_t> hash_;
  std::unordered_multimap<uint64_t, int32_t> index_;
  std::vector<int32_t> prev_, next_;
  int32_t lru_head_ = -1, lru_tail_ = -1, lru_size_ = 0, cached_count_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace cibench
