#pragma once
// What the variants of `cibench bench` share (cmd_bench.cpp: prefill/decode, --batch,
// --speculative; cmd_bench_peer.cpp: --peer): the arguments, the repetition statistics and the
// provenance at the head of --output json.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/models/llama.h"
#include "engines/runtime/session.h"
#include "harness/cli/engine_options.h"
#include "harness/lib/run_record.h"

namespace cibench::cli {
namespace cmd_bench {

struct BenchArgs {
  EngineOptions engine;
  std::vector<std::string> models;
  std::vector<std::string> formats = {"f32"};
  std::vector<int> threads = {1, 2};
  int prompt_tokens = 128;
  int decode_tokens = 32;
  int reps = 3;
  unsigned long long seed = 1;
  std::string output = "md";
  std::string db;  // also store every row in this results database
  bool no_roofline = false;
  double probe_mib = 512;
  std::vector<int> batch;  // --batch: batched decode at these batch sizes instead
  // --speculative: speculative greedy decoding with these drafters (self:FORMAT, draft:MODEL,
  // lookup[:MIN-MAX]) at these draft lengths, against plain greedy decoding of the same target.
  std::vector<std::string> speculative;
  std::vector<int> draft_tokens = {4};
  int repeat_prompt = 0;  // > 0: the prompt is a random run of this many tokens repeated
  // --peer llama-bench=PATH: the same model, shape and bits through llama.cpp's llama-bench,
  // alternating with cibench repetition by repetition.
  std::string peer;
  std::vector<std::string> peer_args;   // extra llama-bench arguments (e.g. -fa 1)
  std::vector<std::string> peer_gguf;   // TYPE=PATH: the peer's GGUF of that ggml type, instead of exporting one
  std::string peer_dir;                 // where exported GGUFs are kept (default: $TMPDIR/cibench-peer)
  bool kv_given = false;                // --kv was on the command line
};

struct Stats {
  double median = 0, mean = 0, stddev = 0;
};

Stats stats(std::vector<double> v);

void warn_if_not_release();

// The head of every --output json: which cibench, which build, which CPU.
nlohmann::json json_provenance();

// The columns every `bench` row stores (docs/schema.md): the build, the shape, the medians.
Fields bench_row_fields(const BenchArgs& a, const std::string& fmt, int threads, KvMode kv, Isa isa, const Stats& p,
                        const Stats& d, const LlamaModel& model);

int run_batch_bench(const BenchArgs& a);
int run_spec_bench(const BenchArgs& a);
int run_peer_bench(const BenchArgs& a);

}  // namespace cmd_bench
}  // namespace cibench::cli
