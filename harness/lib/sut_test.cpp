// The null and sleep SUTs (for tests and the harness-overhead benchmark).
#include <chrono>
#include <map>
#include <thread>

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

std::unique_ptr<SystemUnderTest> make_test_sut(const std::string& spec) {
  if (spec == "sut:null") return std::make_unique<NullSut>();
  const std::string prefix = "sut:sleep";
  if (spec.rfind(prefix, 0) != 0)
    throw Error(str("unknown test SUT '", spec, "' (sut:null, sut:sleep?ms=N[&token_ms=..][&stall_at=I&stall_ms=M])"));
  SleepSutOptions o;
  std::string rest = spec.substr(prefix.size());
  if (!rest.empty()) {
    if (rest[0] != '?') throw Error(str("test SUT '", spec, "': expected '?' after sut:sleep"));
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
      if (v < 0) throw Error(str("test SUT '", spec, "': ", k, " must be >= 0"));
      if (k == "ms") o.ms = v;
      else if (k == "token_ms") o.token_ms = v;
      else if (k == "stall_at") o.stall_at = static_cast<int64_t>(v);
      else if (k == "stall_ms") o.stall_ms = v;
      else throw Error(str("test SUT '", spec, "': unknown parameter '", k, "' (ms, token_ms, stall_at, stall_ms)"));
    }
  }
  return std::make_unique<SleepSut>(o);
}

}  // namespace cibench
