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
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t used_blocks() const { return total_blocks_ - free_blocks(); }
  int64_t token_capacity() const { return static_cast<int64_t>(total_blocks_) * block_tokens_; }
  KvMode kv_mode() const { return kv_mode_; }
  size_t element_bytes() const { return elem_bytes_; }  // 4 (f32) or 2 (IEEE half)
  size_t bytes() const { return keys_.size() + values_.size(); }

  // Takes n free blocks and appends their ids to `out`. All or nothing: returns false, taking
  // none, when fewer than n are free. The most recently released blocks are handed out first.
  bool allocate(int32_t n, std::vector<int32_t>& out);
  // Returns blocks to the pool. Throws Error (and returns none of them) on an id out of range
  // or one that is not allocated (a double free).
  void release(const int32_t* ids, size_t n);
  bool in_use(int32_t id) const { return id >= 0 && id < total_blocks_ && used_[id]; }

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
  int block_tokens_;
  int32_t total_blocks_;
  KvMode kv_mode_;
  size_t elem_bytes_, block_elems_, layer_bytes_;
  AlignedBuffer keys_, values_;
  std::vector<int32_t> free_;   // a stack of free ids
  std::vector<uint8_t> used_;   // per block: allocated
};

}  // namespace cibench
