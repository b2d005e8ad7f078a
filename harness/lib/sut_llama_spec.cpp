#include "harness/lib/sut_llama_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engines/core/error.h"

namespace cibench {

void SpecSutStats::add(const SpeculativeStats& s) {
  spec.drafted += s.drafted;
  spec.accepted += s.accepted;
  spec.verify_steps += s.verify_steps;
  spec.draft_steps += s.draft_steps;
  spec.target_forwards += s.target_forwards;
  spec.draft_forwards += s.draft_forwards;
  spec.generated += s.generated;
  if (spec.drafted_at.size() < s.drafted_at.size()) {
    spec.drafted_at.resize(s.drafted_at.size(), 0);
    spec.accepted_at.resize(s.drafted_at.size(), 0);
  }
  for (size_t i = 0; i < s.drafted_at.size(); ++i) {
    spec.drafted_at[i] += s.drafted_at[i];
    spec.accepted_at[i] += s.accepted_at[i];
  }
}

double SpecSutStats::draft_share() const {
  return total_ns > 0 ? static_cast<double>(draft_ns) / static_cast<double>(total_ns)
                      : std::numeric_limits<double>::quiet_NaN();
}

double SpecSutStats::verify_share() const {
  return total_ns > 0 ? static_cast<double>(verify_ns) / static_cast<double>(total_ns)
                      : std::numeric_limits<double>::quiet_NaN();
}

struct LlamaSpecSut::Worker {
  std::unique_ptr<LlamaSession> session;
  std::unique_ptr<Drafter> drafter;
  std::unique_ptr<SpeculativeDecoder> decoder;
  std::vector<int> prompt, tokens;
};

namespace {

// Streams a generation's tokens to the harness and splits its time on the harness's clock.
class Timing : public SpeculativeObserver {
 public:
  Timing(QueryContext& ctx, SpecSutStats& t) : ctx_(ctx), t_(t) {}
  void prefill() override {
    ctx_.phase(Phase::prefill);
    start_ = last_ = ctx_.now_ns();
    in_ = &t_.prefill_ns;
  }
  void draft() override { enter(&t_.draft_ns); }
  void verify() override { enter(&t_.verify_ns); }
  void tokens(const int*, int n) override {
    enter(nullptr);
    for (int i = 0; i < n; ++i) {
      ctx_.token();
      if (first_) {
        first_ = false;
        ctx_.phase(Phase::decode);
      }
    }
  }
  void done() override {
    enter(nullptr);
    t_.total_ns += last_ - start_;
  }

 private:
  void enter(int64_t* next) {
    const int64_t now = ctx_.now_ns();
    if (in_) *in_ += now - last_;
    last_ = now;
    in_ = next;
  }
  QueryContext& ctx_;
  SpecSutStats& t_;
  int64_t start_ = 0, last_ = 0;
  int64_t* in_ = nullptr;
  bool first_ = true;
};

}  // namespace

LlamaSpecSut::LlamaSpecSut(std::shared_ptr<const LlamaModel> target, std::shared_ptr<const LlamaModel> draft,
                           const DrafterSpec& spec, int draft_tokens, const SessionOptions& opts, int workers,
                           std::shared_ptr<const PromptSource> prompts)
    : target_(std::move(target)), draft_(std::move(draft)), spec_(spec), k_(draft_tokens), opts_(opts),
      prompts_(std::move(prompts)), kv_bytes_(static_cast<size_t>(workers), 0), isa_(static_cast<size_t>(workers), -1) {
  CIBENCH_CHECK(spec_.kind != DrafterSpec::Kind::off, "speculative SUT with drafter 'off'");
  CIBENCH_CHECK(k_ >= 1, "draft tokens per verification must be >= 1, got ", k_);
  CIBENCH_CHECK(opts_.kv_mode != KvMode::none, "speculative decoding needs a KV cache (KV mode 'none' keeps none)");
  const bool model_drafter = spec_.kind != DrafterSpec::Kind::lookup;
  CIBENCH_CHECK(model_drafter == (draft_ != nullptr), "drafter ", spec_.text(),
                model_drafter ? " needs a draft model" : " takes no draft model");
  if (draft_ && draft_->config.vocab_size != target_->config.vocab_size)
    throw Error(str("drafter ", spec_.text(), ": the draft model ", draft_->origin, " has a vocabulary of ",
                    draft_->config.vocab_size, " tokens, the target ", target_->origin, " ", target_->config.vocab_size,
                    ": speculative decoding needs the same tokenizer"));
  for (int w = 0; w < workers; ++w) workers_.push_back(std::make_unique<Worker>());
  stats_.spec.drafted_at.assign(static_cast<size_t>(k_), 0);
  stats_.spec.accepted_at.assign(static_cast<size_t>(k_), 0);
}

LlamaSpecSut::~LlamaSpecSut() = default;

SutInfo LlamaSpecSut::info() const {
  SutInfo i;
  i.description = str("llama ", target_->origin, " ", target_->build.describe(), ", speculative ", spec_.text(), " k=", k_);
  if (isa_[0] >= 0) i.isa_used = isa_name(static_cast<Isa>(isa_[0]));
  int64_t weights = static_cast<int64_t>(target_->weight_bytes());
  if (draft_) weights += static_cast<int64_t>(draft_->weight_bytes());
  i.weight_bytes = weights;
  int64_t repacked = static_cast<int64_t>(target_->repacked_bytes());
  if (draft_) repacked += static_cast<int64_t>(draft_->repacked_bytes());
  i.repacked_weight_bytes = repacked;
  set_weight_conversion(*target_, i);  // the target's: the draft's weights are not what is served
  size_t kv = 0;
  for (size_t b : kv_bytes_) kv += b;
  if (kv) i.kv_cache_bytes = static_cast<int64_t>(kv);
  i.pinning = opts_.pin_threads ? "pool thread i -> cpu i (each worker)" : "none";
  return i;
}

void LlamaSpecSut::start_worker(int w) {
  Worker& x = *workers_[static_cast<size_t>(w)];
  x.session = std::make_unique<LlamaSession>(*target_, opts_);
  size_t kv = x.session->kv_cache_bytes();
  if (draft_) {
    auto d = std::make_unique<DraftModelDrafter>(draft_, *target_, opts_);
    kv += d->session().kv_cache_bytes();
    x.drafter = std::move(d);
  } else {
    x.drafter = std::make_unique<PromptLookupDrafter>(spec_.min_ngram, spec_.max_ngram);
  }
  SpeculativeOptions so;
  so.draft_tokens = k_;
  x.decoder = std::make_unique<SpeculativeDecoder>(*x.session, *x.drafter, so);
  isa_[static_cast<size_t>(w)] = static_cast<int>(x.session->isa());
  kv_bytes_[static_cast<size_t>(w)] = kv;
}

void LlamaSpecSut::stop_worker(int w) {
  Worker& x = *workers_[static_cast<size_t>(w)];
  x.decoder.reset();
  x.drafter.reset();
  x.session.reset();
}

void LlamaSpecSut::issue(int w, const Query& q, QueryContext& ctx) {
  Worker& x = *workers_[static_cast<size_t>(w)];
  // Fit prompt + generation + the last verification's drafts into both contexts (keep at least
  // one prompt token): drafts are cut to the room left, so the generation itself needs no slack.
  int limit = x.session->context_limit();
  if (auto* d = dynamic_cast<DraftModelDrafter*>(x.drafter.get())) limit = std::min(limit, d->session().context_limit());
  const int gen = std::max(1, std::min(q.gen_tokens, limit - 1));
  const int plen = std::max(1, std::min(q.prompt_tokens, limit - gen));
  prompts_->fill(q.sample_index, plen, x.prompt);
  SpecSutStats t;
  Timing timing(ctx, t);
  x.tokens = x.decoder->generate(x.prompt, gen, &timing);
  if (q.index >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.add(x.decoder->stats());
    stats_.queries++;
    stats_.prefill_ns += t.prefill_ns;
    stats_.draft_ns += t.draft_ns;
    stats_.verify_ns += t.verify_ns;
    stats_.total_ns += t.total_ns;
  }
  ctx.complete();
}

SpecSutStats LlamaSpecSut::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

const std::vector<int>& LlamaSpecSut::last_tokens(int w) const { return workers_[static_cast<size_t>(w)]->tokens; }

}  // namespace cibench
