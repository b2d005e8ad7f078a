#pragma once
// Batched forward steps over many sequences of one LlamaModel: the model-runner half of
// continuous batching. A scheduler (the harness) decides who runs in each step; LlamaBatch holds
// the sequences' KV cache in a shared paged pool (kv_pool.h) and runs one forward pass over all
// the step's tokens. Like LlamaSession it never times itself: the harness owns the clock.
//
// One step carries any mix of items, one per sequence: a decode row (one token) of each running
// sequence and prefill chunks (several tokens) of sequences still reading their prompt. The rows
// of all items are stacked and every projection (Q K V, O, the feed-forward, the head) is ONE
// matrix product over the stacked rows, so the weights are streamed from memory once per step
// for all of them; attention runs per (row, query head) over that row's own sequence's blocks.
//
// Using it (error handling aside):
//
//   BatchOptions o;
//   o.threads = 2;
//   o.pool.token_budget = 8192;                 // KV positions shared by every sequence
//   LlamaBatch batch(model, o);
//
//   SeqId a = batch.add_sequence();             // empty, position 0, no blocks yet
//   SeqId b = batch.add_sequence();
//   // Step 1: a's whole prompt, b's first chunk (logits only where a token will be sampled).
//   std::vector<BatchItem> items = {{a, prompt_a, na, true}, {b, prompt_b, 64, false}};
//   batch.step(items);                          // throws KvPoolExhausted: nothing changed
//   int ta = Sampler::argmax(batch.logits(0), vocab);
//   // Step 2: a decodes, b reads the rest of its prompt.
//   items = {{a, &ta, 1, true}, {b, prompt_b + 64, nb - 64, true}};
//   batch.step(items);
//   ...
//   batch.free_sequence(a);                     // finished (or preempted): its blocks return
//
// Admission and preemption: blocks_needed(seq, n) says how many more blocks feeding n tokens
// to seq takes; pool().free_blocks() how many are free; reserve(seq, n) takes them ahead of time
// (returns false, taking none, when the pool cannot). step() takes what its items still need all
// at once before running, or throws KvPoolExhausted with nothing changed. A preempted sequence
// is freed and later re-added and prefilled again (recomputation).
//
// Numerics: each row goes through the same kernels a LlamaSession uses for a prefill chunk
// (MatmulRunner::matmul; m = 1 takes the matvec kernel as a session's decode step does) and the
// paged attention kernel is bit-identical to the session's. Formats whose matrix kernels compute
// every output with the same arithmetic whatever the number of rows (the int8-activation ones:
// w8a8, w8a8_static, w8a7, int4_gG_a8: exact int32 sums, one float expression) give logits
// bit-identical to a LlamaSession decoding the sequence alone, at every ISA level; formats with
// f32 activations (f32, bf16, int8, int4, sparse) sum in another order when m > 1 and agree to
// rounding (at the generic level they are bit-identical too: its matmul is the matvec's dot per
// row). tests/unit/test_batch.cpp checks both.
//
// Threads: a LlamaBatch is driven by one thread at a time (its own pool of `threads` workers
// parallelises each step). Sequences and the pool belong to the LlamaBatch; the model is shared
// read-only, so several LlamaBatch (or LlamaSession) objects may use one LlamaModel at once.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/models/llama.h"
#include "engines/runtime/kv_pool.h"

namespace cibench {

using SeqId = int64_t;

struct BatchOptions {
  int threads = 1;
  bool pin_threads = false;
  int isa = -1;                 // -1 = active_isa(); otherwise an Isa value
  int max_context = 0;          // positions per sequence; 0 = the model's seq_len
  int max_step_tokens = 256;    // rows one step may carry (all items' tokens); sizes the scratch
  int max_step_sequences = 64;  // items one step may carry; sizes the logits
  KvPoolOptions pool;           // token budget, block size, KV precision
  // Prefix caching: every full block a sequence fills is published in the pool under its tokens
  // (kv_pool.h), and attach_prefix() lets a new sequence hold the cached blocks its prompt starts
  // with instead of computing them. Blocks nobody holds stay cached until the pool needs them
  // (least recently released first).
  bool prefix_cache = false;
};

// What the prefix cache did since the LlamaBatch was made.
struct PrefixCacheStats {
  int64_t lookups = 0;       // attach_prefix calls
  int64_t hits = 0;          // of them, attached at least one block
  int64_t lookup_tokens = 0; // tokens offered to attach_prefix
  int64_t hit_tokens = 0;    // of them, attached (prefill positions not computed)
  int64_t published_blocks = 0;
  int64_t evictions = 0;     // cached blocks handed out again
  int32_t cached_blocks = 0; // now
};

// One sequence's share of a step: n_tokens tokens fed at the sequence's current position (1 for
// a decode row, more for a prefill chunk). With want_logits, the logits after the last of them
// are computed (LlamaBatch::logits(item index)).
struct BatchItem {
  SeqId seq = -1;
  const int* tokens = nullptr;  // n_tokens ids, read during step() only
  int n_tokens = 0;
  bool want_logits = true;
};

class LlamaBatch {
 public:
  // Bytes the constructor allocates (KV pool, scratch, logits, RoPE tables), computed without
  // allocating them.
  static size_t estimate_bytes(const LlamaConfig& c, const BatchOptions& o);
  // Throws Error on bad options (naming the option and value) or an ISA this CPU lacks.
  LlamaBatch(const LlamaModel& model, const BatchOptions& o);
  ~LlamaBatch();
  LlamaBatch(const LlamaBatch&) = delete;
  LlamaBatch& operator=(const LlamaBatch&) = delete;

  // ---- sequences ----
  // A new empty sequence (position 0, no blocks). Ids are never reused.
  SeqId add_sequence();
  // Ends a sequence and returns its blocks to the pool. Throws Error on an unknown id.
  void free_sequence(SeqId s);
  bool has_sequence(SeqId s) const { return seqs_.count(s) != 0; }
  int active_sequences() const { return static_cast<int>(seqs_.size()); }
  // Positions already fed (the next token goes to this position).
  int position(SeqId s) const;
  // The sequence's block table: block ids in position order (position p is in block p / block_tokens).
  const std::vector<int32_t>& blocks(SeqId s) const;
  // More blocks the pool must hand out before n_tokens more tokens fit in s (0 when its last
  // block has room, or blocks were reserved).
  int32_t blocks_needed(SeqId s, int n_tokens) const;
  // Takes the blocks n_tokens more tokens of s need now. All or nothing: false (nothing taken)
  // when the pool has too few free blocks.
  bool reserve(SeqId s, int n_tokens);
  // Prefix caching (BatchOptions::prefix_cache): makes the new, empty sequence s hold the
  // longest chain of cached blocks that the first n tokens start with, whole blocks only and
  // never the last token (its logits must be computed), and advances s past them. Returns the
  // positions attached (a multiple of the block size; 0 on a miss): feed tokens from there on.
  // Throws Error when prefix caching is off or s is not empty.
  int attach_prefix(SeqId s, const int* tokens, int n);
  PrefixCacheStats prefix_stats() const;

  // ---- the forward step ----
  // Feeds every item's tokens at its sequence's position in one forward pass and advances each
  // sequence by its n_tokens. A sequence appears at most once per step. Throws Error (nothing
  // changed) on an unknown or repeated sequence, n_tokens < 1, a token outside the vocabulary,
  // a sequence overflowing max_context, more than max_step_tokens rows or max_step_sequences
  // items; throws KvPoolExhausted (nothing changed) when the free blocks cannot hold the new
  // positions.
  void step(const BatchItem* items, int n_items);
  void step(const std::vector<BatchItem>& items) { step(items.data(), static_cast<int>(items.size())); }
  // After step(): the vocab_size logits following item i's last token (items with want_logits;
  // nullptr otherwise), valid until the next step.
  const float* logits(int item) const;

  // ---- occupancy ----
  const KvBlockPool& pool() const { return pool_; }
  int context_limit() const { return max_context_; }
  const LlamaModel& model() const { return model_; }
  const BatchOptions& options() const { return opts_; }
  Isa isa() const { return isa_; }

 private:
  struct Sequence {
    int pos = 0;
    std::vector<int32_t> blocks;
    // Prefix caching: the tokens fed so far (pos of them), the leading blocks already published
    // or attached, and whether publishing goes on (it stops at a block whose content another
    // block already caches: the blocks after it would name an uncached parent).
    std::vector<int> tokens;
    int published = 0;
    bool publishing = true;
  };
  void publish_full_blocks(Sequence& q);
  Sequence& seq(SeqId s);
  const Sequence& seq(SeqId s) const;
  void forward(int n_rows);

  const LlamaModel& model_;
  BatchOptions opts_;
  Isa isa_;
  int max_context_;
  KvBlockPool pool_;
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<MatmulRunner> mm_;
  SeqId next_id_ = 0;
  PrefixCacheStats prefix_;
  std::unordered_map<SeqId, Sequence> seqs_;
  // Per row of the current step: its sequence (index into step_seqs_) and position; per item:
  // the sequence, and the logits slot (-1 = none).
  std::vector<int> row_item_, row_pos_, item_logits_;
  std::vector<Sequence*> step_seqs_;
  std::vector<int> logit_rows_;  // per logits slot: the row whose hidden state feeds it
  // RoPE rotation per position: (max_context, head_dim / 2) each (as LlamaSession's).
  std::vector<float> rope_cos_, rope_sin_;
  std::vector<float> rope_local_cos_, rope_local_sin_;  // the sliding-window layers' own RoPE (empty when none)
  // Scratch for max_step_tokens rows; logits for max_step_sequences items.
  AlignedBuffer x_, xb_, q_, k_, v_, att_out_, hb_, hb2_, att_scores_, logits_;
};

}  // namespace cibench
