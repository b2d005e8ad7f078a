#pragma once
// A decoding session over a shared LlamaModel: its own KV cache, scratch and thread pool.
// Sessions never time themselves: the harness owns the clock.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/core/observer.h"
#include "engines/models/llama.h"

namespace cibench {

enum class KvMode {
  preallocated,      // one cache sized once for the whole context, written in place
  none,              // no cache kept: every step recomputes the whole prefix (the baseline)
  preallocated_f16,  // as preallocated, stored as IEEE halves (round to nearest even): half the bytes
};
const char* kv_mode_name(KvMode m);
KvMode parse_kv_mode(const std::string& s);  // throws Error on unknown names, listing the known
const std::vector<KvMode>& all_kv_modes();
std::string kv_mode_list();  // "preallocated, none, preallocated-f16"

struct SessionOptions {
  int threads = 1;
  bool pin_threads = false;
  KvMode kv_mode = KvMode::preallocated;
  int max_context = 0;      // 0 = the model's seq_len; larger values run past the trained context
  int max_batch = 128;      // tokens per prefill chunk (scratch is sized for this)
  int isa = -1;             // -1 = active_isa(); otherwise an Isa value
  ActivationObserver* observer = nullptr;  // not owned; nullptr in timed runs
};

class LlamaSession {
 public:
  // The bytes a session with these options allocates for a model of this config (KV cache,
  // scratch, RoPE tables), without allocating them.
  static size_t estimate_bytes(const LlamaConfig& c, const SessionOptions& opts);
  LlamaSession(const LlamaModel& model, const SessionOptions& opts);
  ~LlamaSession();

  // Forgets the context (position 0).
  void reset();
  // Feeds tokens at the current position (in chunks of max_batch) and returns the logits after
  // the last one (vocab_size floats, valid until the next call). Throws if the context overflows.
  const float* prefill(const int* tokens, int n);
  // Feeds one token and returns the logits that follow it.
  const float* step(int token) { return prefill(&token, 1); }
  // Teacher forcing: feeds tokens one position at a time from the current position and writes
  // the logits after each into `logits` (n * vocab_size floats).
  void forward_all(const int* tokens, int n, float* logits);
  // Feeds tokens at the current position in one chunked forward (as prefill) and returns the
  // logits after each of them: n x vocab_size floats, valid until the next verify(). Speculative
  // decoding checks k drafted tokens with one verify() of k + 1 positions. Needs a KV cache
  // (throws for KvMode::none). The logits equal step-by-step ones bit for bit for formats with
  // int8 activations and to rounding for f32 activations (the rows go through matmul, not matvec).
  const float* verify(const int* tokens, int n);
  // Drops the positions >= pos from the context (their cached keys and values are overwritten by
  // later tokens). Throws Error if pos < 0 or pos > position().
  void rewind(int pos);

  int position() const { return pos_; }
  int context_limit() const { return max_context_; }
  const LlamaModel& model() const { return model_; }
  const SessionOptions& options() const { return opts_; }
  Isa isa() const { return isa_; }
  size_t kv_cache_bytes() const;
  // Bytes of one cached element (4, or 2 for KvMode::preallocated_f16); and the cached key (or
  // value) row of `layer` at `pos` copied to `out`: kv_dim raw elements (floats or IEEE half bit
  // patterns), kv heads in order.
  size_t kv_element_bytes() const { return kv_elem_bytes_; }
  void kv_cache_row(bool value, int layer, int pos, void* out) const;

 private:
  // want_logits: the logits after the last token into logits_; all_logits (if not null): the
  // logits after every token, n x vocab_size.
  void forward_chunk(const int* tokens, int n, int pos0, bool want_logits, float* all_logits = nullptr);
  const float* recompute(const int* tokens, int n);

  const LlamaModel& model_;
  SessionOptions opts_;
  Isa isa_;
  int max_context_;
  size_t kv_elem_bytes_ = sizeof(float);
  int pos_ = 0;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<MatmulRunner> mm_;
  std::vector<int> history_;  // tokens fed so far (used by KvMode::none)
  std::vector<float> verify_logits_;  // verify()'s rows, sized on first use
  // KV cache: (n_layers, n_kv_heads, max_context, head_dim) for keys and values, floats or IEEE
  // halves (each head's positions contiguous for attention).
  AlignedBuffer key_cache_, value_cache_;
  // RoPE rotation per position: (max_context, rot_dim / 2) each.
  std::vector<float> rope_cos_, rope_sin_;
  std::vector<float> rope_local_cos_, rope_local_sin_;  // the sliding-window layers' own RoPE (empty when none)
  // Scratch for a chunk of up to max_batch tokens.
  AlignedBuffer x_, xb_, q_, k_, v_, att_out_, hb_, hb2_, att_scores_, logits_;  // q_, att_out_: q_dim wide
};

}  // namespace cibench
