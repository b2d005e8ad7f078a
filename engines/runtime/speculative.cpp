#include "engines/runtime/speculative.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/runtime/sampler.h"

namespace cibench {

double SpecRng::uniform() {
  // xorshift64*
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return static_cast<double>((state_ * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-53;
}

void softmax_probs(const float* logits, int vocab, float temperature, float* probs) {
  CIBENCH_CHECK(temperature > 0.0f, "softmax needs a temperature > 0, got ", temperature);
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int i = 0; i < vocab; ++i) {
    probs[i] = std::exp((logits[i] - mx) / temperature);
    sum += probs[i];
  }
  for (int i = 0; i < vocab; ++i) probs[i] = static_cast<float>(probs[i] / sum);
}

int sample_from(const float* probs, int vocab, double u) {
  double total = 0;
  for (int i = 0; i < vocab; ++i) total += probs[i];
  const double target = u * total;
  double cdf = 0;
  int last = -1;
  for (int i = 0; i < vocab; ++i) {
    if (probs[i] <= 0.0f) continue;
    cdf += probs[i];
    last = i;
    if (target < cdf) return i;
  }
  CIBENCH_CHECK(last >= 0, "cannot sample from a distribution without mass");
  return last;  // u * total rounded onto the end of the sum
}

// ---- Draft model ---------------------------------------------------------------------------

namespace {
const LlamaModel& checked_draft(const LlamaModel& draft, const LlamaModel& target) {
  CIBENCH_CHECK(draft.config.vocab_size == target.config.vocab_size, "draft model ", draft.origin,
                " has a vocabulary of ", draft.config.vocab_size, " tokens, the target ", target.origin,
                " one of ", target.config.vocab_size, ": speculative decoding needs the same vocabulary");
  return draft;
}
}  // namespace

DraftModelDrafter::DraftModelDrafter(const LlamaModel& draft, const LlamaModel& target,
                                     const SessionOptions& opts)
    : draft_(checked_draft(draft, target)), session_(draft_, opts),
      probs_(static_cast<size_t>(draft.config.vocab_size)) {}

DraftModelDrafter::DraftModelDrafter(std::shared_ptr<const LlamaModel> draft, const LlamaModel& target,
                                     const SessionOptions& opts)
    : owned_(std::move(draft)), draft_(checked_draft(*owned_, target)), session_(draft_, opts),
      probs_(static_cast<size_t>(draft_.config.vocab_size)) {}

std::string DraftModelDrafter::name() const {
  return "draft-model:" + draft_.origin + "@" + draft_.build.describe();
}

void DraftModelDrafter::reset() {
  session_.reset();
  fed_.clear();
  proposed_from_ = 0;
}

void DraftModelDrafter::propose(const std::vector<int>& context, int k, float temperature, SpecRng& rng,
                                Draft& out) {
  out.tokens.clear();
  out.q.clear();
  const int V = draft_.config.vocab_size;
  const size_t len = context.size();
  CIBENCH_CHECK(len >= 1, "a draft needs a context of at least one token");
  // Positions context[0, len) then k - 1 fed drafts must fit the draft's context.
  k = static_cast<int>(std::min<int64_t>(k, static_cast<int64_t>(session_.context_limit()) - static_cast<int64_t>(len) + 1));
  if (k <= 0) return;
  // Keep the cached prefix that is still the context; the last context token is always fed again
  // when already cached (its logits are needed).
  size_t common = 0;
  while (common < fed_.size() && common < len && fed_[common] == context[common]) ++common;
  common = std::min(common, len - 1);
  session_.rewind(static_cast<int>(common));
  fed_.resize(common);
  const float* logits = session_.prefill(context.data() + common, static_cast<int>(len - common));
  fed_.insert(fed_.end(), context.begin() + static_cast<std::ptrdiff_t>(common), context.end());
  ++forwards_;
  for (int i = 0; i < k; ++i) {
    int tok;
    if (temperature == 0.0f) {
      tok = Sampler::argmax(logits, V);
    } else {
      softmax_probs(logits, V, temperature, probs_.data());
      tok = sample_from(probs_.data(), V, rng.uniform());
      out.q.insert(out.q.end(), probs_.begin(), probs_.end());
    }
    out.tokens.push_back(tok);
    if (i + 1 < k) {
      logits = session_.step(tok);
      fed_.push_back(tok);
      ++forwards_;
    }
  }
  proposed_from_ = len;
}

void DraftModelDrafter::accepted(int n) {
  // The session holds the context and the drafts but the last; keep the accepted ones.
  const size_t keep = std::min(fed_.size(), proposed_from_ + static_cast<size_t>(std::max(0, n)));
  session_.rewind(static_cast<int>(keep));
  fed_.resize(keep);
}

std::unique_ptr<DraftModelDrafter> make_self_drafter(const LlamaSource& src, const LlamaModel& target,
                                                     const SessionOptions& opts, const std::string& format) {
  LlamaBuildOptions bo;
  bo.format = format;
  auto draft = std::make_shared<const LlamaModel>(build_llama(src, bo));
  return std::make_unique<DraftModelDrafter>(std::move(draft), target, opts);
}

// ---- Prompt lookup ---------------------------------------------------------------------------

PromptLookupDrafter::PromptLookupDrafter(int min_ngram, int max_ngram)
    : min_ngram_(min_ngram), max_ngram_(max_ngram) {
  CIBENCH_CHECK(min_ngram >= 1 && max_ngram >= min_ngram, "prompt lookup n-gram sizes must satisfy 1 <= min (",
                min_ngram, ") <= max (", max_ngram, ")");
}

std::string PromptLookupDrafter::name() const {
  return "prompt-lookup:" + std::to_string(min_ngram_) + "-" + std::to_string(max_ngram_);
}

void PromptLookupDrafter::propose(const std::vector<int>& context, int k, float, SpecRng&, Draft& out) {
  out.tokens.clear();
  out.q.clear();
  const int len = static_cast<int>(context.size());
  if (k <= 0) return;
  for (int n = std::min(max_ngram_, len - 1); n >= min_ngram_; --n) {
    const int* tail = context.data() + len - n;
    for (int j = len - n - 1; j >= 0; --j) {  // the most recent earlier occurrence first
      if (!std::equal(tail, tail + n, context.data() + j)) continue;
      // The text after the match is proposed, and past the end of the context the repetition is
      // continued with the same period (len - start): a loop of two tokens drafts k tokens, not 2.
      const int start = j + n;  // <= len - 1
      for (int i = 0; i < k; ++i) {
        const int at = start + i;
        out.tokens.push_back(at < len ? context[static_cast<size_t>(at)] : out.tokens[static_cast<size_t>(at - len)]);
      }
      return;
    }
  }
}

// ---- Drafter specs ---------------------------------------------------------------------------

std::string DrafterSpec::text() const {
  switch (kind) {
    case Kind::off: return "off";
    case Kind::self: return "self:" + format;
    case Kind::draft: return "draft:" + model;
    case Kind::lookup: return str("lookup:", min_ngram, "-", max_ngram);
  }
  return "off";
}

DrafterSpec parse_drafter_spec(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error(str("drafter '", text, "': ", why,
                     " (expected off, self[:FORMAT] (the target's weights in FORMAT, default int4_g32), draft:MODEL "
                     "(a model with the target's vocabulary) or lookup[:MIN-MAX] (n-gram prompt lookup, default 1-3))"));
  };
  DrafterSpec d;
  const size_t c = text.find(':');
  const std::string kind = text.substr(0, c);
  const std::string arg = c == std::string::npos ? "" : text.substr(c + 1);
  const bool has_arg = c != std::string::npos;
  if (kind == "off" && !has_arg) return d;
  if (kind == "self") {
    d.kind = DrafterSpec::Kind::self;
    d.format = has_arg ? arg : "int4_g32";
    try {
      format_by_name(d.format);
    } catch (const Error& e) {
      throw bad(e.what());
    }
    return d;
  }
  if (kind == "draft") {
    if (arg.empty()) throw bad("draft needs a model: draft:PATH or draft:synthetic:NAME");
    d.kind = DrafterSpec::Kind::draft;
    d.model = arg;
    return d;
  }
  if (kind == "lookup") {
    d.kind = DrafterSpec::Kind::lookup;
    if (!has_arg) return d;
    int lo = 0, hi = 0, used = 0;
    if (std::sscanf(arg.c_str(), "%d-%d%n", &lo, &hi, &used) != 2 || used != static_cast<int>(arg.size()) || lo < 1 ||
        hi < lo || hi > 16)
      throw bad("lookup takes MIN-MAX n-gram sizes, 1 <= MIN <= MAX <= 16");
    d.min_ngram = lo;
    d.max_ngram = hi;
    return d;
  }
  throw bad("unknown drafter");
}

// ---- Verification ----------------------------------------------------------------------------

int verify_sampled(const float* p, const float* q, const int* drafts, int k, int vocab, SpecRng& rng,
                   int* token, std::vector<float>& residual) {
  residual.resize(static_cast<size_t>(vocab));
  for (int i = 0; i < k; ++i) {
    const float* pi = p + static_cast<size_t>(i) * vocab;
    const float* qi = q ? q + static_cast<size_t>(i) * vocab : nullptr;
    const int x = drafts[i];
    CIBENCH_CHECK(x >= 0 && x < vocab, "draft token ", x, " outside the vocabulary of ", vocab);
    const double px = pi[x];
    const double qx = qi ? qi[x] : 1.0;
    const double u = rng.uniform();
    if (u * qx < px) continue;  // accepted with probability min(1, p(x) / q(x))
    double sum = 0;
    for (int t = 0; t < vocab; ++t) {
      const float qt = qi ? qi[t] : (t == x ? 1.0f : 0.0f);
      residual[t] = std::max(0.0f, pi[t] - qt);
      sum += residual[t];
    }
    // Without residual mass p <= q everywhere, so p == q and x was accepted surely: only rounding
    // lands here, and p itself is the distribution to draw from.
    *token = sum > 0 ? sample_from(residual.data(), vocab, rng.uniform())
                     : sample_from(pi, vocab, rng.uniform());
    return i;
  }
  *token = sample_from(p + static_cast<size_t>(k) * vocab, vocab, rng.uniform());
  return k;
}

// ---- Decoder ---------------------------------------------------------------------------------

double SpeculativeStats::acceptance_rate() const {
  return drafted > 0 ? static_cast<double>(accepted) / drafted : std::numeric_limits<double>::quiet_NaN();
}

double SpeculativeStats::mean_accepted_length() const {
  return draft_steps > 0 ? 1.0 + static_cast<double>(accepted) / draft_steps
                         : std::numeric_limits<double>::quiet_NaN();
}

SpeculativeDecoder::SpeculativeDecoder(LlamaSession& target, Drafter& drafter, const SpeculativeOptions& opts)
    : target_(target), drafter_(drafter), opts_(opts), rng_(opts.seed) {
  CIBENCH_CHECK(opts.draft_tokens >= 1, "draft tokens per step must be >= 1, got ", opts.draft_tokens);
  CIBENCH_CHECK(opts.temperature >= 0.0f && std::isfinite(opts.temperature), "temperature must be >= 0, got ",
                opts.temperature);
  CIBENCH_CHECK(target.options().kv_mode != KvMode::none,
                "speculative decoding needs a target with a KV cache (KV mode 'none' keeps none)");
}

std::vector<int> SpeculativeDecoder::generate(const std::vector<int>& prompt, int n, SpeculativeObserver* observer) {
  SpeculativeObserver none;
  SpeculativeObserver& obs = observer ? *observer : none;
  CIBENCH_CHECK(!prompt.empty(), "speculative decoding needs a prompt of at least one token");
  CIBENCH_CHECK(n >= 0, "token count must be >= 0, got ", n);
  const int V = target_.model().config.vocab_size;
  const int K = opts_.draft_tokens;
  target_.reset();
  drafter_.reset();
  stats_ = SpeculativeStats{};
  stats_.drafted_at.assign(static_cast<size_t>(K), 0);
  stats_.accepted_at.assign(static_cast<size_t>(K), 0);
  const int64_t draft_forwards0 = drafter_.forwards();

  std::vector<int> context = prompt, out, feed;
  // The target holds every context token but the last, which each verification feeds first.
  obs.prefill();
  if (prompt.size() > 1) {
    target_.prefill(prompt.data(), static_cast<int>(prompt.size()) - 1);
    ++stats_.target_forwards;
  }
  while (static_cast<int>(out.size()) < n) {
    const int remaining = n - static_cast<int>(out.size());
    const int room = target_.context_limit() - target_.position() - 1;
    CIBENCH_CHECK(room >= 0, "context overflow: ", target_.context_limit(), " positions used");
    const int k = std::min({K, remaining - 1, room});
    draft_.tokens.clear();
    draft_.q.clear();
    obs.draft();
    if (k > 0) drafter_.propose(context, k, opts_.temperature, rng_, draft_);
    const int kd = static_cast<int>(draft_.tokens.size());
    CIBENCH_CHECK(kd <= k, "drafter ", drafter_.name(), " proposed ", kd, " tokens, asked for at most ", k);
    CIBENCH_CHECK(draft_.q.empty() || draft_.q.size() == static_cast<size_t>(kd) * V, "drafter ",
                  drafter_.name(), " returned ", draft_.q.size(), " draft probabilities for ", kd, " tokens of ",
                  V);

    feed.assign(1, context.back());
    feed.insert(feed.end(), draft_.tokens.begin(), draft_.tokens.end());
    const int pos0 = target_.position();
    obs.verify();
    const float* logits = target_.verify(feed.data(), kd + 1);
    ++stats_.target_forwards;
    ++stats_.verify_steps;
    if (kd > 0) ++stats_.draft_steps;
    stats_.drafted += kd;
    for (int i = 0; i < kd; ++i) ++stats_.drafted_at[i];

    int accepted = 0, token = 0;
    if (opts_.temperature == 0.0f) {
      while (accepted < kd && Sampler::argmax(logits + static_cast<size_t>(accepted) * V, V) == draft_.tokens[accepted])
        ++accepted;
      token = Sampler::argmax(logits + static_cast<size_t>(accepted) * V, V);
    } else {
      p_.resize(static_cast<size_t>(kd + 1) * V);
      for (int i = 0; i <= kd; ++i)
        softmax_probs(logits + static_cast<size_t>(i) * V, V, opts_.temperature, p_.data() + static_cast<size_t>(i) * V);
      accepted = verify_sampled(p_.data(), draft_.q.empty() ? nullptr : draft_.q.data(), draft_.tokens.data(), kd, V,
                                rng_, &token, residual_);
    }
    stats_.accepted += accepted;
    for (int i = 0; i < accepted; ++i) ++stats_.accepted_at[i];

    // Keep the last context token and the accepted drafts; the new token is fed next time.
    target_.rewind(pos0 + 1 + accepted);
    drafter_.accepted(accepted);
    for (int i = 0; i < accepted; ++i) {
      context.push_back(draft_.tokens[i]);
      out.push_back(draft_.tokens[i]);
    }
    context.push_back(token);
    out.push_back(token);
    obs.tokens(out.data() + out.size() - (accepted + 1), accepted + 1);
  }
  obs.done();
  stats_.generated = static_cast<int64_t>(out.size());
  stats_.draft_forwards = drafter_.forwards() - draft_forwards0;
  return out;
}

}  // namespace cibench
