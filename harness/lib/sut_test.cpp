// The null and sleep SUTs (for tests and the harness-overhead benchmark).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <cmath>

#include "engines/core/error.h"
#include "harness/lib/sut.h"

namespace cibench {

const char* phase_name(Phase p) { return p == Phase::prefill ? "prefill" : "decode"; }

SutInfo NullSut::info() const {
  SutInfo i;
  i.description = "null SUT: completes every query at once (harness overhead)";
  return i;
}

void NullSut::issue(int, const Query&, QueryContext& ctx) { ctx.complete(); }

SutInfo SleepSut::info() const {
  SutInfo i;
  i.description = str("sleep SUT: ", o_.ms, " ms per query", o_.token_ms > 0 ? str(" + ", o_.token_ms, " ms per token") : "",
                      o_.stall_at >= 0 ? str(", query ", o_.stall_at, " stalls ", o_.stall_ms, " ms") : "");
  return i;
}

void SleepSut::issue(int, const Query& q, QueryContext& ctx) {
  const auto ms = [](double x) { return std::chrono::nanoseconds(static_cast<int64_t>(x * 1e6)); };
  ctx.phase(Phase::prefill);
  std::this_thread::sleep_for(ms(q.index == o_.stall_at ? o_.stall_ms : o_.ms));
  if (o_.token_ms > 0) {
    ctx.phase(Phase::decode);
    for (int t = 0; t < q.gen_tokens; ++t) {
      if (t > 0) std::this_thread::sleep_for(ms(o_.token_ms));
      ctx.token();
    }
  }
  ctx.complete();
}

void AsyncSystemUnderTest::issue(int, const Query&, QueryContext&) {
  throw Error("an asynchronous SUT is served through issue_async() by the load generator (run_load)");
}

// ---- sut:batch-sleep ------------------------------------------------------------------------

struct BatchSleepSut::Impl {
  BatchSleepSutOptions o;
  const HarnessClock* clock = nullptr;
  struct Item {
    Query q;
    QueryContext* ctx = nullptr;
    int tokens = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> pending;  // issued, not admitted (guarded by mu)
  bool stopping = false;     // guarded by mu
  std::thread engine;

  int64_t step_ns() const { return static_cast<int64_t>(o.step_ms * 1e6); }

  // The engine thread: steps back to back while it has work, on the schedule's grid.
  void run() {
    std::vector<Item> batch;
    size_t admitted_from = 0;  // batch[admitted_from..] joined at this step
    int64_t t = 0;             // the current step's start (harness ns)
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu);
        if (batch.empty() && pending.empty()) {
          cv.wait(lk, [&] { return stopping || !pending.empty(); });
          if (stopping) return;
          t = pending.front().q.scheduled_ns;  // woken from idle: the grid restarts at the arrival
        }
        if (stopping) return;
        // The batch emptied while a query waited: the next step starts when both are ready. (The
        // last step's end is never ahead of the clock, having been slept to, unless the harness
        // restarted its clock after the warm-up: then that end belongs to the earlier origin.)
        if (batch.empty()) t = std::max(std::min(t, clock->now_ns()), pending.front().q.scheduled_ns);
        admitted_from = batch.size();
        while (static_cast<int>(batch.size()) < o.max_batch && !pending.empty() &&
               pending.front().q.scheduled_ns <= t) {
          batch.push_back(pending.front());
          pending.pop_front();
        }
      }
      for (size_t k = admitted_from; k < batch.size(); ++k) batch[k].ctx->started();
      clock->sleep_until(t + step_ns());
      t += step_ns();
      for (Item& it : batch) {
        if (it.q.gen_tokens > 0) it.ctx->token();
        if (++it.tokens >= std::max(1, it.q.gen_tokens)) {
          it.ctx->complete();
          it.ctx = nullptr;  // the harness may reuse the context now
        }
      }
      batch.erase(std::remove_if(batch.begin(), batch.end(), [](const Item& it) { return it.ctx == nullptr; }),
                  batch.end());
    }
  }
};

BatchSleepSut::BatchSleepSut(const BatchSleepSutOptions& o) : impl_(std::make_unique<Impl>()) {
  CIBENCH_CHECK(o.step_ms > 0, "sut:batch-sleep: step_ms must be > 0, got ", o.step_ms);
  CIBENCH_CHECK(o.max_batch >= 1, "sut:batch-sleep: max_batch must be >= 1, got ", o.max_batch);
  impl_->o = o;
}

BatchSleepSut::~BatchSleepSut() {
  if (impl_->engine.joinable()) stop();
}

SutInfo BatchSleepSut::info() const {
  SutInfo i;
  i.description = str("batch-sleep SUT (asynchronous): one engine thread, steps of ", impl_->o.step_ms,
                      " ms giving each of up to ", impl_->o.max_batch, " queries one token");
  return i;
}

void BatchSleepSut::start(const HarnessClock& clock) {
  CIBENCH_CHECK(!impl_->engine.joinable(), "sut:batch-sleep: started twice");
  impl_->clock = &clock;
  impl_->stopping = false;
  impl_->engine = std::thread([this] { impl_->run(); });
}

void BatchSleepSut::issue_async(const Query& q, QueryContext& ctx) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->pending.push_back({q, &ctx, 0});
  impl_->cv.notify_one();
}

void BatchSleepSut::stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stopping = true;
    impl_->pending.clear();
    impl_->cv.notify_one();
  }
  if (impl_->engine.joinable()) impl_->engine.join();
}

namespace {

// "k=v&k=v" after '?' (nothing after the prefix is allowed too) -> numbers, >= 0.
std::map<std::string, double> parse_params(const std::string& spec, const std::string& prefix,
                                           const std::vector<std::string>& known) {
  std::map<std::string, double> out;
  std::string rest = spec.substr(prefix.size());
  if (rest.empty()) return out;
  if (rest[0] != '?') throw Error(str("test SUT '", spec, "': expected '?' after ", prefix));
  rest = rest.substr(1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t amp = rest.find('&', pos);
    if (amp == std::string::npos) amp = rest.size();
    const std::string kv = rest.substr(pos, amp - pos);
    pos = amp + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw Error(str("test SUT '", spec, "': '", kv, "' is not key=value"));
    const std::string k = kv.substr(0, eq);
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(kv.substr(eq + 1), &used);
      if (used != kv.size() - eq - 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error(str("test SUT '", spec, "': '", kv.substr(eq + 1), "' is not a number"));
    }
    if (!(v >= 0) || !std::isfinite(v)) throw Error(str("test SUT '", spec, "': ", k, " must be >= 0"));
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string names;
      for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
      throw Error(str("test SUT '", spec, "': unknown parameter '", k, "' (", names, ")"));
    }
    out[k] = v;
  }
  return out;
}

}  // namespace

std::unique_ptr<SystemUnderTest> make_test_sut(const std::string& spec) {
  if (spec == "sut:null") return std::make_unique<NullSut>();
  const std::string batch_prefix = "sut:batch-sleep";
  if (spec.rfind(batch_prefix, 0) == 0) {
    const auto p = parse_params(spec, batch_prefix, {"step_ms", "max_batch"});
    BatchSleepSutOptions o;
    if (p.count("step_ms")) o.step_ms = p.at("step_ms");
    if (p.count("max_batch")) {
      const double mb = p.at("max_batch");
      if (mb < 1 || mb > 1e6 || mb != std::floor(mb))
        throw Error(str("test SUT '", spec, "': max_batch must be an integer in [1, 1000000], got ", mb));
      o.max_batch = static_cast<int>(mb);
    }
    if (!(o.step_ms > 0) || o.step_ms > 60000)
      throw Error(str("test SUT '", spec, "': step_ms must be in (0, 60000], got ", o.step_ms));
    return std::make_unique<BatchSleepSut>(o);
  }
  const std::string prefix = "sut:sleep";
  if (spec.rfind(prefix, 0) != 0)
    throw Error(str("unknown test SUT '", spec,
                    "' (sut:null, sut:sleep?ms=N[&token_ms=..][&stall_at=I&stall_ms=M], sut:batch-sleep?step_ms=N[&max_batch=B])"));
  SleepSutOptions o;
  const auto p = parse_params(spec, prefix, {"ms", "token_ms", "stall_at", "stall_ms"});
  if (p.count("ms")) o.ms = p.at("ms");
  if (p.count("token_ms")) o.token_ms = p.at("token_ms");
  if (p.count("stall_at")) {
    const double at = p.at("stall_at");
    if (at > 1e15) throw Error(str("test SUT '", spec, "': stall_at must be at most 1e15, got ", at));
    o.stall_at = static_cast<int64_t>(at);
  }
  if (p.count("stall_ms")) o.stall_ms = p.at("stall_ms");
  return std::make_unique<SleepSut>(o);
}

}  // namespace cibench
