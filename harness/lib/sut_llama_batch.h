#pragma once
// The Llama engine as an asynchronous, batching system under test: one engine thread owns a
// LlamaBatch (engines/runtime/batch.h) and serves every in-flight query from it. Two schedulers:
//
//   continuous: at every step, queued queries (arrival order; a preempted one first) join while
//     fewer than max_batch run; each step carries one decode row per running sequence and then
//     prefill chunks (oldest first) in the rest of max_tokens_per_step, so a long prompt is read
//     over several steps while the decodes go on; a finished sequence leaves at once and frees
//     its KV blocks. When the KV pool (kv_pool_tokens positions) is full:
//       queue:   a query is admitted only when the pool can reserve every position it will use
//                (prompt + generation), so a running sequence never runs out;
//       preempt: a query is admitted when its first chunk fits; when a step's positions do not
//                fit, the youngest running sequence is freed (a preemption) and queued again at
//                the front; when readmitted it reads its prompt and the tokens it already
//                produced again (recomputation) and goes on.
//   static: waits until max_batch queries have arrived or batch_timeout_ms has passed since the
//     first one, then runs that batch to completion (prefill chunked as above), nobody joining.
//     Each query reserves every position it will use before the batch starts.
// With prefix_cache, every admission first attaches the cached blocks the query's tokens start
// with (a shared system prompt computed once; a preempted query's own blocks when it returns)
// and feeds only the rest; the blocks it fills are published for later queries.
//
// Queries are prompts of PromptSource samples cut as LlamaSut does (prompt + generation fit the
// context) and decoding is greedy (Sampler::argmax), so each query's tokens are those a
// LlamaSession produces for the same prompt (bit-identical logits for the int8-activation
// formats; see batch.h for the others). A query that cannot fit in the pool alone fails with the
// sizes named. The SUT reads the harness's clock only to wait for a static batch to fill and to
// split its engine thread's time between forward passes and scheduling (BatchSutStats).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/runtime/batch.h"
#include "harness/lib/sut.h"
#include "harness/lib/sut_llama.h"

namespace cibench {

enum class BatchingMode { none, static_batch, continuous };
const char* batching_name(BatchingMode m);  // "none", "static", "continuous"
BatchingMode parse_batching(const std::string& s);  // throws Error listing the known

enum class KvPolicy { queue, preempt };
const char* kv_policy_name(KvPolicy p);
KvPolicy parse_kv_policy(const std::string& s);  // throws Error listing the known

struct BatchSutOptions {
  BatchingMode mode = BatchingMode::continuous;  // static_batch or continuous
  int max_batch = 8;               // sequences in flight at most
  int max_tokens_per_step = 256;   // rows one step carries (decode rows always run; prefill takes the rest)
  int64_t kv_pool_tokens = 0;      // KV positions shared by every sequence; 0 = max_batch x the context
  KvPolicy kv_policy = KvPolicy::queue;  // continuous only
  double batch_timeout_ms = 0;     // static only: longest wait for a batch to fill
  int threads = 1;
  bool pin_threads = false;
  int isa = -1;
  KvMode kv_mode = KvMode::preallocated;
  // Prefix caching: a query joining the batch holds the cached KV blocks its prompt starts with
  // (batch.h attach_prefix) and reads only the rest of its prompt.
  bool prefix_cache = false;
  bool record_outputs = false;     // keep every query's tokens (tests)
};

// The LlamaBatch options the SUT uses (throws Error on bad options, naming the option).
BatchOptions llama_batch_options(const LlamaConfig& c, const BatchSutOptions& o);

// What the scheduler did over the served queries (since start()).
struct BatchSutStats {
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t seq_steps = 0;      // sum over steps of the sequences in the step
  int max_seqs = 0;
  double kv_occupancy_sum = 0;  // sum over steps of used / total blocks after the step's allocation
  double kv_occupancy_max = 0;
  int32_t kv_total_blocks = 0;
  // Prefix caching (all zero when off), over the measured queries (warm-ups, index < 0, are
  // served and fill the cache but are not counted): admissions that looked up the cache (a preempted query
  // looks up again when readmitted), those that attached a block, the prompt tokens they carried
  // (prompt plus tokens produced before a preemption) and the tokens attached instead of
  // computed; cached blocks handed out again (evictions).
  int64_t prefix_lookups = 0, prefix_hits = 0, prefix_lookup_tokens = 0, prefix_hit_tokens = 0;
  int64_t prefix_evictions = 0;
  double prefix_hit_rate() const {
    return prefix_lookup_tokens ? static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_lookup_tokens) : 0;
  }
  // The engine thread's busy time: in LlamaBatch::step (forward passes) and around it (planning
  // the step, admissions and preemptions, handing out tokens through the harness's callbacks,
  // retiring sequences); waiting for work or for a static batch to fill is neither.
  int64_t forward_ns = 0, scheduler_ns = 0;
  double scheduler_overhead() const {
    return forward_ns ? static_cast<double>(scheduler_ns) / static_cast<double>(forward_ns) : 0;
  }
  double mean_batch() const { return steps ? static_cast<double>(seq_steps) / static_cast<double>(steps) : 0; }
  double mean_kv_occupancy() const { return steps ? kv_occupancy_sum / static_cast<double>(steps) : 0; }
};

// A served query's output (record_outputs).
struct BatchSutOutput {
  int64_t sample_index = 0;
  std::vector<int> prompt;
  std::vector<int> tokens;
  int preempted = 0;  // times this query was preempted
  int prefix_hit = 0; // prompt positions attached from the prefix cache at its (last) admission
};

class LlamaBatchSut : public AsyncSystemUnderTest {
 public:
  // Throws Error on bad options (naming the option).
  LlamaBatchSut(std::shared_ptr<const LlamaModel> model, const BatchSutOptions& o,
                std::shared_ptr<const PromptSource> prompts);
  ~LlamaBatchSut() override;
  SutInfo info() const override;
  void start(const HarnessClock& clock) override;
  void issue_async(const Query& q, QueryContext& ctx) override;
  void stop() override;
  // After stop() (or between runs): the scheduler's counts since the last start().
  BatchSutStats stats() const;
  // record_outputs: each completed query's output by Query::index (warm-up queries have index < 0).
  std::map<int64_t, BatchSutOutput> outputs() const;
  const BatchSutOptions& options() const { return o_; }
  int64_t kv_pool_tokens() const;  // the effective pool size

 private:
  struct Impl;
  BatchSutOptions o_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cibench
