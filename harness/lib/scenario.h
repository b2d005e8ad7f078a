#pragma once
// Scenario files (TOML): the question, the model, the variant matrix, the workload, the load
// pattern, run rules, named seeds, SLOs, the accuracy block and counters. Every key is known:
// an unknown key, a wrong type or an impossible value is a ScenarioError whose message starts
// with "file:line:column: key 'table.key': ". See docs/harness.md for the walkthrough.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/runtime/session.h"
#include "engines/runtime/speculative.h"
#include "harness/lib/schedule.h"
#include "harness/lib/sut_llama_batch.h"
#include "harness/lib/task_eval.h"
#include "harness/schema/slo.h"

namespace cibench {

class ScenarioError : public Error {
 public:
  using Error::Error;
};

enum class Pattern { single_stream, server, offline, closed_loop, stepped };
const char* pattern_name(Pattern p);

// Classifier request shapes: each request at its own length (a batch padded to its longest), or
// every request padded to [classifier] pad_to.
enum class Shape { dynamic, padded };
const char* shape_name(Shape s);
// Throws Error naming the known shapes.
Shape parse_shape(const std::string& name);

// Where a key was written (for errors raised after parsing, e.g. a model that will not open).
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key;
  // "file:line:column: key 'k': what"
  std::string message(const std::string& what) const;
};

struct AccuracySpec {
  bool enabled = false;
  std::string eval_set;           // text file (path, or relative to the shared folder)
  std::string reference_format = "f32";
  int max_tokens = 512;           // eval tokens scored
  int window = 128;               // tokens per teacher-forced window (context)
  std::optional<double> min_top1_agreement;
  std::optional<double> max_kl_mean;
  std::optional<double> max_kl_p99;
  std::optional<double> max_ppl_ratio;
  // Classifiers (labelled eval set): floors on task accuracy and on its drop vs the reference
  // (min_top1_agreement is the agreement of the predictions with the reference's), and the
  // paired bootstrap of the intervals.
  std::optional<double> max_accuracy_drop;  // reference accuracy - variant accuracy <= this
  std::optional<double> min_task_accuracy;
  // Decoders: a task file of the user's (JSONL: multiple choice, HellaSwag or generation;
  // harness/lib/task_eval.h), read when the scenario is parsed; scored on every variant and the
  // reference, the metric then stored as task_accuracy (max_accuracy_drop and min_task_accuracy
  // are floors on it).
  std::string task;                       // the path as resolved ("" = none)
  std::shared_ptr<const TaskSet> task_set;
  std::string task_metric;                // acc_norm | acc | exact_match | contains
  int task_max_new_tokens = 32;           // generation: most tokens per item
  int task_limit = 0;                     // the first N items only (0 = all)
  // Every floor set above, as the schema's typed floors (stored with the run for the readers).
  std::vector<QualityFloor> floors() const;
  int bootstrap_resamples = 1000;
  uint64_t bootstrap_seed = 1;
};

// [classifier]: how an encoder classifier is served (BERT/DistilBERT models only).
struct ClassifierSpec {
  int pad_to = 128;          // shape "padded": every request (and batch) is padded to this length
  double max_wait_ms = 0;    // harness-formed batches: longest wait for a batch to fill
  int64_t cache_entries = 1024;  // cache = true: the LRU's entry limit (0 = none)
  int64_t cache_bytes = 0;       // the LRU's byte limit (0 = none)
};

// One point of the variant matrix.
struct Variant {
  int index = 0;
  // A row of the weight-format table (engines/core/format.h), named once when the scenario was
  // parsed; never null.
  const FormatRow* format = &format_by_name("f32");
  std::string format_name() const { return format->name; }
  // Quantisation recipe applied to the FP32 weights before packing ("" = none: the source's
  // weights packed straight into the format): "gptq" or "smoothquant:alpha=0.8".
  std::string recipe;
  double sparsity = 0;
  int threads = 1;
  int workers = 1;
  KvMode kv_mode = KvMode::preallocated;
  std::optional<Isa> isa;  // nullopt: "auto", the level in force
  bool pin_threads = false;
  // Classifiers: request shape, harness-formed batch size, result cache.
  Shape shape = Shape::dynamic;
  int max_batch = 1;
  bool cache = false;
  int64_t cache_entries = 0;  // entry limit when cache (0 = none)
  int64_t cache_bytes = 0;    // byte limit when cache (0 = none)
  // Decoders: who batches. none = one sequence per worker (max_batch > 1 then means harness-formed
  // batches, as for classifiers); static / continuous = the SUT's engine thread batches up to
  // max_batch sequences (sut_llama_batch.h). The rest apply to static / continuous only.
  BatchingMode batching = BatchingMode::none;
  int max_tokens_per_step = 256;
  int64_t kv_pool_tokens = 0;  // 0 = max_batch x the context
  KvPolicy kv_policy = KvPolicy::queue;  // continuous only
  double batch_timeout_ms = 0;           // static only
  bool prefix_cache = false;             // static / continuous: KV blocks shared by prompt prefix
  // Decoders, batching none: speculative decoding with this drafter, draft_tokens (k) per
  // verification (0 when off). spec_baseline: the index of the variant of the same matrix point
  // with speculative "off" (-1: none in the matrix), the reference of the speed-up.
  DrafterSpec drafter;
  int draft_tokens = 0;
  int spec_baseline = -1;
  bool speculative() const { return drafter.kind != DrafterSpec::Kind::off; }
  std::string label() const;  // "int4_g32 gptq t2 w1 kv=paged isa=avx2" (defaults omitted)
};

// [calibration]: the text the recipes calibrate on (disjoint from the accuracy eval set).
struct CalibrationSpec {
  bool enabled = false;
  std::string slice;  // "FILE:A-B" (path resolved)
  int samples = 64;   // token windows
  int seq_len = 128;  // tokens per window
  uint64_t seed = 1234;
};

// Why a (recipe, format) pair of the matrix is not run ("" = it is valid). Recipe "" is none;
// `quantized_source`: the model is a .cbq (its weights, activation scales included, are made).
std::string recipe_skip_reason(const std::string& recipe, const FormatRow& format,
                               bool quantized_source = false);

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  std::string question;

  // [model]
  std::string model;       // path, synthetic:NAME[@seed], or sut:null / sut:sleep?ms=..
  std::string tokenizer;   // optional tokenizer path (real models)
  SourcePos model_pos;
  // For a quantised model file (.cbq) as the source: the FP32 model it was made from (its content
  // hash must match the file's; it also provides the accuracy reference).
  std::string source_model;

  // [matrix] (cross product, in this nesting order, format outermost)
  // Rows of the format table (parsed once; never null).
  std::vector<const FormatRow*> formats{&format_by_name("f32")};
  std::vector<std::string> recipes{""};  // "" = no recipe
  std::vector<double> sparsities{0.0};
  std::vector<int> threads{1};
  std::vector<int> workers{1};
  // Parsed once here, with the key's file:line:column in key_pos for errors raised later.
  std::vector<KvMode> kv_modes{KvMode::preallocated};
  std::vector<std::optional<Isa>> isas{std::nullopt};
  std::vector<bool> pin_threads{false};
  // "WxT" pairs (workers x threads per worker), e.g. ["1x2", "2x1"]: the same cores split two
  // ways; replaces the threads x workers cross product when given.
  std::vector<std::pair<int, int>> layouts;
  std::vector<Shape> shapes{Shape::dynamic};
  std::vector<int> max_batches{1};
  std::vector<int64_t> caches{0};  // 0 = off, -1 = on with [classifier] limits, N = on with N entries
  // Decoder batching (sut_llama_batch.h). A key that only one batching mode reads is not crossed
  // with the others (none takes the first value of each, static the first kv_policy, continuous
  // the first batch_timeout_ms); with batching given, its "none" variants run max_batch 1.
  std::vector<BatchingMode> batchings{BatchingMode::none};
  bool batching_given = false;
  std::vector<int> max_tokens_per_steps{256};
  std::vector<int64_t> kv_pool_tokens{0};
  std::vector<KvPolicy> kv_policies{KvPolicy::queue};
  std::vector<double> batch_timeouts_ms{0};
  std::vector<bool> prefix_caches{false};
  // Speculative decoding (engines/runtime/speculative.h): drafters ("off" = plain decoding) and
  // draft tokens per verification; "off" is not crossed with draft_tokens.
  std::vector<DrafterSpec> drafters{DrafterSpec{}};
  std::vector<int> draft_tokens{4};
  ClassifierSpec classifier;

  // [workload]
  std::string workload_source = "synthetic";  // synthetic | eval
  std::string eval_set;                       // for workload_source = eval
  int64_t synthetic_samples = 1024;           // distinct synthetic prompts
  LengthDist prompt_tokens;
  LengthDist gen_tokens;
  // A shared system prompt: every prompt starts with the same shared_prefix_tokens tokens (one of
  // shared_prefixes different ones, sample s taking prefix s mod shared_prefixes) followed by the
  // sample's own prompt_tokens; 0 = none. Decoders only.
  int shared_prefix_tokens = 0;
  int shared_prefixes = 1;
  // Synthetic prompts: a random run of this many tokens repeated to the prompt's length (a
  // repetitive text, where prompt lookup finds its drafts); 0 = every token drawn.
  int prompt_repeat = 0;
  std::string sampling = "uniform";  // uniform | zipf | replay: which sample each query uses
  double zipf_s = 1.0;
  std::string replay;                // sampling = replay: file of sample indices

  // [load]
  Pattern pattern = Pattern::single_stream;
  double target_qps = 0;
  double burstiness = 1;          // server/stepped: Gamma gaps of this shape (1 = Poisson)
  int clients = 1;
  std::vector<double> rates_qps;  // stepped

  // [run]
  int64_t warmup_queries = 2;
  int64_t min_duration_ms = 1000;
  int64_t min_queries = 16;
  int64_t max_duration_ms = 60000;
  int64_t exact_sample_cap = 262144;

  // [seeds]
  uint64_t seed_arrivals = 1;
  uint64_t seed_samples = 2;
  uint64_t seed_lengths = 3;

  std::vector<Slo> slos;
  AccuracySpec accuracy;
  CalibrationSpec calibration;

  // [counters]
  bool counters_enabled = true;
  std::string counters_mode = "separate";  // separate (profiling pass) | same (timed run)
  int64_t profile_queries = 4;

  // Canonical text of the effective scenario (after --set) and its hash (hex FNV-1a 64).
  std::string canonical;
  std::string hash;
  std::vector<std::string> overrides;

  // Where each key was written ("matrix.kv_mode" -> file:line:column), for later errors.
  std::map<std::string, SourcePos> key_pos;
  SourcePos pos(const std::string& key) const;

  // The runnable points of the matrix (format, recipe, sparsity, ... in that nesting order);
  // (recipe, format) pairs with a recipe_skip_reason are left out and listed by skipped().
  std::vector<Variant> variants() const;
  std::vector<std::string> skipped() const;  // "smoothquant x int4_g32: <reason>"
  bool is_test_sut() const { return model.rfind("sut:", 0) == 0; }
};

// Limits checked before the TOML parser sees a text (it recurses on nesting): the size of a
// scenario file, the dotted parts of a key or table header, and the nesting of arrays and inline
// tables. Throws ScenarioError "ORIGIN:line:column: what" past them.
constexpr size_t kMaxScenarioBytes = 1 << 20;
constexpr int kMaxKeySegments = 16;
constexpr int kMaxValueNesting = 32;
// A list value (matrix, rates) holds at most this many entries; a suite runs at most this many
// variant steps (the matrix's cross product times the stepped rates).
constexpr int kMaxListValues = 256;
// load.burstiness: the Gamma gaps' coefficient of variation is 1 / sqrt(burstiness), so 0.01 is
// gaps 10 times as variable as Poisson's.
constexpr double kMinBurstiness = 0.01;
constexpr double kMaxBurstiness = 1000;
constexpr double kMaxSuiteSteps = 4096;
constexpr double kMaxScheduledQueries = 1e7;
void check_toml_limits(const std::string& text, const std::string& origin);

// Parses a file, applying --set overrides ("table.key=value"; value is TOML, or a bare string).
// Throws ScenarioError ("file:line:column: key 'k': message").
Scenario parse_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});
Scenario parse_scenario_text(const std::string& text, const std::string& path,
                             const std::vector<std::string>& overrides = {});

// The folder used for relative eval-set paths: CIBENCH_SHARED or the configured shared folder.
std::string shared_folder();
// Resolves a data path: absolute or existing relative paths as is, else under shared_folder().
std::string resolve_data_path(const std::string& p);

// "FILE" or "FILE:A-B" with FILE resolved as resolve_data_path does.
std::string resolve_slice_path(const std::string& spec);
// True for a path naming a quantised model file (".cbq").
bool is_quantized_model_path(const std::string& p);

// FNV-1a 64-bit of a string, as 16 hex digits.
std::string fnv1a_hex(const std::string& s);

}  // namespace cibench
