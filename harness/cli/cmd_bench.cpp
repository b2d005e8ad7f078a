// cibench bench: prefill and decode tokens/s of a model across formats x threads, with
// repetitions, next to the memory-bandwidth roofline for decode. Timing is done here (the
// harness side); the engine never reads a clock.
#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <map>
#include <sstream>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/runtime/batch.h"
#include "engines/runtime/session.h"
#include "engines/runtime/speculative.h"
#include "harness/cli/bandwidth.h"
#include "harness/cli/bench_common.h"
#include "harness/cli/command.h"
#include "harness/cli/engine_options.h"
#include "harness/lib/build_info.h"
#include "harness/lib/memory_check.h"
#include "harness/lib/run_record.h"

namespace cibench::cli {
namespace cmd_bench {

void warn_if_not_release() {
  if (std::string(build_info().build_type) != "Release")
    std::fprintf(stderr, "cibench: WARNING: %s build; figures are not representative\n",
                 build_info().build_type.c_str());
}

nlohmann::json json_provenance() {
  nlohmann::json out;
  out["cibench_commit"] = build_info().commit;
  out["build_type"] = build_info().build_type;
  out["cpu"] = cpu_features().model_name;
  out["cpu_flags"] = cpu_features().flags_string();
  return out;
}

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  for (double x : v) s.mean += x;
  s.mean /= n;
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(s.stddev / (n - 1)) : 0;
  return s;
}


Fields bench_row_fields(const BenchArgs& a, const std::string& fmt, int threads, KvMode kv, Isa isa, const Stats& p,
                        const Stats& d, const LlamaModel& model) {
  return Fields{{"format", fmt},
                {"sparsity", 0.0},
                {"threads", int64_t{threads}},
                {"workers", int64_t{1}},
                {"kv_mode", std::string(kv_mode_name(kv))},
                {"isa_requested", a.engine.isa.empty() ? std::string("auto") : a.engine.isa},
                {"isa_used", std::string(isa_name(isa))},
                {"repetitions", int64_t{a.reps}},
                {"prompt_tokens", int64_t{a.prompt_tokens}},
                {"output_tokens", int64_t{a.decode_tokens}},
                {"prefill_tokens_per_s", p.median},
                {"prefill_tokens_per_s_sd", a.reps > 1 ? SqlValue(p.stddev) : sql_null()},
                {"decode_tokens_per_s", d.median},
                {"decode_tokens_per_s_sd", a.reps > 1 ? SqlValue(d.stddev) : sql_null()},
                {"weight_bytes", static_cast<int64_t>(model.weight_bytes())},
                {"repacked_weight_bytes", static_cast<int64_t>(model.repacked_bytes())},
                {"streamed_bytes_per_token", static_cast<int64_t>(model.streamed_bytes_per_token())},
                {"weight_conversion_rel_rms",
                 model.conversion.empty() ? sql_null() : SqlValue(model.conversion_overall().relative_rms())},
                {"weight_conversion",
                 model.conversion.empty() ? sql_null() : SqlValue(weight_conversion_json(model).dump())},
                {"weight_conversion_reason",
                 model.conversion.empty() ? SqlValue(std::string("the source stores no quantised weights"))
                                          : sql_null()},
                {"acc_unavailable_reason", std::string("bench measures speed only (cibench recipes or a "
                                                       "scenario's [accuracy] measures quality)")}};
}

int run_bench(BenchArgs a) {
  using clock = std::chrono::steady_clock;
  if (a.models.empty()) a.models = {"synthetic:tinystories-110m"};
  CIBENCH_CHECK(a.batch.empty() || a.speculative.empty(), "--batch and --speculative are separate benchmarks");
  CIBENCH_CHECK(a.peer.empty() || (a.batch.empty() && a.speculative.empty()),
                "--peer compares plain prefill and decode; run --batch and --speculative without it");
  CIBENCH_CHECK(!a.peer.empty() || (a.peer_args.empty() && a.peer_gguf.empty() && a.peer_dir.empty()),
                "--peer-args, --peer-gguf and --peer-dir need --peer llama-bench=PATH");
  if (!a.batch.empty()) return run_batch_bench(a);
  if (!a.speculative.empty()) return run_spec_bench(a);
  if (!a.peer.empty()) return run_peer_bench(a);
  CIBENCH_CHECK(a.reps >= 1, "--reps must be >= 1");
  CIBENCH_CHECK(a.prompt_tokens >= 1 && a.decode_tokens >= 1, "--prompt and --decode must be >= 1");
  a.engine.build_options();  // applies --isa
  const Isa isa = active_isa();
  warn_if_not_release();

  // The roofline is re-measured right before every repetition, with the same thread count, so a
  // row's bandwidth and its decode rate see the same state of a shared machine; a row's fraction
  // of the roofline is the median over its repetitions of decode / (bandwidth / bytes per token).
  std::unique_ptr<ReadBandwidthProbe> probe;
  if (!a.no_roofline) probe = std::make_unique<ReadBandwidthProbe>(a.probe_mib);
  std::map<int, std::vector<double>> bandwidth;  // every probe, per thread count (for the footer)

  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& spec : a.models) {
    LlamaSource src = open_llama_source(spec);
    // --db: one stored run per model, a variants row per (format, threads) as it is measured.
    std::unique_ptr<CommandRun> stored;
    if (!a.db.empty()) stored = std::make_unique<CommandRun>(a.db, "bench", invocation(), spec, model_fields(src));
    for (const std::string& fmt : a.formats) {
      EngineOptions eo = a.engine;
      eo.format = fmt;
      {
        SessionOptions so = eo.session_options(*std::max_element(a.threads.begin(), a.threads.end()));
        so.max_context = std::max(so.max_context, a.prompt_tokens + a.decode_tokens + 1);
        so.max_batch = std::max(so.max_batch, a.prompt_tokens);
        require_llama_memory(str("cibench bench on ", spec, " in ", fmt), src.config, eo.build_options(), so);
      }
      LlamaModel model = build_llama(src, eo.build_options());
      if (!model.conversion.empty()) std::fprintf(stderr, "%s\n", weight_conversion_line(model).c_str());
      std::mt19937 rng(static_cast<uint32_t>(a.seed));
      std::uniform_int_distribution<int> tokd(3, model.config.vocab_size - 1);
      std::vector<int> prompt(a.prompt_tokens);
      for (int& t : prompt) t = tokd(rng);
      for (int threads : a.threads) {
        SessionOptions so = eo.session_options(threads);
        so.max_context = std::max(so.max_context, a.prompt_tokens + a.decode_tokens + 1);
        so.max_batch = std::max(so.max_batch, a.prompt_tokens);
        LlamaSession s(model, so);
        std::vector<double> prefill_tps, decode_tps, bw_reps, fraction_reps;
        const double bytes_per_token = static_cast<double>(model.streamed_bytes_per_token());
        for (int r = -1; r < a.reps; ++r) {  // r = -1 is the warm-up, not recorded
          const double bw = (probe && r >= 0) ? probe->measure(threads) : 0.0;
          s.reset();
          auto t0 = clock::now();
          const float* logits = s.prefill(prompt.data(), a.prompt_tokens);
          auto t1 = clock::now();
          int tok = static_cast<int>(std::max_element(logits, logits + model.config.vocab_size) - logits);
          for (int i = 0; i < a.decode_tokens; ++i) {
            logits = s.step(tok);
            tok = static_cast<int>(std::max_element(logits, logits + model.config.vocab_size) - logits);
          }
          auto t2 = clock::now();
          if (r < 0) continue;
          prefill_tps.push_back(a.prompt_tokens / std::chrono::duration<double>(t1 - t0).count());
          decode_tps.push_back(a.decode_tokens / std::chrono::duration<double>(t2 - t1).count());
          if (probe) {
            bw_reps.push_back(bw);
            bandwidth[threads].push_back(bw);
            fraction_reps.push_back(decode_tps.back() / (bw * 1e9 / bytes_per_token));
          }
        }
        Stats p = stats(prefill_tps), d = stats(decode_tps);
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
        row["prefill_tokens_per_s_stddev"] = p.stddev;
        row["decode_tokens_per_s_median"] = d.median;
        row["decode_tokens_per_s_stddev"] = d.stddev;
        row["weight_bytes"] = model.weight_bytes();
        row["repacked_weight_bytes"] = model.repacked_bytes();
        row["weight_conversion"] = weight_conversion_json(model);
        row["streamed_bytes_per_token"] = model.streamed_bytes_per_token();
        row["rss_bytes"] = current_rss_bytes();  // model + session; the bandwidth probe is freed
        if (probe) {
          const double bw = stats(bw_reps).median;
          row["read_bandwidth_gb_per_s"] = bw;
          row["read_bandwidth_gb_per_s_reps"] = bw_reps;
          row["decode_roofline_tokens_per_s"] = bw * 1e9 / bytes_per_token;
          row["decode_fraction_of_roofline"] = stats(fraction_reps).median;
          row["decode_fraction_of_roofline_reps"] = fraction_reps;
        }
        rows.push_back(row);
        if (stored) {
          Fields f = bench_row_fields(a, fmt, threads, so.kv_mode, isa, p, d, model);
          if (probe) {
            f.emplace_back("read_bandwidth_gb_s", row["read_bandwidth_gb_per_s"].get<double>());
            f.emplace_back("decode_roofline_tokens_per_s", row["decode_roofline_tokens_per_s"].get<double>());
            f.emplace_back("roofline_fraction", row["decode_fraction_of_roofline"].get<double>());
          }
          stored->add(str(fmt, " t", threads), f);
        }
        if (a.output == "md" && rows.size() == 1) {
          std::printf("| model | format | isa | threads | prefill tok/s (%d) | decode tok/s | "
                      "decode roofline tok/s | of roofline | weights MiB | RSS MiB |\n",
                      a.prompt_tokens);
          std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
        }
        if (a.output == "md") {
          std::printf("| %s | %s | %s | %d | %.1f ± %.1f | %.2f ± %.2f | %s | %s | %.1f | %.1f |\n",
                      model.origin.c_str(), model.build.describe().c_str(), isa_name(isa), threads,
                      p.median, p.stddev, d.median, d.stddev,
                      row.contains("decode_roofline_tokens_per_s")
                          ? std::to_string(row["decode_roofline_tokens_per_s"].get<double>()).substr(0, 7).c_str()
                          : "n/a",
                      row.contains("decode_fraction_of_roofline")
                          ? (std::to_string(static_cast<int>(std::lround(100 * row["decode_fraction_of_roofline"].get<double>()))) + " %").c_str()
                          : "n/a",
                      model.weight_bytes() / 1048576.0, current_rss_bytes() / 1048576.0);
          std::fflush(stdout);
        }
      }
    }
    if (stored) std::fprintf(stderr, "cibench: %s\n", stored->finish().c_str());
  }
  if (a.output == "json") {
    nlohmann::json out = json_provenance();
    if (probe)
      out["roofline_probe"] = {{"kernel", "f32 matrix-vector, 4 rows per step"},
                               {"buffer_mib", probe->buffer_mib()},
                               {"when", "before every repetition"}};
    out["results"] = rows;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("\ncibench %s (%s), CPU: %s, ISA %s; median of %d runs after 1 warm-up; "
                "roofline = read bandwidth / weight bytes streamed per token, the bandwidth measured "
                "right before every repetition (%.0f MiB through the f32 matrix-vector kernel); 'of "
                "roofline' = the median over repetitions of decode / roofline",
                build_info().commit.c_str(), build_info().build_type.c_str(),
                cpu_features().model_name.c_str(), isa_name(isa), a.reps,
                probe ? probe->buffer_mib() : 0.0);
    for (auto& [t, bws] : bandwidth) {
      const Stats b = stats(bws);
      std::printf("; %d thread%s %.1f GB/s median (%.1f-%.1f over %zu probes)", t, t == 1 ? "" : "s",
                  b.median, *std::min_element(bws.begin(), bws.end()),
                  *std::max_element(bws.begin(), bws.end()), bws.size());
    }
    std::printf("\n");
  }
  return 0;
}

// --batch: aggregate decode tokens/s of B sequences decoding together through LlamaBatch (one
// forward step over B rows: the weights are streamed once per step for all B), per B, against
// B = 1 of the same model, format and thread count. Each repetition adds B sequences, prefills
// each with its own random prompt (untimed), then times `decode` steps of B decode rows.
int run_batch_bench(const BenchArgs& a) {
  using clock = std::chrono::steady_clock;
  CIBENCH_CHECK(a.reps >= 1, "--reps must be >= 1");
  CIBENCH_CHECK(a.prompt_tokens >= 1 && a.decode_tokens >= 1, "--prompt and --decode must be >= 1");
  for (int b : a.batch) CIBENCH_CHECK(b >= 1 && b <= 4096, "--batch sizes must be in [1, 4096], got ", b);
  CIBENCH_CHECK(a.db.empty(), "--db does not store batched decode rows (run --batch without --db)");
  a.engine.build_options();  // applies --isa
  const Isa isa = active_isa();
  warn_if_not_release();
  const KvMode kv = parse_kv_mode(a.engine.kv_mode);
  const int max_b = *std::max_element(a.batch.begin(), a.batch.end());
  auto batch_options = [&](int threads, int b) {
    BatchOptions bo;
    bo.threads = threads;
    bo.pin_threads = a.engine.pin;
    bo.max_context = a.prompt_tokens + a.decode_tokens + 1;
    bo.max_step_tokens = std::max(b, std::min(a.prompt_tokens, 512));
    bo.max_step_sequences = b;
    bo.pool.kv_mode = kv;
    bo.pool.token_budget = static_cast<int64_t>(b) *
                           KvBlockPool::blocks_for(bo.max_context, bo.pool.block_tokens) *
                           bo.pool.block_tokens;
    return bo;
  };

  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& spec : a.models) {
    LlamaSource src = open_llama_source(spec);
    for (const std::string& fmt : a.formats) {
      EngineOptions eo = a.engine;
      eo.format = fmt;
      const LlamaBuildOptions build = eo.build_options();
      {
        const BatchOptions bo = batch_options(*std::max_element(a.threads.begin(), a.threads.end()), max_b);
        const double model_bytes = static_cast<double>(estimate_llama_build_bytes(src.config, build));
        const double batch_bytes = static_cast<double>(LlamaBatch::estimate_bytes(src.config, bo));
        require_memory(str("cibench bench --batch on ", spec, " in ", fmt), model_bytes + batch_bytes,
                       str("model ~", model_bytes / 1073741824.0, " GiB + KV pool and scratch for B = ", max_b,
                           " ~", batch_bytes / 1073741824.0, " GiB"),
                       "try a smaller format, fewer --batch sizes or shorter --prompt/--decode");
      }
      LlamaModel model = build_llama(src, build);
      const int V = model.config.vocab_size;
      std::mt19937 rng(static_cast<uint32_t>(a.seed));
      std::uniform_int_distribution<int> tokd(3, V - 1);
      std::vector<std::vector<int>> prompts(max_b, std::vector<int>(a.prompt_tokens));
      for (auto& p : prompts)
        for (int& t : p) t = tokd(rng);
      for (int threads : a.threads) {
        double base_tps = 0;  // B = 1 of this (model, format, threads), when measured
        for (int b : a.batch) {
          LlamaBatch batch(model, batch_options(threads, b));
          std::vector<double> tps, step_ms;
          std::vector<SeqId> ids(b);
          std::vector<int> next(b);
          std::vector<BatchItem> items(b);
          for (int r = -1; r < a.reps; ++r) {  // r = -1 is the warm-up, not recorded
            for (int i = 0; i < b; ++i) {
              ids[i] = batch.add_sequence();
              for (int done = 0; done < a.prompt_tokens;) {
                const int n = std::min(a.prompt_tokens - done, batch.options().max_step_tokens);
                batch.step({{ids[i], prompts[i].data() + done, n, done + n == a.prompt_tokens}});
                done += n;
              }
              next[i] = static_cast<int>(std::max_element(batch.logits(0), batch.logits(0) + V) - batch.logits(0));
            }
            const auto t0 = clock::now();
            for (int d = 0; d < a.decode_tokens; ++d) {
              for (int i = 0; i < b; ++i) items[i] = {ids[i], &next[i], 1, true};
              batch.step(items);
              for (int i = 0; i < b; ++i) {
                const float* l = batch.logits(i);
                next[i] = static_cast<int>(std::max_element(l, l + V) - l);
              }
            }
            const double sec = std::chrono::duration<double>(clock::now() - t0).count();
            for (int i = 0; i < b; ++i) batch.free_sequence(ids[i]);
            if (r < 0) continue;
            tps.push_back(static_cast<double>(b) * a.decode_tokens / sec);
            step_ms.push_back(1e3 * sec / a.decode_tokens);
          }
          const Stats t = stats(tps), ms = stats(step_ms);
          if (b == 1) base_tps = t.median;
          nlohmann::json row;
          row["model"] = model.origin;
          row["format"] = model.build.describe();
          row["isa"] = isa_name(isa);
          row["threads"] = threads;
          row["batch"] = b;
          row["kv_mode"] = kv_mode_name(kv);
          row["prompt_tokens"] = a.prompt_tokens;
          row["decode_steps"] = a.decode_tokens;
          row["reps"] = a.reps;
          row["decode_tokens_per_s_median"] = t.median;
          row["decode_tokens_per_s_stddev"] = t.stddev;
          row["step_latency_ms_median"] = ms.median;
          row["step_latency_ms_stddev"] = ms.stddev;
          if (base_tps > 0) row["speedup_vs_batch_1"] = t.median / base_tps;
          row["kv_pool_bytes"] = batch.pool().bytes();
          row["streamed_bytes_per_step"] = model.streamed_bytes_per_token();
          rows.push_back(row);
          if (a.output == "md" && rows.size() == 1) {
            std::printf("| model | format | isa | threads | B | decode tok/s (all B) | step ms | tok/s per sequence | speedup vs B=1 |\n");
            std::printf("|---|---|---|---|---|---|---|---|---|\n");
          }
          if (a.output == "md") {
            std::printf("| %s | %s | %s | %d | %d | %.2f ± %.2f | %.2f ± %.2f | %.2f | %s |\n", model.origin.c_str(),
                        model.build.describe().c_str(), isa_name(isa), threads, b, t.median, t.stddev, ms.median,
                        ms.stddev, t.median / b,
                        base_tps > 0 ? str(std::lround(100 * t.median / base_tps) / 100.0, "x").c_str() : "n/a");
            std::fflush(stdout);
          }
        }
      }
    }
  }
  if (a.output == "json") {
    nlohmann::json out = json_provenance();
    out["results"] = rows;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("\ncibench %s (%s), CPU: %s, ISA %s; batched decode: B sequences, each prefilled with "
                "%d random tokens (untimed), then %d steps of B decode rows timed; median of %d runs "
                "after 1 warm-up; step ms = one forward step over all B rows\n",
                build_info().commit.c_str(), build_info().build_type.c_str(),
                cpu_features().model_name.c_str(), isa_name(isa), a.prompt_tokens, a.decode_tokens, a.reps);
  }
  return 0;
}

// --speculative: greedy generation of `decode` tokens after a `prompt`-token prompt, plain
// (LlamaSession prefill, then one step per token) and speculative (SpeculativeDecoder: the drafter
// proposes k tokens, the target verifies them in one forward over k + 1 positions), on the same
// target build, alternating plain and speculative repetitions. Timed: the whole generate call,
// prompt read included on both sides (the draft model's too: part of what speculation costs).
// Greedy speculation must give the plain tokens exactly; a difference is an error.
int run_spec_bench(const BenchArgs& a) {
  using clock = std::chrono::steady_clock;
  CIBENCH_CHECK(a.reps >= 1, "--reps must be >= 1");
  CIBENCH_CHECK(a.prompt_tokens >= 1 && a.decode_tokens >= 1, "--prompt and --decode must be >= 1");
  CIBENCH_CHECK(a.db.empty(), "--db does not store speculative rows (run --speculative without --db)");
  for (int k : a.draft_tokens) CIBENCH_CHECK(k >= 1 && k <= 64, "--draft-tokens must be in [1, 64], got ", k);
  CIBENCH_CHECK(a.repeat_prompt >= 0, "--repeat-prompt must be >= 0");
  std::vector<DrafterSpec> drafters;
  for (const auto& s : a.speculative) {
    try {
      drafters.push_back(parse_drafter_spec(s));
    } catch (const Error& e) {
      throw Error(str("--speculative: ", e.what()));
    }
    CIBENCH_CHECK(drafters.back().kind != DrafterSpec::Kind::off, "--speculative off: plain decoding is every row's reference already");
  }
  a.engine.build_options();  // applies --isa
  const Isa isa = active_isa();
  warn_if_not_release();
  const KvMode kv = parse_kv_mode(a.engine.kv_mode);
  CIBENCH_CHECK(kv != KvMode::none, "--speculative needs a KV cache (--kv ", kv_mode_name(KvMode::preallocated),
                " or ", kv_mode_name(KvMode::preallocated_f16), ")");

  nlohmann::json rows = nlohmann::json::array();
  bool header = false;
  for (const std::string& spec : a.models) {
    LlamaSource src = open_llama_source(spec);
    const int context = a.prompt_tokens + a.decode_tokens + 64;
    CIBENCH_CHECK(context <= src.config.seq_len, "--prompt + --decode (+64 for drafts) = ", context,
                  " exceeds ", spec, "'s context of ", src.config.seq_len);
    const int V = src.config.vocab_size;
    std::mt19937 rng(static_cast<uint32_t>(a.seed));
    std::uniform_int_distribution<int> tokd(3, V - 1);
    std::vector<int> prompt(a.prompt_tokens);
    const int period = a.repeat_prompt > 0 ? a.repeat_prompt : a.prompt_tokens;
    for (int i = 0; i < a.prompt_tokens; ++i) prompt[i] = i < period ? tokd(rng) : prompt[i - period];
    for (const std::string& fmt : a.formats) {
      EngineOptions eo = a.engine;
      eo.format = fmt;
      const LlamaBuildOptions build = eo.build_options();
      require_memory(str("cibench bench --speculative on ", spec, " in ", fmt),
                     2.0 * static_cast<double>(estimate_llama_build_bytes(src.config, build)),
                     "the target build and at most as much again for a draft", "try a smaller format");
      const LlamaModel target = build_llama(src, build);
      for (int threads : a.threads) {
        SessionOptions so;
        so.threads = threads;
        so.pin_threads = a.engine.pin;
        so.kv_mode = kv;
        so.max_context = context;
        LlamaSession plain(target, so);
        // Plain greedy generation: the reference tokens and time.
        // Plain greedy generation; *first: when the first token was known (prompt read).
        auto run_plain = [&](std::vector<int>& out, clock::time_point* first = nullptr) {
          plain.reset();
          out.clear();
          const float* l = plain.prefill(prompt.data(), static_cast<int>(prompt.size()));
          for (int d = 0; d < a.decode_tokens; ++d) {
            out.push_back(static_cast<int>(std::max_element(l, l + V) - l));
            if (d == 0 && first) *first = clock::now();
            if (d + 1 < a.decode_tokens) l = plain.step(out.back());
          }
        };
        // When the speculative decoder emitted its first token.
        struct FirstToken : SpeculativeObserver {
          clock::time_point at;
          bool seen = false;
          void prefill() override { seen = false; }
          void tokens(const int*, int) override {
            if (!seen) at = clock::now();
            seen = true;
          }
        };
        std::vector<int> ref;
        run_plain(ref);  // warm-up
        for (const DrafterSpec& ds : drafters) {
          std::unique_ptr<Drafter> drafter;
          std::shared_ptr<const LlamaModel> draft_model;
          if (ds.kind == DrafterSpec::Kind::self) {
            drafter = make_self_drafter(src, target, so, ds.format);
          } else if (ds.kind == DrafterSpec::Kind::draft) {
            LlamaSource dsrc = open_llama_source(ds.model);
            LlamaBuildOptions db = build;
            draft_model = std::make_shared<const LlamaModel>(build_llama(dsrc, db));
            drafter = std::make_unique<DraftModelDrafter>(draft_model, target, so);
          } else {
            drafter = std::make_unique<PromptLookupDrafter>(ds.min_ngram, ds.max_ngram);
          }
          for (int k : a.draft_tokens) {
            SpeculativeOptions spo;
            spo.draft_tokens = k;
            LlamaSession tsess(target, so);
            SpeculativeDecoder dec(tsess, *drafter, spo);
            std::vector<double> plain_tps, spec_tps, plain_dec, spec_dec;
            std::vector<int> got;
            FirstToken ft;
            auto secs = [](clock::time_point a0, clock::time_point a1) { return std::chrono::duration<double>(a1 - a0).count(); };
            for (int r = -1; r < a.reps; ++r) {  // alternating; r = -1 warms both up
              clock::time_point p_first;
              auto t0 = clock::now();
              run_plain(got, &p_first);
              const auto p_end = clock::now();
              const double ps = secs(t0, p_end);
              t0 = clock::now();
              const std::vector<int> sp = dec.generate(prompt, a.decode_tokens, &ft);
              const auto s_end = clock::now();
              const double ss = secs(t0, s_end);
              if (sp != ref)
                throw Error(str("speculative greedy tokens differ from plain greedy tokens (", drafter->name(), ", k = ", k,
                                ", ", spec, " ", fmt, "): a defect"));
              if (r < 0) continue;
              plain_tps.push_back(a.decode_tokens / ps);
              spec_tps.push_back(a.decode_tokens / ss);
              // Decode: the tokens after the first over the time after it (1 / TPOT).
              if (a.decode_tokens > 1) {
                plain_dec.push_back((a.decode_tokens - 1) / secs(p_first, p_end));
                spec_dec.push_back((a.decode_tokens - 1) / secs(ft.at, s_end));
              }
            }
            const SpeculativeStats& st = dec.stats();
            const Stats pt = stats(plain_tps), stt = stats(spec_tps);
            // Decode rates exist when more than one token was generated (--decode > 1).
            const bool dec_ok = !plain_dec.empty() && !spec_dec.empty();
            const Stats pds = dec_ok ? stats(plain_dec) : Stats{}, sds = dec_ok ? stats(spec_dec) : Stats{};
            const Stats* pd = dec_ok ? &pds : nullptr;
            const Stats* sd = dec_ok ? &sds : nullptr;
            const double acc = st.acceptance_rate(), mal = st.mean_accepted_length();
            nlohmann::json row;
            row["model"] = target.origin;
            row["format"] = target.build.describe();
            row["isa"] = isa_name(isa);
            row["threads"] = threads;
            row["drafter"] = drafter->name();
            row["draft_tokens"] = k;
            row["prompt_tokens"] = a.prompt_tokens;
            row["repeat_prompt"] = a.repeat_prompt;
            row["generated_tokens"] = a.decode_tokens;
            row["reps"] = a.reps;
            row["plain_tokens_per_s_median"] = pt.median;
            row["speculative_tokens_per_s_median"] = stt.median;
            row["speculative_tokens_per_s_stddev"] = stt.stddev;
            row["speedup"] = stt.median / pt.median;
            row["plain_decode_tokens_per_s_median"] = pd ? nlohmann::json(pd->median) : nlohmann::json();
            row["speculative_decode_tokens_per_s_median"] = sd ? nlohmann::json(sd->median) : nlohmann::json();
            row["speculative_decode_tokens_per_s_stddev"] = sd ? nlohmann::json(sd->stddev) : nlohmann::json();
            row["decode_speedup"] = pd && sd ? nlohmann::json(sd->median / pd->median) : nlohmann::json();
            row["acceptance_rate"] = std::isnan(acc) ? nlohmann::json() : nlohmann::json(acc);
            row["mean_accepted_length"] = std::isnan(mal) ? nlohmann::json() : nlohmann::json(mal);
            row["target_forwards"] = st.target_forwards;
            row["draft_forwards"] = st.draft_forwards;
            row["accepted_by_position"] = st.accepted_at;
            row["drafted_by_position"] = st.drafted_at;
            rows.push_back(row);
            if (a.output == "md") {
              if (!header) {
                std::printf("| model | target | isa | threads | drafter | k | plain decode tok/s | speculative decode tok/s | decode speed-up | end-to-end speed-up | acceptance | mean accepted length | target forwards |\n");
                std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
                header = true;
              }
              std::printf("| %s | %s | %s | %d | %s | %d | %s | %s | %s | %.2fx | %s | %s | %lld |\n",
                          target.origin.c_str(), target.build.describe().c_str(), isa_name(isa), threads,
                          drafter->name().c_str(), k, pd ? str(std::lround(100 * pd->median) / 100.0).c_str() : "n/a",
                          sd ? str(std::lround(100 * sd->median) / 100.0, " ± ", std::lround(100 * sd->stddev) / 100.0).c_str() : "n/a",
                          pd && sd ? str(std::lround(100 * sd->median / pd->median) / 100.0, "x").c_str() : "n/a",
                          stt.median / pt.median,
                          std::isnan(acc) ? "n/a (nothing drafted)" : str(std::lround(1000 * acc) / 1000.0).c_str(),
                          std::isnan(mal) ? "n/a" : str(std::lround(100 * mal) / 100.0).c_str(),
                          static_cast<long long>(st.target_forwards));
              std::fflush(stdout);
            }
          }
        }
      }
    }
  }
  if (a.output == "json") {
    nlohmann::json out = json_provenance();
    out["results"] = rows;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("\ncibench %s (%s), CPU: %s, ISA %s; greedy generation of %d tokens after a %d-token prompt%s, "
                "plain and speculative alternating, median of %d after 1 warm-up; decode: the tokens after the first "
                "over the time after it (1 / TPOT); end-to-end: the whole generation, prompt read included (the "
                "draft model's too); speculative tokens checked equal to plain\n",
                build_info().commit.c_str(), build_info().build_type.c_str(), cpu_features().model_name.c_str(),
                isa_name(isa), a.decode_tokens, a.prompt_tokens,
                a.repeat_prompt > 0 ? str(" (a random run of ", a.repeat_prompt, " tokens repeated)").c_str() : "",
                a.reps);
  }
  return 0;
}

const RegisterCommand reg{
    {"bench", "prefill and decode tokens/s across models x formats x threads, vs the roofline",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<BenchArgs>();
       a->engine.add_to(sub, false);
       sub.add_option("--models", a->models, "models (default synthetic:tinystories-110m)");
       sub.add_option("-f,--formats", a->formats, "weight formats")->capture_default_str();
       sub.add_option("-T,--threads", a->threads, "thread counts")->capture_default_str();
       sub.add_option("--prompt", a->prompt_tokens, "prompt tokens for prefill")->capture_default_str();
       sub.add_option("--decode", a->decode_tokens, "decode steps")->capture_default_str();
       sub.add_option("--reps", a->reps, "measured repetitions (after one warm-up)")->capture_default_str();
       sub.add_option("--seed", a->seed, "seed of the synthetic prompt")->capture_default_str();
       sub.add_option("-o,--output", a->output, "md or json")
           ->check(CLI::IsMember({"md", "json"}))
           ->capture_default_str();
       sub.add_option("--db", a->db,
                      "also store the results in this results database (one run per model; "
                      "the dashboard and reports read them)");
       sub.add_flag("--no-roofline", a->no_roofline, "skip the bandwidth measurement");
       sub.add_option("--batch", a->batch,
                      "batched decode instead: aggregate decode tokens/s of B sequences stepping "
                      "together, for each B in the list (e.g. 1,2,4,8), with the speed-up over B = 1")
           ->delimiter(',');
       sub.add_option("--speculative", a->speculative,
                      "speculative greedy decoding instead, against plain greedy decoding of the same target: "
                      "drafters self[:FORMAT] (default int4_g32), draft:MODEL, lookup[:MIN-MAX]")
           ->delimiter(',');
       sub.add_option("--draft-tokens", a->draft_tokens, "--speculative: tokens drafted per verification (list)")
           ->delimiter(',')
           ->capture_default_str();
       sub.add_option("--repeat-prompt", a->repeat_prompt,
                      "--speculative: the prompt is a random run of this many tokens repeated (a repetitive text "
                      "for prompt lookup); 0 = all random")
           ->capture_default_str();
       sub.add_option("--probe-mib", a->probe_mib,
                      "buffer streamed by the bandwidth probe before every repetition (MiB; far "
                      "larger than the last-level cache)")
           ->check(CLI::Range(1.0, 65536.0))
           ->capture_default_str();
       sub.add_option("--peer", a->peer,
                      "side by side with llama.cpp: llama-bench=PATH (a llama-bench you built). Each repetition runs "
                      "cibench, then the peer once (-r 1 -mmp 0, the same threads, prompt, decode steps and KV cache "
                      "type) on a GGUF of the same weights in the paired ggml type (f32 ~ F32, bf16 ~ BF16, int8_g32_a8/"
                      "int8/w8a8/w8a7 ~ Q8_0, int4 ~ Q4_0); both measure llama-bench's tests: prefill of --prompt tokens and "
                      "--decode single-token steps, each from an empty cache");
       sub.add_option("--peer-args", a->peer_args,
                      "--peer: extra llama-bench arguments, appended as given (e.g. --peer-args=-fa --peer-args=1)")
           ->allow_extra_args(false);
       sub.add_option("--peer-gguf", a->peer_gguf,
                      "--peer: TYPE=PATH, the GGUF the peer reads for that ggml type (F32, BF16, Q8_0, Q4_0) instead "
                      "of one cibench exports from the model");
       sub.add_option("--peer-dir", a->peer_dir,
                      "--peer: directory of the GGUFs cibench exports for the peer (kept and reused, named by the "
                      "model's content hash and type; default $TMPDIR/cibench-peer)");
       CLI::App* app = &sub;
       return [a, app] {
         a->kv_given = app->get_option("--kv")->count() > 0;
         return run_bench(*a);
       };
     }}};

}  // namespace cmd_bench
}  // namespace cibench::cli
