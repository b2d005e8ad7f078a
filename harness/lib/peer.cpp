#include "harness/lib/peer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>

extern char** environ;

namespace cibench {

std::string peer_ggml_type(const std::string& f) {
  if (f == "f32") return "F32";
  if (f == "bf16") return "BF16";
  if (f == "int8_g32_a8" || f == "int8" || f == "w8a8" || f == "w8a8_static" || f == "w8a7") return "Q8_0";
  if (f.rfind("int4_g", 0) == 0 && f.find("asym") == std::string::npos) return "Q4_0";
  throw Error(str("format '", f, "' has no llama.cpp counterpart (paired: f32 ~ F32, bf16 ~ BF16, int8_g32_a8 "
                  "(like for like)/int8/w8a8/w8a7 ~ Q8_0, int4_gG[_a8] ~ Q4_0); leave it out of --formats when running --peer"));
}

namespace {

const nlohmann::json& need(const nlohmann::json& o, const char* key, const std::string& origin) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) throw PeerError(str(origin, ": its JSON has no '", key, "' in a test record"));
  return *it;
}

double need_number(const nlohmann::json& o, const char* key, const std::string& origin) {
  const nlohmann::json& v = need(o, key, origin);
  if (!v.is_number()) throw PeerError(str(origin, ": '", key, "' is not a number in its JSON"));
  return v.get<double>();
}

}  // namespace

LlamaBenchSample parse_llama_bench_json(const std::string& text, const std::string& origin, int prompt, int decode) {
  // llama-bench may print log lines before the JSON on standard output: start at the first '['.
  const size_t start = text.find('[');
  if (start == std::string::npos)
    throw PeerError(str(origin, ": no JSON array in its output (first bytes: '", text.substr(0, 80), "')"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.substr(start));
  } catch (const nlohmann::json::exception& e) {
    throw PeerError(str(origin, ": its output is not valid JSON (", e.what(), ")"));
  }
  if (!j.is_array() || j.empty()) throw PeerError(str(origin, ": its JSON is not a non-empty array of tests"));
  LlamaBenchSample s;
  bool have_pp = prompt == 0, have_tg = decode == 0, first = true;
  for (const nlohmann::json& t : j) {
    if (!t.is_object()) throw PeerError(str(origin, ": a test record in its JSON is not an object"));
    const double np = need_number(t, "n_prompt", origin), ng = need_number(t, "n_gen", origin);
    const double ts = need_number(t, "avg_ts", origin);
    if (!(ts > 0) || !std::isfinite(ts))
      throw PeerError(str(origin, ": avg_ts = ", ts, " for the test n_prompt ", np, ", n_gen ", ng));
    if (prompt > 0 && np == prompt && ng == 0) {
      s.prefill_tps = ts;
      have_pp = true;
    } else if (decode > 0 && np == 0 && ng == decode) {
      s.decode_tps = ts;
      have_tg = true;
    } else {
      continue;
    }
    if (first) {
      first = false;
      auto text_of = [&](const char* k) {
        auto it = t.find(k);
        return it != t.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      s.build_commit = text_of("build_commit");
      if (t.contains("build_number") && t["build_number"].is_number_integer()) s.build_number = t["build_number"];
      s.cpu_info = text_of("cpu_info");
      s.backends = text_of("backends");
      s.model_type = text_of("model_type");
      if (t.contains("model_size") && t["model_size"].is_number()) s.model_size = t["model_size"].get<int64_t>();
      for (const char* k : {"n_threads", "n_batch", "n_ubatch", "type_k", "type_v", "flash_attn", "use_mmap",
                            "cpu_mask", "cpu_strict", "poll", "n_gpu_layers", "embeddings"})
        if (t.contains(k)) s.flags[k] = t[k];
    }
  }
  if (!have_pp) throw PeerError(str(origin, ": its JSON has no prefill test (n_prompt ", prompt, ", n_gen 0)"));
  if (!have_tg) throw PeerError(str(origin, ": its JSON has no decode test (n_prompt 0, n_gen ", decode, ")"));
  return s;
}

std::vector<std::string> llama_bench_argv(const LlamaBenchOptions& o, const std::string& gguf, int threads,
                                          int prompt, int decode, const std::string& cache_type) {
  std::vector<std::string> argv = {o.binary, "-m",  gguf, "-p",   std::to_string(prompt), "-n", std::to_string(decode),
                                   "-t",     std::to_string(threads), "-r", "1", "-mmp", "0", "-ctk", cache_type,
                                   "-ctv",   cache_type, "-o", "json"};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  return argv;
}

std::string run_captured(const std::vector<std::string>& argv) {
  CIBENCH_CHECK(!argv.empty(), "run_captured: empty command line");
  const std::string& bin = argv[0];
  if (::access(bin.c_str(), X_OK) != 0)
    throw PeerError(str(bin, ": not an executable file (", std::strerror(errno), ")"));
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw PeerError(str(bin, ": pipe: ", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw PeerError(str(bin, ": pipe: ", std::strerror(e)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, bin.c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw PeerError(str(bin, ": could not start (", std::strerror(rc), ")"));
  }
  // Read both pipes until both close, so a chatty standard error cannot block the child.
  std::string stdout_text, stderr_text;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? stdout_text : stderr_text).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return stdout_text;
  // The last lines of standard error say why.
  std::string tail = stderr_text.size() > 600 ? stderr_text.substr(stderr_text.size() - 600) : stderr_text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  std::string how = WIFEXITED(status) ? str("exited with status ", WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? str("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")")
                                          : std::string("ended abnormally");
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
  throw PeerError(str(bin, " ", how, " (command: ", line, ")", tail.empty() ? "" : "; its standard error ends: ", tail));
}

LlamaBenchSample run_llama_bench(const LlamaBenchOptions& o, const std::string& gguf, int threads, int prompt,
                                 int decode, const std::string& cache_type) {
  const auto argv = llama_bench_argv(o, gguf, threads, prompt, decode, cache_type);
  return parse_llama_bench_json(run_captured(argv), o.binary, prompt, decode);
}

namespace {
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

RatioEstimate paired_ratio(const std::vector<double>& ours, const std::vector<double>& peer, int resamples,
                           uint64_t seed) {
  CIBENCH_CHECK(!ours.empty() && ours.size() == peer.size(), "paired_ratio: ", ours.size(), " and ", peer.size(),
                " repetitions (need the same non-zero count)");
  for (size_t i = 0; i < ours.size(); ++i)
    CIBENCH_CHECK(ours[i] > 0 && peer[i] > 0, "paired_ratio: repetition ", i + 1, " has a rate <= 0");
  RatioEstimate r;
  r.ratio = median_of(ours) / median_of(peer);
  r.resamples = resamples;
  if (resamples <= 0 || ours.size() == 1) {
    r.lo = r.hi = r.ratio;
    r.resamples = 0;
    return r;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, ours.size() - 1);
  std::vector<double> boot(static_cast<size_t>(resamples)), a(ours.size()), b(ours.size());
  for (double& x : boot) {
    for (size_t i = 0; i < ours.size(); ++i) {
      const size_t k = pick(rng);
      a[i] = ours[k];
      b[i] = peer[k];
    }
    x = median_of(a) / median_of(b);
  }
  std::sort(boot.begin(), boot.end());
  // Percentile interval: the 2.5 % and 97.5 % order statistics (nearest rank).
  auto at = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * boot.size()));
    return boot[std::min(boot.size() - 1, k == 0 ? 0 : k - 1)];
  };
  r.lo = at(0.025);
  r.hi = at(0.975);
  return r;
}

}  // namespace cibench
