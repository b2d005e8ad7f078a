#include "harness/lib/sut_llama_batch.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engines/core/error.h"
#include "engines/runtime/sampler.h"

namespace cibench {

const char* batching_name(BatchingMode m) {
  switch (m) {
    case BatchingMode::none: return "none";
    case BatchingMode::static_batch: return "static";
    case BatchingMode::continuous: return "continuous";
  }
  return "?";
}

BatchingMode parse_batching(const std::string& s) {
  if (s == "none") return BatchingMode::none;
  if (s == "static") return BatchingMode::static_batch;
  if (s == "continuous") return BatchingMode::continuous;
  throw Error(str("unknown batching '", s, "' (none: one sequence per worker; static: batches formed and run to "
                  "completion; continuous: queries join and leave the running batch at every step)"));
}

const char* kv_policy_name(KvPolicy p) { return p == KvPolicy::preempt ? "preempt" : "queue"; }

KvPolicy parse_kv_policy(const std::string& s) {
  if (s == "queue") return KvPolicy::queue;
  if (s == "preempt") return KvPolicy::preempt;
  throw Error(str("unknown kv_policy '", s, "' (queue: admit only what fits the KV pool; preempt: free the "
                  "youngest sequence when the pool is full and recompute it later)"));
}

BatchOptions llama_batch_options(const LlamaConfig& c, const BatchSutOptions& o) {
  CIBENCH_CHECK(o.mode != BatchingMode::none, "LlamaBatchSut serves static or continuous batching, not none");
  CIBENCH_CHECK(o.max_batch >= 1 && o.max_batch <= 1024, "max_batch must be in [1, 1024], got ", o.max_batch);
  CIBENCH_CHECK(o.max_tokens_per_step >= 1 && o.max_tokens_per_step <= 65536,
                "max_tokens_per_step must be in [1, 65536], got ", o.max_tokens_per_step);
  CIBENCH_CHECK(o.kv_pool_tokens >= 0, "kv_pool_tokens must be >= 0 (0: max_batch x the context), got ",
                o.kv_pool_tokens);
  CIBENCH_CHECK(o.batch_timeout_ms >= 0 && o.batch_timeout_ms <= 60000,
                "batch_timeout_ms must be in [0, 60000], got ", o.batch_timeout_ms);
  BatchOptions b;
  b.threads = o.threads;
  b.pin_threads = o.pin_threads;
  b.isa = o.isa;
  b.max_step_tokens = std::max(o.max_tokens_per_step, o.max_batch);
  b.max_step_sequences = o.max_batch;
  b.pool.kv_mode = o.kv_mode;
  b.prefix_cache = o.prefix_cache;
  b.pool.token_budget = o.kv_pool_tokens > 0 ? o.kv_pool_tokens
                                             : static_cast<int64_t>(o.max_batch) * c.seq_len;
  return b;
}

struct LlamaBatchSut::Impl {
  Impl(std::shared_ptr<const LlamaModel> m, const BatchSutOptions& opts, std::shared_ptr<const PromptSource> p)
      : model(std::move(m)), o(opts), prompts(std::move(p)), batch(*model, llama_batch_options(model->config, o)) {}

  struct Seq {
    Query q;
    QueryContext* ctx = nullptr;
    std::vector<int> toks;  // prompt, then every token produced but the last
    int plen = 0, gen = 0, produced = 0, fed = 0, preempted = 0, prefix_hit = 0;
    SeqId id = -1;
    bool started = false;
    int positions() const { return plen + gen - 1; }  // KV positions the query uses in all
  };
  using SeqPtr = std::unique_ptr<Seq>;

  std::shared_ptr<const LlamaModel> model;
  BatchSutOptions o;
  std::shared_ptr<const PromptSource> prompts;
  LlamaBatch batch;
  const HarnessClock* clock = nullptr;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<SeqPtr> pending;  // issued, not yet seen by the engine (guarded by mu)
  bool stopping = false;       // guarded by mu
  std::thread engine;

  // Engine thread only (read by stats() after the thread is joined).
  std::deque<SeqPtr> waiting;  // arrival order; preempted sequences at the front
  std::vector<SeqPtr> running;  // admission order (youngest last)
  BatchSutStats st;
  int64_t evictions_at_start = 0;
  int64_t work_start = 0;  // when the engine thread's current scheduling work began

  mutable std::mutex out_mu;
  std::map<int64_t, BatchSutOutput> outs;  // guarded by out_mu

  // Step scratch.
  std::vector<BatchItem> items;
  std::vector<Seq*> item_seq;

  // Moves issued queries to `waiting`; false when stopping.
  bool take_pending(std::unique_lock<std::mutex>&) {
    if (stopping) return false;
    while (!pending.empty()) {
      waiting.push_back(std::move(pending.front()));
      pending.pop_front();
    }
    return true;
  }

  int32_t blocks_for(int64_t positions) const {
    return KvBlockPool::blocks_for(positions, batch.pool().block_tokens());
  }

  // A query the pool cannot hold even alone fails with the sizes named. True when it fits.
  bool fits_alone(Seq& s) {
    if (blocks_for(s.positions()) <= batch.pool().total_blocks()) return true;
    s.ctx->fail(str("the query needs ", s.positions(), " KV positions (", s.plen, " prompt + ", s.gen,
                    " generated - 1) but kv_pool_tokens holds ", batch.pool().token_capacity()));
    return false;
  }

  // Prefix caching: attaches the cached blocks s's tokens start with to the new sequence id.
  int attach(SeqId id, const Seq& s) {
    return o.prefix_cache ? batch.attach_prefix(id, s.toks.data(), static_cast<int>(s.toks.size())) : 0;
  }
  // An admitted query takes sequence id, whose first `hit` positions came from the prefix cache,
  // and its lookup is counted (a sequence freed again because the pool could not take it is not;
  // nor are warm-up queries, index < 0, though the blocks they fill are cached like any query's).
  void bind(Seq& s, SeqId id, int hit) {
    s.id = id;
    s.fed = hit;
    s.prefix_hit = hit;
    if (!o.prefix_cache || s.q.index < 0) return;
    ++st.prefix_lookups;
    st.prefix_hits += hit > 0;
    st.prefix_lookup_tokens += static_cast<int64_t>(s.toks.size());
    st.prefix_hit_tokens += hit;
  }

  void admit(SeqPtr s) {
    if (!s->started) {
      s->started = true;
      s->ctx->started();
      s->ctx->phase(Phase::prefill);
    }
    running.push_back(std::move(s));
  }

  // Plans the running sequences' items: decode rows first, then prefill chunks (oldest first) in
  // what is left of the token budget. Returns the prefill budget left.
  int plan_running() {
    items.clear();
    item_seq.clear();
    int decodes = 0;
    for (const auto& s : running) decodes += static_cast<int>(s->toks.size()) - s->fed == 1;
    int budget = std::max(0, o.max_tokens_per_step - decodes);
    for (const auto& s : running) {
      const int remaining = static_cast<int>(s->toks.size()) - s->fed;
      int n = remaining;
      if (remaining > 1) {
        n = std::min(remaining, budget);
        budget -= n;
      }
      if (n == 0) continue;
      items.push_back({s->id, s->toks.data() + s->fed, n, s->fed + n == static_cast<int>(s->toks.size())});
      item_seq.push_back(s.get());
    }
    return budget;
  }

  int32_t blocks_needed_now() const {
    int32_t need = 0;
    for (const BatchItem& it : items) need += batch.blocks_needed(it.seq, it.n_tokens);
    return need;
  }

  // Frees the youngest running sequence and queues it again at the front (recomputed later).
  void preempt_youngest() {
    SeqPtr v = std::move(running.back());
    running.pop_back();
    batch.free_sequence(v->id);
    v->id = -1;
    v->fed = 0;
    ++v->preempted;
    ++st.preemptions;
    waiting.push_front(std::move(v));
  }

  // Continuous: plan one step (admitting and, with preempt, preempting). False when nothing runs.
  bool plan_continuous() {
    int budget = plan_running();
    if (o.kv_policy == KvPolicy::preempt) {
      while (!running.empty() && blocks_needed_now() > batch.pool().free_blocks()) {
        preempt_youngest();
        budget = plan_running();
      }
    }
    while (static_cast<int>(running.size()) < o.max_batch && !waiting.empty() && budget > 0) {
      Seq& s = *waiting.front();
      if (!fits_alone(s)) {
        waiting.pop_front();
        continue;
      }
      const SeqId id = batch.add_sequence();
      const int hit = attach(id, s);
      const int total = static_cast<int>(s.toks.size());
      const int n = std::min(total - hit, budget);
      if (o.kv_policy == KvPolicy::queue) {
        if (!batch.reserve(id, s.positions() - hit)) {
          batch.free_sequence(id);
          break;
        }
      } else if (blocks_needed_now() + batch.blocks_needed(id, n) > batch.pool().free_blocks()) {
        batch.free_sequence(id);
        break;
      }
      bind(s, id, hit);
      budget -= n;
      items.push_back({id, s.toks.data() + hit, n, hit + n == total});
      item_seq.push_back(&s);
      admit(std::move(waiting.front()));
      waiting.pop_front();
    }
    return !items.empty();
  }

  // Runs the planned step and hands out its tokens; finished sequences leave at once.
  void run_step() {
    const int64_t t0 = clock->now_ns();
    batch.step(items);
    const int64_t t1 = clock->now_ns();
    ++st.steps;
    st.seq_steps += static_cast<int64_t>(items.size());
    st.max_seqs = std::max(st.max_seqs, static_cast<int>(items.size()));
    const double occ = static_cast<double>(batch.pool().used_blocks()) / batch.pool().total_blocks();
    st.kv_occupancy_sum += occ;
    st.kv_occupancy_max = std::max(st.kv_occupancy_max, occ);
    const int vocab = model->config.vocab_size;
    for (size_t i = 0; i < items.size(); ++i) {
      Seq& s = *item_seq[i];
      s.fed += items[i].n_tokens;
      if (!items[i].want_logits) continue;
      const int tok = Sampler::argmax(batch.logits(static_cast<int>(i)), vocab);
      ++s.produced;
      s.ctx->token();
      if (s.produced == 1) s.ctx->phase(Phase::decode);
      if (o.record_outputs) {
        std::lock_guard<std::mutex> lk(out_mu);
        BatchSutOutput& out = outs[s.q.index];
        if (s.produced == 1) {
          out.sample_index = s.q.sample_index;
          out.prompt.assign(s.toks.begin(), s.toks.begin() + s.plen);
          out.tokens.clear();
        }
        out.tokens.push_back(tok);
        out.preempted = s.preempted;
        out.prefix_hit = s.prefix_hit;
      }
      if (s.produced < s.gen) s.toks.push_back(tok);
    }
    // Leave: completed sequences free their blocks at once.
    for (size_t k = 0; k < running.size();) {
      Seq& s = *running[k];
      if (s.produced >= s.gen) {
        batch.free_sequence(s.id);
        QueryContext* ctx = s.ctx;
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        ctx->complete();
      } else {
        ++k;
      }
    }
    // The scheduler's share: planning before the forward pass, handing out tokens and retiring
    // sequences after it (the harness's token callbacks included).
    const int64_t t2 = clock->now_ns();
    st.forward_ns += t1 - t0;
    st.scheduler_ns += (t0 - work_start) + (t2 - t1);
    work_start = t2;
  }

  // A step failed: every running query fails with the reason, its blocks returned.
  void fail_running(const std::string& why) {
    for (auto& s : running) {
      if (batch.has_sequence(s->id)) batch.free_sequence(s->id);
      s->ctx->fail(why);
    }
    running.clear();
  }

  void run() {
    std::vector<int> scratch;
    for (;;) {
      const int64_t top = clock->now_ns();
      const bool idle = running.empty() && waiting.empty();
      {
        std::unique_lock<std::mutex> lk(mu);
        if (idle) cv.wait(lk, [&] { return stopping || !pending.empty(); });
        if (!take_pending(lk)) return;
      }
      work_start = idle ? clock->now_ns() : top;  // waiting for work is not the scheduler's time
      for (auto& s : waiting)
        if (s->toks.empty()) prepare(*s);
      try {
        if (o.mode == BatchingMode::continuous) {
          if (!plan_continuous()) continue;
          run_step();
        } else {
          if (!form_static_batch()) return;
          work_start = clock->now_ns();  // waiting for a batch to fill is not either
          while (!running.empty()) {
            {
              std::lock_guard<std::mutex> lk(mu);
              if (stopping) return;
            }
            plan_running();
            run_step();
          }
        }
      } catch (const std::exception& e) {
        fail_running(e.what());
      }
    }
  }

  // Static: waits until max_batch queries are waiting or batch_timeout_ms has passed since the
  // first arrived, then admits up to max_batch that the pool can reserve. False when stopping.
  bool form_static_batch() {
    if (waiting.empty()) return true;
    const int64_t deadline = waiting.front()->q.scheduled_ns + static_cast<int64_t>(o.batch_timeout_ms * 1e6);
    {
      std::unique_lock<std::mutex> lk(mu);
      for (;;) {
        if (!take_pending(lk)) return false;
        const int64_t now = clock->now_ns();
        if (static_cast<int>(waiting.size()) >= o.max_batch || now >= deadline) break;
        cv.wait_for(lk, std::chrono::nanoseconds(deadline - now), [&] { return stopping || !pending.empty(); });
      }
    }
    for (auto& s : waiting)
      if (s->toks.empty()) prepare(*s);
    while (static_cast<int>(running.size()) < o.max_batch && !waiting.empty()) {
      Seq& s = *waiting.front();
      if (!fits_alone(s)) {
        waiting.pop_front();
        continue;
      }
      const SeqId id = batch.add_sequence();
      const int hit = attach(id, s);
      if (!batch.reserve(id, s.positions() - hit)) {
        batch.free_sequence(id);
        break;
      }
      bind(s, id, hit);
      admit(std::move(waiting.front()));
      waiting.pop_front();
    }
    return true;
  }

  // Cuts the prompt and generation to the context as LlamaSut does and fills the prompt.
  void prepare(Seq& s) {
    const int limit = batch.context_limit();
    s.gen = std::max(1, std::min(s.q.gen_tokens, limit - 1));
    s.plen = std::max(1, std::min(s.q.prompt_tokens, limit - s.gen));
    prompts->fill(s.q.sample_index, s.plen, s.toks);
  }
};

LlamaBatchSut::LlamaBatchSut(std::shared_ptr<const LlamaModel> model, const BatchSutOptions& o,
                             std::shared_ptr<const PromptSource> prompts)
    : o_(o), impl_(std::make_unique<Impl>(std::move(model), o, std::move(prompts))) {}

LlamaBatchSut::~LlamaBatchSut() {
  if (impl_->engine.joinable()) stop();
}

int64_t LlamaBatchSut::kv_pool_tokens() const { return impl_->batch.pool().token_capacity(); }

SutInfo LlamaBatchSut::info() const {
  SutInfo i;
  i.description = str("llama ", impl_->model->origin, " ", impl_->model->build.describe(), ", ",
                      batching_name(o_.mode), " batching (max_batch ", o_.max_batch, ", ", o_.max_tokens_per_step,
                      " tokens per step, KV pool ", kv_pool_tokens(), " positions",
                      o_.mode == BatchingMode::continuous ? str(", ", kv_policy_name(o_.kv_policy)) : std::string(),
                      o_.prefix_cache ? ", prefix cache" : "", ")");
  i.isa_used = isa_name(impl_->batch.isa());
  i.weight_bytes = static_cast<int64_t>(impl_->model->weight_bytes());
  i.repacked_weight_bytes = static_cast<int64_t>(impl_->model->repacked_bytes());
  set_weight_conversion(*impl_->model, i);
  i.kv_cache_bytes = static_cast<int64_t>(impl_->batch.pool().bytes());
  i.pinning = o_.pin_threads ? "pool thread i -> cpu i (the engine thread's pool)" : "none";
  return i;
}

void LlamaBatchSut::start(const HarnessClock& clock) {
  CIBENCH_CHECK(!impl_->engine.joinable(), "LlamaBatchSut: started twice");
  impl_->clock = &clock;
  impl_->stopping = false;
  impl_->st = BatchSutStats{};
  impl_->st.kv_total_blocks = impl_->batch.pool().total_blocks();
  impl_->evictions_at_start = impl_->batch.prefix_stats().evictions;
  impl_->engine = std::thread([this] { impl_->run(); });
}

void LlamaBatchSut::issue_async(const Query& q, QueryContext& ctx) {
  auto s = std::make_unique<Impl::Seq>();
  s->q = q;
  s->ctx = &ctx;
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->pending.push_back(std::move(s));
  impl_->cv.notify_one();
}

void LlamaBatchSut::stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stopping = true;
    impl_->pending.clear();
    impl_->cv.notify_one();
  }
  if (impl_->engine.joinable()) impl_->engine.join();
  // Abandoned queries: their sequences go back to the pool (the contexts are not touched again).
  for (auto& s : impl_->running)
    if (impl_->batch.has_sequence(s->id)) impl_->batch.free_sequence(s->id);
  impl_->running.clear();
  impl_->waiting.clear();
}

BatchSutStats LlamaBatchSut::stats() const {
  BatchSutStats s = impl_->st;
  if (o_.prefix_cache) s.prefix_evictions = impl_->batch.prefix_stats().evictions - impl_->evictions_at_start;
  return s;
}

std::map<int64_t, BatchSutOutput> LlamaBatchSut::outputs() const {
  std::lock_guard<std::mutex> lk(impl_->out_mu);
  return impl_->outs;
}

}  // namespace cibench
