// cibench task FILE.jsonl -m MODEL -z TOKENIZER [-f FORMAT ...] [--reference f32] [--metric M]
//   [--naive] [--json]: a decoder's task accuracy on the user's own items (harness/lib/task_eval.h,
// docs/tasks.md), per weight format: accuracy with its bootstrap 95 % interval, the delta
// against the reference format on the same items with its paired interval, McNemar's exact p,
// and items/s; --naive times the one-sequence-per-choice loop beside the shared-context scoring
// (alternating, same session options) and checks that both chose the same answers.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/models/tokenizer.h"
#include "harness/cli/command.h"
#include "harness/lib/task_eval.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_task {

struct Args {
  std::string file;
  std::string model;
  std::string tokenizer;
  std::vector<std::string> formats{"f32"};
  std::string reference = "f32";
  std::string metric;
  int threads = 1;
  int max_new_tokens = 32;
  int resamples = 1000;
  int limit = 0;
  bool naive = false;
  bool json = false;
  std::string per_item;  // JSONL of every item's scores per format
};

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", 100 * v);
  return b;
}

int run(const Args& a) {
  TaskSet set = read_task_file(a.file);
  if (a.limit > 0 && static_cast<size_t>(a.limit) < set.items.size()) set.items.resize(static_cast<size_t>(a.limit));
  const std::vector<std::string> metrics = task_metrics(set.kind);
  const std::string metric = a.metric.empty() ? metrics.front() : a.metric;
  if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end())
    throw TaskError(str("--metric ", metric, ": a ", task_kind_name(set.kind), " task has ", join_metrics(metrics)));
  const LlamaSource src = open_llama_source(a.model);
  std::unique_ptr<Tokenizer> tok = open_tokenizer(a.tokenizer, src.config.vocab_size);
  SessionOptions so;
  so.threads = a.threads;
  const bool tty = isatty(STDERR_FILENO) && !a.json;
  auto score = [&](const std::string& format) {
    LlamaBuildOptions bo;
    bo.format = format;
    const LlamaModel m = build_llama(src, bo);
    TaskProgress progress;
    if (tty)
      progress = [&](size_t done, size_t total) {
        if (done % 10 == 0 || done == total) std::fprintf(stderr, "\r%s: %zu/%zu items", format.c_str(), done, total);
        if (done == total) std::fprintf(stderr, "\n");
      };
    TaskScores s = score_task(m, so, *tok, set, a.max_new_tokens, progress);
    if (!a.per_item.empty()) {
      std::ofstream out(a.per_item, std::ios::app);
      for (size_t i = 0; i < set.items.size(); ++i) {
        nlohmann::json r{{"format", format}, {"line", set.items[i].line}};
        if (set.kind == TaskKind::multiple_choice)
          r.update({{"answer", set.items[i].answer}, {"chosen", s.mc[i].chosen}, {"chosen_norm", s.mc[i].chosen_norm},
                    {"loglik", s.mc[i].loglik}});
        else
          r.update({{"target", set.items[i].target}, {"output", s.gen[i].output}, {"exact", s.gen[i].exact},
                    {"contains", s.gen[i].contains}});
        out << r.dump() << "\n";
      }
      if (!out) throw Error(str(a.per_item, ": cannot write"));
    }
    std::optional<TaskScores> naive;
    if (a.naive) naive = score_naive(m, so, *tok, set);
    return std::make_pair(std::move(s), std::move(naive));
  };
  auto [ref, ref_naive] = score(a.reference);
  const std::vector<int> ref_correct = ref.correct(metric, set);
  BootstrapOptions boot;
  boot.resamples = a.resamples;
  nlohmann::json j;
  j["file"] = a.file;
  j["format"] = set.format;
  j["items"] = set.items.size();
  j["metric"] = metric;
  TextTable t({"format", metric + " % [95% CI]", "delta vs " + a.reference + " [95% CI]", "McNemar p", "items/s",
               a.naive ? "naive items/s" : "tokens"});
  auto row = [&](const std::string& format, const TaskScores& s, const std::optional<TaskScores>& naive) {
    const TaskStats st = task_stats(s.correct(metric, set), format == a.reference ? std::vector<int>{} : ref_correct, boot);
    const auto& cs = st.stats;
    std::string delta = "-", p = "-";
    if (cs.accuracy_delta) {
      delta = (*cs.accuracy_delta >= 0 ? "+" : "") + pct(*cs.accuracy_delta) + " [" + pct(cs.delta_ci->lo) + ", " +
              pct(cs.delta_ci->hi) + "]";
      char b[32];
      std::snprintf(b, sizeof b, "%.3g", st.mcnemar_p);
      p = b;
    }
    char ips[32], nips[32];
    std::snprintf(ips, sizeof ips, "%.2f", s.items_per_s());
    std::snprintf(nips, sizeof nips, "%.2f", naive ? naive->items_per_s() : 0.0);
    t.add({format, pct(cs.accuracy) + " [" + pct(cs.accuracy_ci.lo) + ", " + pct(cs.accuracy_ci.hi) + "]", delta, p, ips,
           naive ? std::string(nips) : std::to_string(s.tokens)});
    nlohmann::json r{{"format", format},           {"accuracy", cs.accuracy},
                     {"accuracy_lo", cs.accuracy_ci.lo}, {"accuracy_hi", cs.accuracy_ci.hi},
                     {"items_per_s", s.items_per_s()}, {"tokens", s.tokens}, {"seconds", s.seconds}};
    if (cs.accuracy_delta)
      r.update({{"delta", *cs.accuracy_delta}, {"delta_lo", cs.delta_ci->lo}, {"delta_hi", cs.delta_ci->hi},
                {"mcnemar_p", st.mcnemar_p}, {"b", st.b}, {"c", st.c}});
    if (naive) {
      // Both loops must choose the same answers (the shared prefill changes the speed, not the scores).
      size_t same = 0;
      for (size_t i = 0; i < s.mc.size(); ++i) same += s.mc[i].chosen == naive->mc[i].chosen && s.mc[i].chosen_norm == naive->mc[i].chosen_norm;
      r.update({{"naive_items_per_s", naive->items_per_s()}, {"naive_seconds", naive->seconds},
                {"naive_tokens", naive->tokens}, {"naive_same_choices", same}});
      if (same != s.mc.size() && set.kind == TaskKind::multiple_choice)
        std::cerr << "cibench task: " << format << ": the naive loop chose differently on " << s.mc.size() - same
                  << " items (log-likelihoods within rounding of a tie)\n";
    }
    j["results"].push_back(r);
  };
  row(a.reference, ref, ref_naive);
  for (const auto& f : a.formats) {
    if (f == a.reference) continue;
    auto [s, naive] = score(f);
    row(f, s, naive);
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << a.file << ": " << set.items.size() << " " << set.format << " items, metric " << metric << ", "
            << a.threads << " thread" << (a.threads == 1 ? "" : "s") << "\n";
  t.print(std::cout);
  return 0;
}

RegisterCommand reg{Command{
    "task", "Score a decoder on a task file (JSONL: multiple choice, HellaSwag or generation) per weight format",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("file", a->file, "Task file (JSONL)")->required();
      sub.add_option("-m,--model", a->model, "Model (llama2.c .bin, GGUF, Hugging Face folder, synthetic:NAME)")->required();
      sub.add_option("-z,--tokenizer", a->tokenizer, "Tokenizer (tokenizer.bin, tokenizer.model, GGUF, folder)")->required();
      sub.add_option("-f,--format", a->formats, "Weight formats to score (the reference is always scored)");
      sub.add_option("--reference", a->reference, "Reference format the deltas are against")->capture_default_str();
      sub.add_option("--metric", a->metric, "acc_norm or acc (multiple choice), exact_match or contains (generation)");
      sub.add_option("-t,--threads", a->threads, "Threads")->check(CLI::Range(1, 1024))->capture_default_str();
      sub.add_option("--max-new-tokens", a->max_new_tokens, "Generation: most tokens per item")
          ->check(CLI::Range(1, 100000))->capture_default_str();
      sub.add_option("--resamples", a->resamples, "Bootstrap resamples")->check(CLI::Range(10, 1000000))->capture_default_str();
      sub.add_option("--limit", a->limit, "Score the first N items only")->check(CLI::Range(0, 100000000));
      sub.add_flag("--naive", a->naive, "Also time the one-sequence-per-choice loop, side by side");
      sub.add_flag("--json", a->json, "JSON on stdout");
      sub.add_option("--per-item", a->per_item, "Append every item's scores (per format) to this JSONL file");
      return [a]() { return run(*a); };
    }}};

}  // namespace cmd_task
}  // namespace cibench::cli
