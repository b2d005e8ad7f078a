// The llama.cpp peer of `cibench bench --peer`: format pairing, llama-bench's JSON, the command
// line, running a child process, and the paired ratio with its bootstrap interval. (The command
// end to end, with a stand-in llama-bench, is tests/e2e/bench_peer.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/lib/peer.h"

namespace cibench {
namespace {

// Two tests as llama-bench c392e50 prints them with -o json (fields trimmed to a realistic subset).
const char* kTwoTests = R"([
  {"build_commit": "c392e50", "build_number": 5921, "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
   "model_filename": "m.gguf", "model_type": "llama ?B all F32", "model_size": 438119424, "model_n_params": 109529856,
   "n_batch": 2048, "n_ubatch": 512, "n_threads": 1, "cpu_mask": "0x0", "cpu_strict": false, "poll": 50,
   "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "flash_attn": false, "use_mmap": false, "embeddings": false,
   "n_prompt": 128, "n_gen": 0, "avg_ns": 206493753, "avg_ts": 619.87, "stddev_ts": 0.0,
   "samples_ns": [206493753], "samples_ts": [619.87]},
  {"build_commit": "c392e50", "build_number": 5921, "cpu_info": "AMD EPYC", "backends": "CPU",
   "model_type": "llama ?B all F32", "model_size": 438119424, "n_threads": 1, "type_k": "f16", "type_v": "f16",
   "flash_attn": false, "use_mmap": false, "n_prompt": 0, "n_gen": 64, "avg_ts": 59.4, "stddev_ts": 0.0}
])";

TEST(Peer, PairsFormatsWithGgmlTypes) {
  EXPECT_EQ(peer_ggml_type("f32"), "F32");
  EXPECT_EQ(peer_ggml_type("bf16"), "BF16");
  for (const char* f : {"int8_g32_a8", "int8", "w8a8", "w8a8_static", "w8a7"}) EXPECT_EQ(peer_ggml_type(f), "Q8_0") << f;
  for (const char* f : {"int4_g32", "int4_g128", "int4_g32_a8", "int4_g128_a8"}) EXPECT_EQ(peer_ggml_type(f), "Q4_0") << f;
  for (const char* f : {"f32_sparse", "int8_sparse", "int4_g32_asym", "nonsense"}) {
    try {
      peer_ggml_type(f);
      ADD_FAILURE() << f << " was paired";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + f + "' has no llama.cpp counterpart"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Peer, ParsesBothTestsAndTheFlags) {
  // Log lines before the array (some builds print them on standard output) are skipped.
  const LlamaBenchSample s = parse_llama_bench_json(std::string("main: loading\n") + kTwoTests, "lb", 128, 64);
  EXPECT_DOUBLE_EQ(s.prefill_tps, 619.87);
  EXPECT_DOUBLE_EQ(s.decode_tps, 59.4);
  EXPECT_EQ(s.build_commit, "c392e50");
  EXPECT_EQ(s.build_number, 5921);
  EXPECT_EQ(s.cpu_info, "AMD EPYC");
  EXPECT_EQ(s.model_size, 438119424);
  EXPECT_EQ(s.flags["type_k"], "f16");
  EXPECT_EQ(s.flags["n_threads"], 1);
  EXPECT_EQ(s.flags["use_mmap"], false);
  EXPECT_EQ(s.flags["n_ubatch"], 512);
}

void expect_peer_error(const std::string& text, int prompt, int decode, const std::string& needle) {
  try {
    parse_llama_bench_json(text, "/opt/llama-bench", prompt, decode);
    ADD_FAILURE() << "accepted: " << text.substr(0, 60);
  } catch (const PeerError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/opt/llama-bench"), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

TEST(Peer, BadPeerOutputIsNamed) {
  expect_peer_error("error: failed to load model", 128, 64, "no JSON array");
  expect_peer_error("[{\"n_prompt\": 128,", 128, 64, "not valid JSON");
  expect_peer_error("[]", 128, 64, "non-empty array");
  // The decode test missing (a different -n ran).
  expect_peer_error(kTwoTests, 128, 32, "no decode test (n_prompt 0, n_gen 32)");
  expect_peer_error(kTwoTests, 256, 64, "no prefill test (n_prompt 256, n_gen 0)");
  expect_peer_error(R"([{"n_prompt": 128, "n_gen": 0}])", 128, 0, "no 'avg_ts'");
  expect_peer_error(R"([{"n_prompt": 128, "n_gen": 0, "avg_ts": "fast"}])", 128, 0, "'avg_ts' is not a number");
  expect_peer_error(R"([{"n_prompt": 128, "n_gen": 0, "avg_ts": 0}])", 128, 0, "avg_ts = 0");
}

TEST(Peer, CommandLineRunsOneRepetitionWithoutMmap) {
  LlamaBenchOptions o;
  o.binary = "/x/llama-bench";
  o.extra_args = {"-fa", "1"};
  EXPECT_EQ(llama_bench_argv(o, "m.gguf", 2, 128, 64, "f16"),
            (std::vector<std::string>{"/x/llama-bench", "-m", "m.gguf", "-p", "128", "-n", "64", "-t", "2", "-r", "1",
                                      "-mmp", "0", "-ctk", "f16", "-ctv", "f16", "-o", "json", "-fa", "1"}));
}

TEST(Peer, RunsAChildAndReportsItsFailure) {
  EXPECT_EQ(run_captured({"/bin/sh", "-c", "echo out; echo err >&2"}), "out\n");
  // A chatty standard error (far more than a pipe buffer) does not block the child.
  const std::string big = run_captured({"/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x >&2; echo done"});
  EXPECT_EQ(big, "done\n");
  try {
    run_captured({"/bin/sh", "-c", "echo 'model file is truncated' >&2; exit 3"});
    ADD_FAILURE() << "a failing child was accepted";
  } catch (const PeerError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/bin/sh exited with status 3"), std::string::npos) << m;
    EXPECT_NE(m.find("model file is truncated"), std::string::npos) << m;
  }
  try {
    run_captured({"/nonexistent/llama-bench"});
    ADD_FAILURE() << "a missing binary was accepted";
  } catch (const PeerError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/llama-bench: not an executable file"), std::string::npos)
        << e.what();
  }
}

TEST(Peer, RatioOfMediansWithAPairedInterval) {
  const std::vector<double> ours = {110, 100, 120, 105, 115}, peer = {100, 100, 100, 100, 100};
  const RatioEstimate r = paired_ratio(ours, peer, 2000, 7);
  EXPECT_DOUBLE_EQ(r.ratio, 110.0 / 100.0);
  EXPECT_EQ(r.resamples, 2000);
  // Every bootstrap ratio is a median of resampled values over 100: within [1.00, 1.20].
  EXPECT_GE(r.lo, 1.0);
  EXPECT_LE(r.hi, 1.2);
  EXPECT_LE(r.lo, r.ratio);
  EXPECT_GE(r.hi, r.ratio);
  EXPECT_LT(r.lo, r.hi);
  // Deterministic per seed.
  const RatioEstimate again = paired_ratio(ours, peer, 2000, 7);
  EXPECT_EQ(again.lo, r.lo);
  EXPECT_EQ(again.hi, r.hi);
  // Identical repetitions: no spread.
  const RatioEstimate flat = paired_ratio({50, 50, 50}, {25, 25, 25});
  EXPECT_DOUBLE_EQ(flat.ratio, 2.0);
  EXPECT_DOUBLE_EQ(flat.lo, 2.0);
  EXPECT_DOUBLE_EQ(flat.hi, 2.0);
  // One repetition: the ratio, no interval to speak of.
  const RatioEstimate one = paired_ratio({3}, {4});
  EXPECT_DOUBLE_EQ(one.ratio, 0.75);
  EXPECT_EQ(one.resamples, 0);
  EXPECT_THROW(paired_ratio({1, 2}, {1}), Error);
  EXPECT_THROW(paired_ratio({1, 0}, {1, 1}), Error);
}

}  // namespace
}  // namespace cibench
