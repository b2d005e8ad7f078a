// cibench bench --peer llama-bench=PATH: cibench and llama.cpp side by side on the same machine,
// the same model and weights, the same shape, threads and KV cache type, alternating repetition
// by repetition (cibench, then one llama-bench invocation with -r 1), with the ratio per pair and
// a bootstrap interval of it. Both engines are measured as llama-bench defines its tests: prefill
// of P tokens into an empty cache, and D single-token decode steps from an empty cache (no
// sampling: llama-bench feeds random tokens, cibench a fixed pseudo-random sequence).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <memory>
#include <random>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama.h"
#include "engines/runtime/session.h"
#include "harness/cli/bandwidth.h"
#include "harness/cli/bench_common.h"
#include "harness/lib/build_info.h"
#include "harness/lib/memory_check.h"
#include "harness/lib/peer.h"
#include "harness/lib/run_record.h"
#include "harness/lib/scenario.h"

namespace cibench::cli {
namespace cmd_bench {

namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The peer's file: all tensor bytes, and the bytes it streams per decoded token: every tensor
// except the token embedding (read one row per token) when the file has a separate output matrix.
struct PeerFileBytes {
  int64_t weights = 0, streamed_per_token = 0;
};
PeerFileBytes peer_file_bytes(const std::string& gguf) {
  GgufFile g(gguf);
  int64_t all = 0, embd = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    all += static_cast<int64_t>(t.nbytes);
    if (t.name == "token_embd.weight") embd = static_cast<int64_t>(t.nbytes);
  }
  return {all, g.find_tensor("output.weight") ? all - embd : all};
}

// The peer binary's identity beyond what it reports (a build from a source snapshot reports
// "commit unknown, build 0"): FNV-1a 64 of its bytes.
std::string binary_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return "fnv1a64:" + fnv1a_hex(os.str());
}

std::string fixed(double x, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

std::string ratio_text(const RatioEstimate& r) {
  return fixed(r.ratio, 2) + "x [" + fixed(r.lo, 2) + ", " + fixed(r.hi, 2) + "]";
}

}  // namespace

int run_peer_bench(const BenchArgs& a_in) {
  using clock = std::chrono::steady_clock;
  BenchArgs a = a_in;
  CIBENCH_CHECK(a.reps >= 1, "--reps must be >= 1");
  CIBENCH_CHECK(a.prompt_tokens >= 1 && a.decode_tokens >= 1, "--prompt and --decode must be >= 1");
  const std::string prefix = "llama-bench=";
  if (a.peer.rfind(prefix, 0) != 0 || a.peer.size() == prefix.size())
    throw Error(str("--peer '", a.peer, "': expected llama-bench=PATH (the llama-bench binary of a llama.cpp build)"));
  LlamaBenchOptions peer;
  peer.binary = a.peer.substr(prefix.size());
  peer.extra_args = a.peer_args;
  if (!fs::exists(peer.binary)) throw Error(str("--peer: ", peer.binary, ": no such file"));

  // The cache type both engines use: llama.cpp's default (f16) unless --kv says otherwise.
  if (!a.kv_given) a.engine.kv_mode = "preallocated-f16";
  const KvMode kv = parse_kv_mode(a.engine.kv_mode);
  std::string cache_type;
  if (kv == KvMode::preallocated_f16) cache_type = "f16";
  else if (kv == KvMode::preallocated) cache_type = "f32";
  else throw Error(str("--kv ", a.engine.kv_mode, ": llama.cpp always keeps a KV cache; compare with "
                       "preallocated-f16 (its default) or preallocated (f32)"));

  std::map<std::string, std::string> given_gguf;  // ggml type -> path
  for (const std::string& g : a.peer_gguf) {
    const size_t eq = g.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == g.size())
      throw Error(str("--peer-gguf '", g, "': expected TYPE=PATH (TYPE one of F32, BF16, Q8_0, Q4_0)"));
    const std::string t = upper(g.substr(0, eq)), path = g.substr(eq + 1);
    if (t != "F32" && t != "BF16" && t != "Q8_0" && t != "Q4_0")
      throw Error(str("--peer-gguf '", g, "': type '", g.substr(0, eq), "' is not one of F32, BF16, Q8_0, Q4_0"));
    if (!fs::exists(path)) throw Error(str("--peer-gguf '", g, "': ", path, ": no such file"));
    given_gguf[t] = path;
  }
  for (const std::string& f : a.formats) peer_ggml_type(f);  // every format has a counterpart, before anything runs
  std::string dir = a.peer_dir;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = (fs::path(tmp && *tmp ? tmp : "/tmp") / "cibench-peer").string();
  }

  if (a.models.empty()) a.models = {"synthetic:tinystories-110m"};
  a.engine.build_options();  // applies --isa
  const Isa isa = active_isa();
  warn_if_not_release();
  std::unique_ptr<ReadBandwidthProbe> probe;
  if (!a.no_roofline) probe = std::make_unique<ReadBandwidthProbe>(a.probe_mib);

  nlohmann::json rows = nlohmann::json::array();
  const std::string peer_hash = binary_hash(peer.binary);
  LlamaBenchSample identity;  // the peer as it reported itself (first invocation)
  bool have_identity = false;
  std::vector<std::string> command_example;
  bool header_printed = false;
  for (const std::string& spec : a.models) {
    LlamaSource src = open_llama_source(spec);
    std::unique_ptr<CommandRun> stored;
    if (!a.db.empty()) stored = std::make_unique<CommandRun>(a.db, "bench", invocation(), spec, model_fields(src));
    try {
      for (const std::string& fmt : a.formats) {
        const std::string gtype = peer_ggml_type(fmt);
        // The peer's weights: given, or exported from the same source (so both engines read the same
        // weights, each in its own layout), kept under a name that changes when the model does.
        std::string gguf;
        if (auto it = given_gguf.find(gtype); it != given_gguf.end()) {
          gguf = it->second;
        } else {
          fs::create_directories(dir);
          std::string stem = spec;
          for (char& c : stem)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
          if (stem.size() > 60) stem = stem.substr(stem.size() - 60);
          std::string hash = src.content_hash;
          for (char& c : hash)
            if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
          gguf = (fs::path(dir) / (stem + "-" + hash + "-" + lower(gtype) + ".gguf")).string();
          if (!fs::exists(gguf)) {
            std::string vocab_origin;
            const VocabPieces vocab = vocab_for_export(src, "", &vocab_origin);
            std::fprintf(stderr, "cibench: writing the peer's weights: %s (%s, vocabulary: %s)\n", gguf.c_str(),
                         gtype.c_str(), vocab_origin.c_str());
            write_llama_gguf(src, vocab, parse_gguf_weight_type(lower(gtype)), spec, gguf);
          }
        }
        const PeerFileBytes peer_bytes = peer_file_bytes(gguf);

        EngineOptions eo = a.engine;
        eo.format = fmt;
        const int max_ctx = std::max(a.prompt_tokens, a.decode_tokens) + 1;
        {
          SessionOptions so = eo.session_options(*std::max_element(a.threads.begin(), a.threads.end()));
          so.max_context = std::max(so.max_context, max_ctx);
          so.max_batch = std::max(so.max_batch, a.prompt_tokens);
          require_llama_memory(str("cibench bench --peer on ", spec, " in ", fmt), src.config, eo.build_options(), so);
        }
        LlamaModel model = build_llama(src, eo.build_options());
        const int V = model.config.vocab_size;
        std::mt19937 rng(static_cast<uint32_t>(a.seed));
        std::uniform_int_distribution<int> tokd(3, V - 1);
        std::vector<int> prompt(a.prompt_tokens), gen(a.decode_tokens);
        for (int& t : prompt) t = tokd(rng);
        gen[0] = model.config.bos_id >= 0 && model.config.bos_id < V ? model.config.bos_id : 1;
        for (size_t i = 1; i < gen.size(); ++i) gen[i] = tokd(rng);
        const double bytes_per_token = static_cast<double>(model.streamed_bytes_per_token());

        for (int threads : a.threads) {
          SessionOptions so = eo.session_options(threads);
          so.max_context = std::max(so.max_context, max_ctx);
          so.max_batch = std::max(so.max_batch, a.prompt_tokens);
          LlamaSession s(model, so);
          std::vector<double> pp, tg, peer_pp, peer_tg, bw_reps, frac, peer_frac;
          nlohmann::json samples = nlohmann::json::array();
          for (int r = -1; r < a.reps; ++r) {  // r = -1: cibench's warm-up (llama-bench warms up itself)
            const double bw = (probe && r >= 0) ? probe->measure(threads) : 0.0;
            s.reset();
            auto t0 = clock::now();
            s.prefill(prompt.data(), a.prompt_tokens);
            auto t1 = clock::now();
            s.reset();
            auto t2 = clock::now();
            for (int i = 0; i < a.decode_tokens; ++i) s.step(gen[i]);
            auto t3 = clock::now();
            if (r < 0) continue;
            pp.push_back(a.prompt_tokens / std::chrono::duration<double>(t1 - t0).count());
            tg.push_back(a.decode_tokens / std::chrono::duration<double>(t3 - t2).count());
            const LlamaBenchSample ps =
                run_llama_bench(peer, gguf, threads, a.prompt_tokens, a.decode_tokens, cache_type);
            if (!have_identity) {
              identity = ps;
              have_identity = true;
              command_example = llama_bench_argv(peer, gguf, threads, a.prompt_tokens, a.decode_tokens, cache_type);
            }
            peer_pp.push_back(ps.prefill_tps);
            peer_tg.push_back(ps.decode_tps);
            nlohmann::json smp = {{"rep", r + 1},
                                  {"cibench_prefill_tokens_per_s", pp.back()},
                                  {"cibench_decode_tokens_per_s", tg.back()},
                                  {"peer_prefill_tokens_per_s", ps.prefill_tps},
                                  {"peer_decode_tokens_per_s", ps.decode_tps}};
            if (probe) {
              smp["read_bandwidth_gb_per_s"] = bw;
              bw_reps.push_back(bw);
              frac.push_back(tg.back() / (bw * 1e9 / bytes_per_token));
              peer_frac.push_back(ps.decode_tps / (bw * 1e9 / static_cast<double>(peer_bytes.streamed_per_token)));
            }
            samples.push_back(smp);
          }
          const RatioEstimate rp = paired_ratio(pp, peer_pp), rt = paired_ratio(tg, peer_tg);
          const Stats p = stats(pp), d = stats(tg), lp = stats(peer_pp), ld = stats(peer_tg);
          nlohmann::json row;
          row["model"] = model.origin;
          row["format"] = model.build.describe();
          row["isa"] = isa_name(isa);
          row["threads"] = threads;
          row["kv_mode"] = kv_mode_name(so.kv_mode);
          row["prompt_tokens"] = a.prompt_tokens;
          row["decode_tokens"] = a.decode_tokens;
          row["reps"] = a.reps;
          row["prefill_tokens_per_s_median"] = p.median;
          row["decode_tokens_per_s_median"] = d.median;
          row["weight_bytes"] = model.weight_bytes();
          row["repacked_weight_bytes"] = model.repacked_bytes();
          row["peer_gguf"] = gguf;
          row["peer_type"] = gtype;
          row["peer_weight_bytes"] = peer_bytes.weights;
          row["streamed_bytes_per_token"] = model.streamed_bytes_per_token();
          row["peer_streamed_bytes_per_token"] = peer_bytes.streamed_per_token;
          row["peer_prefill_tokens_per_s_median"] = lp.median;
          row["peer_decode_tokens_per_s_median"] = ld.median;
          row["prefill_ratio"] = {{"ratio", rp.ratio}, {"lo", rp.lo}, {"hi", rp.hi}, {"resamples", rp.resamples}};
          row["decode_ratio"] = {{"ratio", rt.ratio}, {"lo", rt.lo}, {"hi", rt.hi}, {"resamples", rt.resamples}};
          if (probe) {
            row["read_bandwidth_gb_per_s"] = stats(bw_reps).median;
            row["decode_fraction_of_roofline"] = stats(frac).median;
            row["peer_decode_fraction_of_roofline"] = stats(peer_frac).median;
          }
          row["samples"] = samples;
          rows.push_back(row);
          if (stored) {
            Fields f = bench_row_fields(a, fmt, threads, so.kv_mode, isa, p, d, model);
            const Fields peer_fields{
                     {"peer_engine", std::string("llama.cpp")},
                     {"peer_version", str("build ", identity.build_number, ", commit ", identity.build_commit, ", binary ", peer_hash)},
                     {"peer_binary", fs::absolute(peer.binary).string()},
                     {"peer_model", gguf},
                     {"peer_type", gtype},
                     {"peer_weight_bytes", peer_bytes.weights},
                     {"peer_flags", identity.flags.dump()},
                     {"peer_command", shell_command_line(llama_bench_argv(peer, gguf, threads, a.prompt_tokens,
                                                                          a.decode_tokens, cache_type))},
                     {"peer_prefill_tokens_per_s", lp.median},
                     {"peer_prefill_tokens_per_s_sd", a.reps > 1 ? SqlValue(lp.stddev) : sql_null()},
                     {"peer_decode_tokens_per_s", ld.median},
                     {"peer_decode_tokens_per_s_sd", a.reps > 1 ? SqlValue(ld.stddev) : sql_null()},
                     {"peer_prefill_ratio", rp.ratio},
                     {"peer_prefill_ratio_lo", rp.lo},
                     {"peer_prefill_ratio_hi", rp.hi},
                     {"peer_decode_ratio", rt.ratio},
                     {"peer_decode_ratio_lo", rt.lo},
                     {"peer_decode_ratio_hi", rt.hi},
                     {"peer_samples", samples.dump()}};
            f.insert(f.end(), peer_fields.begin(), peer_fields.end());
            if (probe) {
              f.emplace_back("read_bandwidth_gb_s", row["read_bandwidth_gb_per_s"].get<double>());
              f.emplace_back("decode_roofline_tokens_per_s", row["read_bandwidth_gb_per_s"].get<double>() * 1e9 / bytes_per_token);
              f.emplace_back("roofline_fraction", row["decode_fraction_of_roofline"].get<double>());
              f.emplace_back("peer_roofline_fraction", row["peer_decode_fraction_of_roofline"].get<double>());
            }
            stored->add(str(fmt, " t", threads, " vs llama.cpp ", gtype), f);
          }
          if (a.output == "md") {
            if (!header_printed) {
              header_printed = true;
              std::printf("| model | cibench | llama.cpp | threads | prefill %d tok/s: cibench | llama.cpp | cibench / "
                          "llama.cpp [95%%] | decode %d tok/s: cibench | llama.cpp | cibench / llama.cpp [95%%] | "
                          "decode of roofline: cibench | llama.cpp | MiB streamed per token: cibench | llama.cpp |\n",
                          a.prompt_tokens, a.decode_tokens);
              std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            }
            std::printf("| %s | %s | %s | %d | %.1f | %.1f | %s | %.2f | %.2f | %s | %s | %s | %.1f | %.1f |\n",
                        model.origin.c_str(), model.build.describe().c_str(), gtype.c_str(), threads, p.median,
                        lp.median, ratio_text(rp).c_str(), d.median, ld.median, ratio_text(rt).c_str(),
                        probe ? (fixed(100 * row["decode_fraction_of_roofline"].get<double>(), 0) + " %").c_str() : "n/a",
                        probe ? (fixed(100 * row["peer_decode_fraction_of_roofline"].get<double>(), 0) + " %").c_str()
                              : "n/a",
                        model.streamed_bytes_per_token() / 1048576.0, peer_bytes.streamed_per_token / 1048576.0);
            std::fflush(stdout);
          }
        }
      }
    } catch (const std::exception& e) {
      if (stored) stored->fail(e.what());
      throw;
    }
    if (stored) std::fprintf(stderr, "cibench: %s\n", stored->finish().c_str());
  }
  nlohmann::json peer_json = {{"engine", "llama.cpp"},
                              {"binary", fs::absolute(peer.binary).string()},
                              {"build_commit", identity.build_commit},
                              {"build_number", identity.build_number},
                              {"binary_hash", peer_hash},
                              {"cpu_info", identity.cpu_info},
                              {"backends", identity.backends},
                              {"flags", identity.flags},
                              {"command", shell_command_line(command_example)}};
  if (a.output == "json") {
    nlohmann::json out = json_provenance();
    out["peer"] = peer_json;
    out["results"] = rows;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("\ncibench %s (%s), CPU: %s, ISA %s, KV cache %s; llama.cpp: %s (build %lld, commit %s, binary %s; reports CPU "
                "'%s', backends %s; flags %s). Alternating: each of %d repetitions runs cibench (after 1 warm-up), "
                "then `%s` (llama-bench warms up itself); rates are medians, the ratio is median / median with a "
                "paired percentile-bootstrap 95 %% interval over the repetitions; prefill: %d tokens into an empty "
                "cache; decode: %d single-token steps from an empty cache (llama-bench's pp and tg tests)%s\n",
                build_info().commit.c_str(), build_info().build_type.c_str(), cpu_features().model_name.c_str(),
                isa_name(isa), a.engine.kv_mode.c_str(), peer_json["binary"].get<std::string>().c_str(),
                static_cast<long long>(identity.build_number), identity.build_commit.c_str(), peer_hash.c_str(),
                identity.cpu_info.c_str(),
                identity.backends.c_str(), identity.flags.dump().c_str(), a.reps,
                shell_command_line(command_example).c_str(), a.prompt_tokens, a.decode_tokens,
                probe ? "; roofline = read bandwidth (measured before every repetition) / weight bytes streamed per "
                        "token (the peer's: its file's tensors, less the embedding table when the output matrix is "
                        "separate)"
                      : "");
  }
  return 0;
}

}  // namespace cmd_bench
}  // namespace cibench::cli
