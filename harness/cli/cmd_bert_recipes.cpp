// cibench bert-recipes: compares quantisation recipes and pruning on a BERT/DistilBERT
// classifier against its FP32 build on labelled evaluation sentences that never overlap the
// calibration sentences. One Markdown table: accuracy, its delta vs FP32 with a paired bootstrap
// 95 % interval (the same sentences resampled for both builds), macro F1, agreement with FP32,
// batch-1 latency p50 on the evaluation sentences and the speed ratio vs FP32 dense (both timed
// in the same passes, interleaved sentence by sentence), and a verdict against --max-drop.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/bert.h"
#include "engines/models/classifier_tokenizer.h"
#include "engines/models/wordpiece.h"
#include "engines/quant/bert_recipes.h"
#include "harness/cli/command.h"
#include "harness/lib/recipe_results.h"
#include "harness/lib/build_info.h"
#include "harness/lib/classifier_stats.h"
#include "harness/lib/metrics.h"
#include "harness/lib/run_record.h"
#include "harness/lib/sut_bert.h"
#include "harness/lib/variant_result.h"

namespace cibench::cli {
namespace cmd_bert_recipes {

namespace fs = std::filesystem;

struct BertRecipesArgs {
  std::string model, vocab, calib, eval;
  std::string variants =
      "rtn:int8,gptq:int8,rtn:w8a8,smoothquant:w8a8,rtn:int4_g32,awq:int4_g32,gptq:int4_g32,"
      "rtn:int4_g64,awq:int4_g64,gptq:int4_g64,rtn:int4_g128,awq:int4_g128,gptq:int4_g128";
  std::string sparsities = "0.5,0.7,0.8,0.9";
  std::string sparse_variants = "prune:f32,prune:f32_sparse,rtn:int8,rtn:int8_sparse,gptq:int8_sparse";
  double max_drop = 1.0;
  int resamples = 2000;
  unsigned long long boot_seed = 1;
  unsigned long long calib_seed = 1234;
  int reps = 2, warmup = 20, threads = 1, max_length = 128;
  std::string db;  // also store every row in this results database
};

std::string loadavg() {
  try {
    std::string s = read_file("/proc/loadavg");
    std::istringstream in(s);
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
  } catch (const std::exception&) {
    return "unknown";
  }
}

struct Timed {
  std::vector<int> pred;             // first pass
  std::vector<int64_t> ns, ref_ns;   // the variant's and FP32's timings (all passes)
};

// Runs `variant` and `fp32` batch-1 over every sentence, `reps` passes, alternating which goes
// first per sentence; the first `warmup` calls of each are not timed.
Timed run_interleaved(const BertModel& variant, const BertModel& fp32,
                      const std::vector<std::vector<int>>& seqs, const BertRecipesArgs& a) {
  using clock = std::chrono::steady_clock;
  int max_len = 2;
  for (const auto& q : seqs) max_len = std::max(max_len, static_cast<int>(q.size()));
  BertSessionOptions so;
  so.threads = a.threads;
  so.max_length = max_len;
  BertSession sv(variant, so), sr(fp32, so);
  const int nl = variant.config.num_labels;
  for (int w = 0; w < a.warmup; ++w) {
    const auto& q = seqs[static_cast<size_t>(w) % seqs.size()];
    sv.classify(q.data(), static_cast<int>(q.size()));
    sr.classify(q.data(), static_cast<int>(q.size()));
  }
  Timed t;
  auto timed = [&](BertSession& s, const std::vector<int>& q, std::vector<int64_t>& ns) {
    const auto t0 = clock::now();
    const float* lg = s.classify(q.data(), static_cast<int>(q.size()));
    const auto t1 = clock::now();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    return static_cast<int>(std::max_element(lg, lg + nl) - lg);
  };
  for (int rep = 0; rep < std::max(1, a.reps); ++rep)
    for (size_t i = 0; i < seqs.size(); ++i) {
      int p;
      if ((i + static_cast<size_t>(rep)) % 2 == 0) {
        p = timed(sv, seqs[i], t.ns);
        timed(sr, seqs[i], t.ref_ns);
      } else {
        timed(sr, seqs[i], t.ref_ns);
        p = timed(sv, seqs[i], t.ns);
      }
      if (rep == 0) t.pred.push_back(p);
    }
  return t;
}

double p50_ms(std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(nearest_rank(ns, 50)) / 1e6;
}

int run_bert_recipes(const BertRecipesArgs& a) {
  using clock = std::chrono::steady_clock;
  CIBENCH_CHECK(a.threads >= 1, "--threads must be >= 1");
  CIBENCH_CHECK(a.resamples >= 1000, "--resamples must be >= 1000, got ", a.resamples);
  CIBENCH_CHECK(a.max_drop >= 0, "--max-drop must be >= 0, got ", a.max_drop);
  std::vector<RecipeSpec> specs = parse_variant_list(a.variants, 0.0);
  for (double sp : parse_number_list(a.sparsities, "--sparsities")) {
    CIBENCH_CHECK(sp > 0 && sp < 1, "--sparsities: ", sp, " is outside (0, 1)");
    for (RecipeSpec& s : parse_variant_list(a.sparse_variants, sp)) specs.push_back(std::move(s));
  }
  const std::string load_start = loadavg();
  const BertSource src = open_bert_source(a.model);
  if (src.config.modern())
    throw Error(str("bert-recipes runs on BERT, DistilBERT and RoBERTa/XLM-R; ", src.origin,
                    " is a ModernBERT (pre-LayerNorm) classifier: compare its weight formats with "
                    "cibench classify --bench --format"));
  std::string vocab = a.vocab;
  if (vocab.empty()) {
    const fs::path p(a.model);
    vocab = (fs::is_directory(p) ? p : p.parent_path()).string();  // the folder's vocabulary
  }
  const auto tok_ptr = open_classifier_tokenizer(vocab);
  const ClassifierTokenizer& tok = *tok_ptr;
  CIBENCH_CHECK(tok.vocab_size() <= src.config.vocab_size, vocab, " has ", tok.vocab_size(),
                " pieces but the model's vocabulary is ", src.config.vocab_size);
  const LoadedSentences cs = load_sentences(SentenceSlice::parse(a.calib));
  const LoadedSentences es = load_sentences(SentenceSlice::parse(a.eval));
  check_disjoint(cs, es);
  CIBENCH_CHECK(a.max_length >= 2 && a.max_length <= src.config.max_length(), "--max-length ",
                a.max_length, " is outside 2..", src.config.max_length());
  auto encode = [&](const LoadedSentences& s) {
    std::vector<std::vector<int>> ids;
    for (const auto& e : s.items) ids.push_back(tok.encode(e.text, a.max_length));
    return ids;
  };
  const auto calib_ids = encode(cs);
  const auto eval_ids = encode(es);
  std::vector<int> gold;
  for (const auto& e : es.items) {
    if (e.label < 0 || e.label >= src.config.num_labels)
      throw FileError(es.slice.path, str("evaluation sentence without a label in 0..",
                                         src.config.num_labels - 1, ": \"", e.text, "\""));
    gold.push_back(e.label);
  }

  CalibrationOptions co;
  co.threads = a.threads;
  const auto c0 = clock::now();
  const CalibrationStats stats = collect_bert_calibration(src, calib_ids, co, a.calib_seed);
  const double calib_s = std::chrono::duration<double>(clock::now() - c0).count();
  const BertModel fp32 = build_bert(src);
  BootstrapOptions boot;
  boot.resamples = a.resamples;
  boot.seed = a.boot_seed;
  // --db: this command's run, with the accuracy-drop floor it judges by (in accuracy, not points).
  std::unique_ptr<CommandRun> stored;
  if (!a.db.empty())
    stored = std::make_unique<CommandRun>(a.db, "bert-recipes", invocation(), a.model, model_fields(src),
                                          std::vector<QualityFloor>{QualityFloor::make("max_accuracy_drop", a.max_drop / 100)});
  const std::string calib_record = nlohmann::json{{"slice", cs.slice.spec()},
                                                  {"sentences", static_cast<int64_t>(cs.items.size())},
                                                  {"text_hash", cs.text_hash},
                                                  {"rows_hash", cs.rows_hash},
                                                  {"max_length", a.max_length},
                                                  {"seed", a.calib_seed}}
                                       .dump();
  // The columns of a row: the accuracy against FP32 on the evaluation sentences, batch-1 p50s.
  auto row_fields = [&](const ClassifierStats& st, const std::string& verdict, const std::string& reasons,
                        double p50, double ref_p50, const BertModel& m) {
    ClassifierAccuracy acc;
    acc.kind = "f32 reference on labelled eval set";
    acc.eval_set = es.slice.spec();
    acc.examples = st.n;
    acc.stats = st;
    acc.agreement = st.agreement.value_or(1.0);
    acc.verdict = verdict;
    acc.reasons = reasons;
    Fields f{{"threads", int64_t{a.threads}},
             {"isa_used", std::string(isa_name(active_isa()))},
             {"queries", static_cast<int64_t>(eval_ids.size()) * std::max(1, a.reps)},
             {"latency_p50_ms", p50},
             {"ref_latency_p50_ms", ref_p50},
             {"weight_bytes", static_cast<int64_t>(m.weight_bytes())}};
    for (auto& x : accuracy_fields(acc)) f.push_back(std::move(x));
    return f;
  };

  std::printf("model %s (%s), isa %s, %d thread%s, cibench %s\n", src.origin.c_str(),
              src.content_hash.c_str(), isa_name(active_isa()), a.threads,
              a.threads == 1 ? "" : "s", build_info().commit.c_str());
  std::printf("calibration %s (statistics in %.2f s, reservoir seed %llu)\n", cs.describe().c_str(),
              calib_s, a.calib_seed);
  std::printf("evaluation %s\n", es.describe().c_str());
  std::printf("paired bootstrap: %d resamples, seed %llu; latency: batch 1, %d pass%s over the "
              "evaluation sentences after %d warm-up calls, each variant interleaved with FP32 "
              "sentence by sentence; load average at start %s\n",
              a.resamples, a.boot_seed, a.reps, a.reps == 1 ? "" : "es", a.warmup,
              load_start.c_str());
  std::printf("projections only; embeddings, LayerNorms, pooler and classifier stay f32\n\n");
  std::printf("| recipe | format | sparsity | params | accuracy | Δ acc (pts) [95 %% CI] | macro F1 "
              "| agree | p50 ms | FP32 p50 ms | speed | proj MB | calib err (rtn) | verdict |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");

  const Timed ft = run_interleaved(fp32, fp32, eval_ids, a);
  const std::vector<int>& ref = ft.pred;
  {
    const ClassifierStats s = classifier_stats(ref, gold, ref, boot);
    const double p = p50_ms(ft.ns);
    std::printf("| fp32 | f32 | 0 | | %.4f | 0 | %.4f | 1.0000 | %.3f | %.3f | 1.00 | %.2f | | reference |\n",
                s.accuracy, s.macro_f1, p, p50_ms(ft.ref_ns),
                static_cast<double>(fp32.projection_bytes()) / 1e6);
    std::fflush(stdout);
    if (stored) {
      Fields f{{"format", std::string("f32")}, {"sparsity", 0.0}};
      for (auto& x : row_fields(s, "pass", "the reference build", p, p50_ms(ft.ref_ns), fp32)) f.push_back(std::move(x));
      stored->add("fp32 f32", f);
    }
  }
  std::vector<std::string> unscaled;
  for (const RecipeSpec& spec : specs) {
    const BertRecipeOutput out = apply_bert_recipe(src, spec, &stats, a.threads);
    const BertModel m = build_bert(out.source, out.build);
    const Timed t = run_interleaved(m, fp32, eval_ids, a);
    const ClassifierStats s = classifier_stats(t.pred, gold, ref, boot);
    const double d = *s.accuracy_delta * 100, lo = s.delta_ci->lo * 100, hi = s.delta_ci->hi * 100;
    const char* verdict = d < -a.max_drop ? "fail" : lo >= -a.max_drop ? "pass" : "unclear";
    const double pv = p50_ms(t.ns), pr = p50_ms(t.ref_ns);
    const std::optional<double> rel = mean_rel_err(out.matrices), rtn = mean_rel_err(out.matrices, true);
    const std::string params = spec.params_text();
    const bool prune_only = spec.prune_only();
    char errbuf[64] = "";
    if (rel && (prune_only || !rtn))
      std::snprintf(errbuf, sizeof errbuf, "%.5f", *rel);
    else if (rel)
      std::snprintf(errbuf, sizeof errbuf, "%.5f (%.5f)", *rel, *rtn);
    std::printf("| %s | %s | %g | %s | %.4f | %+.2f [%+.2f, %+.2f] | %.4f | %.4f | %.3f | %.3f | "
                "%.2f | %.2f | %s | %s |%s\n",
                prune_only ? "prune" : spec.recipe.c_str(), spec.format.c_str(), spec.sparsity,
                params.c_str(), s.accuracy, d, lo, hi, s.macro_f1, *s.agreement, pv, pr, pr / pv,
                static_cast<double>(m.projection_bytes()) / 1e6, errbuf, verdict,
                out.off_grid ? str(" (", out.off_grid, " off-grid weights!)").c_str() : "");
    std::fflush(stdout);
    if (stored) {
      Fields f = recipe_fields(spec);
      f.emplace_back("calibration", calib_record);
      f.emplace_back("calib_rel_err", sql_opt(rel));
      f.emplace_back("rtn_calib_rel_err", prune_only ? sql_null() : sql_opt(rtn));
      f.emplace_back("off_grid_weights", out.off_grid);
      const std::string reasons =
          str("accuracy delta ", d, " points [", lo, ", ", hi, "] against a floor of -", a.max_drop,
              " points: ", verdict == std::string("pass") ? "the interval stays above it"
                           : verdict == std::string("fail") ? "the delta is below it"
                                                            : "the delta is within it, the interval reaches below");
      for (auto& x : row_fields(s, verdict, reasons, pv, pr, m)) f.push_back(std::move(x));
      stored->add(recipe_label(spec), f);
    }
    for (const std::string& u : out.unscaled_sites)
      if (std::find(unscaled.begin(), unscaled.end(), u) == unscaled.end()) unscaled.push_back(u);
  }
  std::printf("\nload average at end %s\n", loadavg().c_str());
  if (!unscaled.empty()) {
    std::string list;
    for (const auto& u : unscaled) list += (list.empty() ? "" : ", ") + u;
    std::printf("left unscaled by smoothquant/awq (input follows GELU, not foldable): %s\n",
                list.c_str());
  }
  std::printf("verdict: pass = the 95 %% CI of the delta stays above -%.2f points; fail = the "
              "delta itself is below it; unclear = the delta is within the floor but the CI "
              "reaches below\n",
              a.max_drop);
  if (stored) std::printf("%s\n", stored->finish().c_str());
  return 0;
}

const RegisterCommand reg{
    {"bert-recipes",
     "compare quantisation recipes and pruning on a BERT/DistilBERT classifier against FP32 on "
     "labelled sentences (Markdown table)",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<BertRecipesArgs>();
       sub.add_option("-m,--model", a->model, "FP32 Hugging Face BERT/DistilBERT classifier folder")
           ->required();
       sub.add_option("--vocab", a->vocab, "vocab.txt (default: beside the model)");
       sub.add_option("--calib", a->calib,
                      "calibration sentences: TSV[:perm=SEED][:A-B] (e.g. SST-2-val.tsv:perm=1234:0-128)")
           ->required();
       sub.add_option("--eval", a->eval,
                      "labelled evaluation sentences, disjoint from --calib (e.g. "
                      "SST-2-val.tsv:perm=1234:128-872)")
           ->required();
       sub.add_option("--variants", a->variants,
                      "dense variants RECIPE:FORMAT[:NAME=VALUE...], comma-separated")
           ->capture_default_str();
       sub.add_option("--sparsities", a->sparsities, "magnitude-pruning fractions (\"\" = none)")
           ->capture_default_str();
       sub.add_option("--sparse-variants", a->sparse_variants,
                      "variants run at every sparsity (prune:f32 / prune:f32_sparse = pruning alone)")
           ->capture_default_str();
       sub.add_option("--max-drop", a->max_drop, "quality floor: accuracy points below FP32")
           ->capture_default_str();
       sub.add_option("--resamples", a->resamples, "paired bootstrap resamples (>= 1000)")
           ->capture_default_str();
       sub.add_option("--boot-seed", a->boot_seed, "bootstrap seed")->capture_default_str();
       sub.add_option("--calib-seed", a->calib_seed, "seed of the calibration row reservoir")
           ->capture_default_str();
       sub.add_option("--reps", a->reps, "timed passes over the evaluation sentences")
           ->capture_default_str();
       sub.add_option("--warmup", a->warmup, "untimed calls before timing")->capture_default_str();
       sub.add_option("-T,--threads", a->threads, "threads")->capture_default_str();
       sub.add_option("--max-length", a->max_length, "truncate sentences to this many tokens")
           ->capture_default_str();
       sub.add_option("--db", a->db, "also store every row in this results database (the dashboard and reports read it)");
       return [a] { return run_bert_recipes(*a); };
     }}};

}  // namespace cmd_bert_recipes
}  // namespace cibench::cli
