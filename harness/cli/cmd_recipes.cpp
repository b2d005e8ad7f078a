// cibench recipes: compares quantisation recipes on one model and one evaluation slice, against
// the FP32 build teacher-forced on the same held-out tokens; calibration and evaluation slices
// must not share a document. Prints a Markdown table (KL mean/p99, top-1 agreement, perplexity
// and its ratio, calibration output error vs RTN, quantisation time, teacher-forced tokens/s).
// With --sparsities it runs the pruning sweep instead: every --prune-formats format at every
// sparsity (magnitude pruning with the format's pattern, no calibration), accuracy against FP32
// and decode speed against the dense unpruned f32 build, timed alternately in the same process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/models/llama.h"
#include "engines/runtime/session.h"
#include "engines/models/tokenizer.h"
#include "engines/quant/calibration.h"
#include "engines/core/prune.h"
#include "engines/quant/recipe.h"
#include "engines/quant/recipe_eval.h"
#include "harness/cli/command.h"
#include "harness/lib/recipe_results.h"
#include "harness/lib/run_record.h"
#include "harness/lib/task_eval.h"
#include "harness/lib/variant_result.h"

namespace cibench::cli {
namespace cmd_recipes {

struct RecipesArgs {
  std::string model, tokenizer, calib, eval;
  std::string variants =
      "rtn:int4_g32,awq:int4_g32,gptq:int4_g32,rtn:int4_g64,awq:int4_g64,gptq:int4_g64,"
      "rtn:int8,awq:int8,gptq:int8,rtn:w8a8,smoothquant:w8a8";
  int samples = 64, seq_len = 128, eval_tokens = 4096, window = 128, threads = 1;
  unsigned long long seed = 1234;
  double sparsity = 0;
  std::string sparsities;  // pruning sweep: "0.5,0.7,0.8,0.9"
  std::string prune_formats = "f32,f32_sparse,int8,int8_sparse";
  int speed_tokens = 256, speed_reps = 5;
  std::string db;  // also store every row in this results database
  std::string task, task_metric;  // --task FILE.jsonl: every recipe also scored on the user's items
  int task_max_new_tokens = 32;
};

// --task: the items, the metric, and the FP32 build's outcomes on them (the reference of every
// recipe's delta).
struct TaskRef {
  TaskSet set;
  std::string metric;
  std::vector<int> correct;
};

// One recipe's task outcome against the reference, as the store's columns and a table cell.
struct TaskCell {
  TaskOutcome t;
  std::string text;  // "41.0 [34.5, 48.5] -1.0 [-5.0, 2.5] p 0.79"
};

TaskCell task_cell(const TaskRef& ref, const LlamaModel& m, const Tokenizer& tok, int threads, int max_new,
                   bool is_reference) {
  SessionOptions so;
  so.threads = threads;
  const TaskScores sc = score_task(m, so, tok, ref.set, max_new);
  const TaskStats st = task_stats(sc.correct(ref.metric, ref.set), is_reference ? std::vector<int>{} : ref.correct);
  TaskCell c;
  c.t.file = ref.set.path;
  c.t.format = ref.set.format;
  c.t.metric = ref.metric;
  c.t.items = static_cast<int64_t>(ref.set.items.size());
  c.t.accuracy = st.stats.accuracy;
  c.t.accuracy_ci = st.stats.accuracy_ci;
  c.t.resamples = st.stats.resamples;
  c.t.items_per_s = sc.items_per_s();
  auto pct = [](double v) {
    char b[24];
    std::snprintf(b, sizeof b, "%.1f", 100 * v);
    return std::string(b);
  };
  c.text = pct(c.t.accuracy) + " [" + pct(c.t.accuracy_ci.lo) + ", " + pct(c.t.accuracy_ci.hi) + "]";
  if (!is_reference) {
    c.t.reference_accuracy = st.stats.reference_accuracy;
    c.t.delta = st.stats.accuracy_delta;
    c.t.delta_ci = st.stats.delta_ci;
    c.t.mcnemar_p = st.mcnemar_p;
    char p[24];
    std::snprintf(p, sizeof p, "%.3g", st.mcnemar_p);
    c.text += " | " + pct(*c.t.delta) + " [" + pct(c.t.delta_ci->lo) + ", " + pct(c.t.delta_ci->hi) + "] | " + p;
  } else {
    c.text += " | (the reference) | ";
  }
  return c;
}

// --db: the run of this command in the store (model provenance and the command line), or null.
std::unique_ptr<CommandRun> open_store(const RecipesArgs& a, const LlamaSource& src) {
  if (a.db.empty()) return nullptr;
  return std::make_unique<CommandRun>(a.db, "recipes", invocation(), a.model, model_fields(src));
}

// The columns of a row measured against the FP32 reference on the evaluation slice.
Fields quality_fields(const LmQuality& q, const LoadedSlice& es, int threads,
                      const std::optional<TaskOutcome>& task = std::nullopt) {
  AccuracyResult r;
  r.kind = "f32 reference on eval text";
  r.eval_set = es.slice.spec();
  r.tokens = q.positions;
  r.kl_mean = q.kl_mean;
  r.kl_p99 = q.kl_p99;
  r.top1_agreement = q.top1;
  r.ppl = q.ppl;
  r.ppl_ref = q.ppl_ref;
  r.ppl_ratio = q.ppl_ratio;
  r.verdict = "no floor";
  r.task = task;
  Fields f{{"threads", int64_t{threads}}, {"isa_used", std::string(isa_name(active_isa()))}};
  for (auto& x : accuracy_fields(r)) f.push_back(std::move(x));
  return f;
}

// Seconds for one greedy-free decode pass: `tokens` fed one per step (the decode path: one
// matrix-vector product per projection per token).
double decode_seconds(LlamaSession& s, const std::vector<int>& tokens) {
  using clock = std::chrono::steady_clock;
  s.reset();
  const auto t0 = clock::now();
  for (int t : tokens) s.step(t);
  return std::chrono::duration<double>(clock::now() - t0).count();
}

// Decode tokens/s of `m` and of `base`, timed alternately (m, base, m, base, ...) so that load
// on a shared machine hits both alike; each is the best (shortest) of `reps` passes.
std::pair<double, double> decode_tok_s(const LlamaModel& m, const LlamaModel& base,
                                       const std::vector<int>& tokens, int threads, int reps) {
  SessionOptions so;
  so.threads = threads;
  LlamaSession a(m, so), b(base, so);
  double ta = 1e30, tb = 1e30;
  decode_seconds(a, tokens);  // warm-up (caches, scratch)
  decode_seconds(b, tokens);
  for (int r = 0; r < reps; ++r) {
    ta = std::min(ta, decode_seconds(a, tokens));
    tb = std::min(tb, decode_seconds(b, tokens));
  }
  const double n = static_cast<double>(tokens.size());
  return {n / ta, n / tb};
}

int run_pruning(const RecipesArgs& a) {
  std::vector<double> sps{0.0};
  for (double x : parse_number_list(a.sparsities, "--sparsities")) {
    CIBENCH_CHECK(x > 0 && x < 1, "--sparsities: ", x, " is not in (0, 1)");
    sps.push_back(x);
  }
  const std::vector<std::string> formats = split_list(a.prune_formats);
  for (const std::string& f : formats) format_by_name(f);
  LlamaSource src = open_llama_source(a.model);
  auto tok = open_tokenizer(a.tokenizer, src.config.vocab_size);
  const LoadedSlice es = load_slice(TextSlice::parse(a.eval));
  const std::vector<int> eval = slice_tokens(es, *tok, a.eval_tokens);
  const LlamaModel fp32 = build_llama(src);
  const LmReference ref(fp32, eval, a.window, a.threads);
  const auto stored = open_store(a, src);
  const int n_speed = std::min<int>({a.speed_tokens, static_cast<int>(eval.size()), src.config.seq_len});
  const std::vector<int> speed(eval.begin(), eval.begin() + n_speed);

  std::printf("model %s (%s), isa %s, %d thread%s\n", src.origin.c_str(), src.content_hash.c_str(),
              isa_name(active_isa()), a.threads, a.threads == 1 ? "" : "s");
  std::printf("evaluation %s docs=%zu text=%s tokens=%zu window=%d\n", es.slice.spec().c_str(),
              es.docs.size(), es.hash.c_str(), eval.size(), a.window);
  std::printf("magnitude pruning of every projection (pattern of the format), no calibration; the head "
              "and embeddings stay f32\n");
  std::printf("decode speed: %d tokens one per step, best of %d passes, each build timed alternately with "
              "the dense unpruned f32 build\n\n", n_speed, a.speed_reps);
  std::printf("| format | sparsity | KL mean | KL p99 | top-1 | ppl ratio | weight MB | tok/s | f32 dense tok/s | speed ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& f : formats) {
    for (double sp : sps) {
      LlamaBuildOptions o;
      o.format = f;
      o.sparsity = sp;
      const LlamaModel m = build_llama(src, o);
      const LmQuality q = ref.compare(m);
      const auto [ts, tb] = decode_tok_s(m, fp32, speed, a.threads, a.speed_reps);
      std::printf("| %s | %.2f | %.5f | %.5f | %.4f | %.4f | %.3f | %.0f | %.0f | %.2f |\n", f.c_str(), sp,
                  q.kl_mean, q.kl_p99, q.top1, q.ppl_ratio,
                  static_cast<double>(m.streamed_bytes_per_token()) / 1e6, ts, tb, ts / tb);
      std::fflush(stdout);
      if (stored) {
        Fields row{{"format", f},
                   {"sparsity", sp},
                   {"weight_bytes", static_cast<int64_t>(m.weight_bytes())},
                   {"streamed_bytes_per_token", static_cast<int64_t>(m.streamed_bytes_per_token())},
                   {"output_tokens", int64_t{n_speed}},
                   {"repetitions", int64_t{a.speed_reps}},
                   {"decode_tokens_per_s", ts},
                   {"ref_decode_tokens_per_s", tb}};
        for (auto& x : quality_fields(q, es, a.threads)) row.push_back(std::move(x));
        stored->add(sp > 0 ? str(f, " sp", sp) : f, row);
      }
    }
  }
  if (stored) std::printf("\n%s\n", stored->finish().c_str());
  return 0;
}

int run_recipes(const RecipesArgs& a) {
  if (!a.sparsities.empty()) return run_pruning(a);
  using clock = std::chrono::steady_clock;
  const std::vector<RecipeSpec> specs = parse_variant_list(a.variants, a.sparsity);
  LlamaSource src = open_llama_source(a.model);
  auto tok = open_tokenizer(a.tokenizer, src.config.vocab_size);
  CIBENCH_CHECK(!a.calib.empty(), "cibench recipes: --calib FILE:A-B is required (except with --sparsities)");
  const LoadedSlice cs = load_slice(TextSlice::parse(a.calib));
  const LoadedSlice es = load_slice(TextSlice::parse(a.eval));
  check_disjoint(cs, es);
  const CalibrationSet calib = make_calibration(cs, *tok, a.samples, a.seq_len, a.seed);
  CalibrationOptions co;
  co.threads = a.threads;
  const auto t0 = clock::now();
  const CalibrationStats stats = collect_calibration(src, calib, co);
  const double calib_s = std::chrono::duration<double>(clock::now() - t0).count();
  const std::vector<int> eval = slice_tokens(es, *tok, a.eval_tokens);
  const LlamaModel fp32 = build_llama(src);
  const LmReference ref(fp32, eval, a.window, a.threads);
  const auto stored = open_store(a, src);
  const std::string calib_record =
      calibration_json(cs.slice.spec(), static_cast<int64_t>(cs.docs.size()), cs.hash, calib.samples,
                       calib.seq_len, calib.seed, calib.token_hash);

  std::printf("model %s (%s), isa %s, %d thread%s\n", src.origin.c_str(), src.content_hash.c_str(),
              isa_name(active_isa()), a.threads, a.threads == 1 ? "" : "s");
  std::printf("calibration %s (collected in %.2f s)\n", calib.describe().c_str(), calib_s);
  std::printf("evaluation %s docs=%zu text=%s tokens=%zu window=%d\n", es.slice.spec().c_str(),
              es.docs.size(), es.hash.c_str(), eval.size(), a.window);
  std::printf("projections quantised by each recipe; embeddings, norms and the head stay f32\n");
  std::optional<TaskRef> task;
  if (!a.task.empty()) {
    task.emplace();
    task->set = read_task_file(a.task);
    const std::vector<std::string> metrics = task_metrics(task->set.kind);
    task->metric = a.task_metric.empty() ? metrics.front() : a.task_metric;
    if (std::find(metrics.begin(), metrics.end(), task->metric) == metrics.end())
      throw TaskError(str("--task-metric ", task->metric, ": a ", task_kind_name(task->set.kind), " task has ",
                          join_metrics(metrics)));
    SessionOptions so;
    so.threads = a.threads;
    task->correct = score_task(fp32, so, *tok, task->set, a.task_max_new_tokens).correct(task->metric, task->set);
    std::printf("task %s: %zu %s items, metric %s (95%% bootstrap intervals; the delta against fp32 paired on the "
                "same items, McNemar's exact p)\n",
                a.task.c_str(), task->set.items.size(), task->set.format.c_str(), task->metric.c_str());
  }
  const std::string task_head = task ? " task " + task->metric + " % [95% CI] | delta vs fp32 [95% CI] | McNemar p |" : "";
  const std::string task_rule = task ? "---|---|---|" : "";
  std::printf("\n| recipe | format | params | KL mean | KL p99 | top-1 | ppl | ppl ratio | calib err | rtn calib err | quantise s | tok/s |%s\n",
              task_head.c_str());
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|%s\n", task_rule.c_str());
  struct Ranked {
    std::string name;
    double kl_mean;
    std::optional<TaskOutcome> t;
  };
  std::vector<Ranked> ranked;
  {
    const auto e0 = clock::now();
    const LmQuality q = ref.compare(fp32);
    const double es_s = std::chrono::duration<double>(clock::now() - e0).count();
    std::optional<TaskCell> tc;
    if (task) tc = task_cell(*task, fp32, *tok, a.threads, a.task_max_new_tokens, true);
    std::printf("| fp32 | f32 | | %.5f | %.5f | %.4f | %.4f | %.4f | | | | %.0f |%s\n", q.kl_mean,
                q.kl_p99, q.top1, q.ppl, q.ppl_ratio, static_cast<double>(q.positions) / es_s,
                tc ? (" " + tc->text + " |").c_str() : "");
    if (stored) {
      Fields row{{"format", std::string("f32")},
                 {"sparsity", 0.0},
                 {"weight_bytes", static_cast<int64_t>(fp32.weight_bytes())},
                 {"eval_tokens_per_s", static_cast<double>(q.positions) / es_s}};
      for (auto& x : quality_fields(q, es, a.threads, tc ? std::optional<TaskOutcome>(tc->t) : std::nullopt))
        row.push_back(std::move(x));
      stored->add("fp32 f32", row);
    }
  }
  for (const RecipeSpec& s : specs) {
    const auto q0 = clock::now();
    const RecipeOutput out = apply_recipe(src, s, &stats, a.threads);
    const LlamaModel m = build_llama(out.source, out.build);
    const double q_s = std::chrono::duration<double>(clock::now() - q0).count();
    const auto e0 = clock::now();
    const LmQuality q = ref.compare(m);
    const double e_s = std::chrono::duration<double>(clock::now() - e0).count();
    const std::optional<double> rel = mean_rel_err(out.matrices), rtn = mean_rel_err(out.matrices, true);
    std::string params = s.params_text();
    if (s.sparsity > 0)
      params += str(params.empty() ? "" : " ", "sparsity=", s.sparsity, " prune=",
                    s.prune_pattern.empty() ? prune_pattern_for_format(s.format) : s.prune_pattern);
    auto num = [](const std::optional<double>& x) {
      char b[32] = "";
      if (x) std::snprintf(b, sizeof b, "%.5f", *x);
      return std::string(b);
    };
    std::optional<TaskCell> tc;
    if (task) tc = task_cell(*task, m, *tok, a.threads, a.task_max_new_tokens, false);
    std::printf("| %s | %s | %s | %.5f | %.5f | %.4f | %.4f | %.4f | %s | %s | %.2f | %.0f |%s%s\n",
                s.recipe.c_str(), s.format.c_str(), params.c_str(), q.kl_mean, q.kl_p99, q.top1,
                q.ppl, q.ppl_ratio, num(rel).c_str(), num(rtn).c_str(), q_s,
                static_cast<double>(q.positions) / e_s, tc ? (" " + tc->text + " |").c_str() : "",
                out.off_grid ? str(" (", out.off_grid, " off-grid weights!)").c_str() : "");
    ranked.push_back({recipe_label(s), q.kl_mean, tc ? std::optional<TaskOutcome>(tc->t) : std::nullopt});
    std::fflush(stdout);
    if (stored) {
      Fields row = recipe_fields(s);
      row.emplace_back("calibration", calib_record);
      row.emplace_back("weight_bytes", static_cast<int64_t>(m.weight_bytes()));
      row.emplace_back("calib_rel_err", sql_opt(rel));
      row.emplace_back("rtn_calib_rel_err", sql_opt(rtn));
      row.emplace_back("quantize_s", q_s);
      row.emplace_back("off_grid_weights", out.off_grid);
      row.emplace_back("eval_tokens_per_s", static_cast<double>(q.positions) / e_s);
      for (auto& x : quality_fields(q, es, a.threads, tc ? std::optional<TaskOutcome>(tc->t) : std::nullopt))
        row.push_back(std::move(x));
      stored->add(recipe_label(s), row);
    }
  }
  if (task && !ranked.empty()) {
    // The recipes ranked by what they cost on the user's items, KL beside: the largest delta first,
    // ties broken by the lower KL.
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
      if (*x.t->delta != *y.t->delta) return *x.t->delta > *y.t->delta;
      return x.kl_mean < y.kl_mean;
    });
    std::printf("\nrecipes ranked by the task delta against fp32 (%s), KL beside\n\n", task->metric.c_str());
    std::printf("| rank | recipe | delta %% [95%% CI] | McNemar p | KL mean |\n|---|---|---|---|---|\n");
    int r = 0;
    for (const auto& x : ranked)
      std::printf("| %d | %s | %+.1f [%.1f, %.1f] | %.3g | %.5f |\n", ++r, x.name.c_str(), 100 * *x.t->delta,
                  100 * x.t->delta_ci->lo, 100 * x.t->delta_ci->hi, *x.t->mcnemar_p, x.kl_mean);
  }
  if (stored) std::printf("\n%s\n", stored->finish().c_str());
  return 0;
}

const RegisterCommand reg{
    {"recipes", "compare quantisation recipes against FP32 on held-out text (Markdown table)",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<RecipesArgs>();
       sub.add_option("-m,--model", a->model, "FP32 model")->required();
       sub.add_option("-z,--tokenizer", a->tokenizer, "tokenizer of the model")->required();
       sub.add_option("--calib", a->calib, "calibration slice FILE:A-B (required for recipes)");
       sub.add_option("--eval", a->eval, "evaluation slice FILE:A-B (disjoint from --calib)")->required();
       sub.add_option("--variants", a->variants, "comma-separated RECIPE:FORMAT[:NAME=VALUE...]")->capture_default_str();
       sub.add_option("--sparsity", a->sparsity, "prune this fraction before every recipe")->capture_default_str();
       sub.add_option("--sparsities", a->sparsities,
                      "pruning sweep instead of recipes: comma-separated fractions (e.g. 0.5,0.7,0.8,0.9); "
                      "--calib is not used");
       sub.add_option("--prune-formats", a->prune_formats, "formats of the pruning sweep")->capture_default_str();
       sub.add_option("--speed-tokens", a->speed_tokens, "decode tokens per timed pass (pruning sweep)")->capture_default_str();
       sub.add_option("--speed-reps", a->speed_reps, "timed passes per build, best kept (pruning sweep)")->capture_default_str();
       sub.add_option("--samples", a->samples, "calibration windows")->capture_default_str();
       sub.add_option("--seq-len", a->seq_len, "tokens per calibration window")->capture_default_str();
       sub.add_option("--seed", a->seed, "calibration sampling seed")->capture_default_str();
       sub.add_option("--eval-tokens", a->eval_tokens, "held-out tokens scored")->capture_default_str();
       sub.add_option("--window", a->window, "teacher-forced window (context) length")->capture_default_str();
       sub.add_option("-T,--threads", a->threads, "threads")->capture_default_str();
       sub.add_option("--task", a->task, "Also score every recipe on this task file (JSONL; docs/tasks.md)");
      sub.add_option("--task-metric", a->task_metric, "acc_norm or acc (multiple choice), exact_match or contains");
      sub.add_option("--task-max-new-tokens", a->task_max_new_tokens, "Generation tasks: most tokens per item")
          ->check(CLI::Range(1, 100000))->capture_default_str();
      sub.add_option("--db", a->db, "also store every row in this results database (the dashboard and reports read it)");
       return [a] { return run_recipes(*a); };
     }}};

}  // namespace cmd_recipes
}  // namespace cibench::cli
