// cibench classify: run a BERT-family classifier on sentences (a TSV with a `sentence` column,
// optionally `label`, or a text file with one sentence per line, or --text), printing the label
// and logits of each; or, with --bench, time batch-1 requests at fixed sequence lengths (or at
// the lengths of the input's sentences) and print p50/p99 latency. Times are taken here, around
// each call, never by the engine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/bert.h"
#include "engines/models/classifier_tokenizer.h"
#include "engines/models/wordpiece.h"
#include "harness/cli/command.h"
#include "harness/lib/build_info.h"
#include "harness/lib/metrics.h"
#include "harness/lib/sut_bert.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_classify {

namespace fs = std::filesystem;

struct ClassifyArgs {
  std::string model = "synthetic:distilbert-base";
  std::string vocab;  // default: vocab.txt beside the model
  std::string input;
  std::vector<std::string> texts;
  std::string format = "f32";
  std::vector<std::string> class_formats;
  double sparsity = 0.0;
  std::string isa;
  int threads = 1;
  bool pin = false;
  int max_length = 0;  // 0: 128, or the model's longest sequence when shorter
  int limit = 0;
  bool json = false;
  // --bench
  bool bench = false;
  std::vector<int> lengths = {16, 64, 128};
  std::vector<int> thread_list;
  int warmup = 5;
  int reps = 50;
  unsigned long long seed = 1;
};

struct Example {
  std::string text;
  int label = -1;  // -1: unknown
};

// A TSV with a header naming `sentence` (and optionally `label`), or one sentence per line.
std::vector<Example> read_examples(const std::string& path) {
  std::vector<Example> out;
  for (auto& r : read_labelled_sentences(path)) out.push_back(Example{std::move(r.text), r.label});
  if (out.empty()) throw FileError(path, "no sentences to classify (the file is empty, or holds only a header)");
  return out;
}

BertBuildOptions build_options(const ClassifyArgs& a) {
  if (!a.isa.empty()) set_active_isa(parse_isa(a.isa));
  BertBuildOptions b;
  b.format = a.format;
  b.sparsity = a.sparsity;
  for (const std::string& cf : a.class_formats) {
    const auto eq = cf.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == cf.size())
      throw Error(str("--format-class expects CLASS=FORMAT, got '", cf, "'"));
    b.class_format[cf.substr(0, eq)] = cf.substr(eq + 1);
  }
  return b;
}

std::string default_vocab(const std::string& model) {
  if (model.rfind("synthetic:", 0) == 0) return "";
  const fs::path p(model);
  const fs::path dir = fs::is_directory(p) ? p : p.parent_path();
  // BERT/DistilBERT: vocab.txt; RoBERTa, ModernBERT: tokenizer.json; XLM-R: sentencepiece.bpe.model.
  for (const char* name : {"vocab.txt", "tokenizer.json", "sentencepiece.bpe.model"})
    if (fs::exists(dir / name)) return (dir / name).string();
  return "";
}

std::string fmt_ms(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", ms);
  return b;
}

int run_bench(const ClassifyArgs& a, const BertModel& model,
              const std::vector<std::vector<int>>& inputs) {
  using clock = std::chrono::steady_clock;
  const BertConfig& c = model.config;
  std::vector<int> threads = a.thread_list.empty() ? std::vector<int>{a.threads} : a.thread_list;
  // Fixed lengths with seeded random ids, or the input's own tokenised sentences.
  struct Case {
    std::string name;
    std::vector<std::vector<int>> seqs;
  };
  std::vector<Case> cases;
  if (!inputs.empty()) {
    cases.push_back({"input", inputs});
  } else {
    uint64_t s = a.seed * 0x9e3779b97f4a7c15ull + 1;
    for (int len : a.lengths) {
      CIBENCH_CHECK(len >= 2 && len <= c.max_length(), "--lengths: ", len, " is outside 2..",
                    c.max_length());
      std::vector<int> ids(len);
      for (int& id : ids) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        id = 1000 + static_cast<int>(s % static_cast<uint64_t>(std::max(1, c.vocab_size - 1000)));
      }
      ids.front() = 101 % c.vocab_size;
      ids.back() = 102 % c.vocab_size;
      cases.push_back({std::to_string(len), {ids}});
    }
  }
  int max_len = 2;
  for (const Case& cs : cases)
    for (const auto& q : cs.seqs) max_len = std::max(max_len, static_cast<int>(q.size()));

  TextTable table({"model", "format", "isa", "threads", "seq_len", "requests", "p50_ms", "p99_ms",
                   "mean_ms"});
  for (int t : threads) {
    BertSessionOptions so;
    so.threads = t;
    so.pin_threads = a.pin;
    so.max_length = max_len;
    so.isa = static_cast<int>(active_isa());
    BertSession session(model, so);
    for (const Case& cs : cases) {
      const size_t n_seq = cs.seqs.size();
      const int reps = std::max<int>(a.reps, static_cast<int>(std::min<size_t>(n_seq, 100000)));
      for (int w = 0; w < a.warmup; ++w) {
        const auto& q = cs.seqs[static_cast<size_t>(w) % n_seq];
        session.classify(q.data(), static_cast<int>(q.size()));
      }
      std::vector<int64_t> ns;
      ns.reserve(reps);
      double tokens = 0;
      for (int r = 0; r < reps; ++r) {
        const auto& q = cs.seqs[static_cast<size_t>(r) % n_seq];
        const auto t0 = clock::now();
        session.classify(q.data(), static_cast<int>(q.size()));
        const auto t1 = clock::now();
        ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        tokens += static_cast<double>(q.size());
      }
      std::sort(ns.begin(), ns.end());
      double sum = 0;
      for (int64_t v : ns) sum += static_cast<double>(v);
      const double p50 = nearest_rank(ns, 50) / 1e6, p99 = nearest_rank(ns, 99) / 1e6;
      const double mean = sum / static_cast<double>(ns.size()) / 1e6;
      const std::string len_name = cs.name == "input" ? str("input (mean ", fmt_ms(tokens / reps), ")")
                                                      : cs.name;
      table.add({model.origin, model.build.describe(), isa_name(session.isa()), std::to_string(t),
                 len_name, std::to_string(reps), fmt_ms(p50), fmt_ms(p99), fmt_ms(mean)});
      if (a.json) {
        nlohmann::json j;
        j["model"] = model.origin;
        j["model_hash"] = model.content_hash;
        j["format"] = model.build.describe();
        j["isa"] = isa_name(session.isa());
        j["threads"] = t;
        j["batch"] = 1;
        if (cs.name == "input") {
          j["seq_len"] = nullptr;
          j["mean_seq_len"] = tokens / reps;
        } else {
          j["seq_len"] = std::stoi(cs.name);
        }
        j["requests"] = reps;
        j["warmup"] = a.warmup;
        j["latency_p50_ms"] = p50;
        j["latency_p99_ms"] = p99;
        j["latency_mean_ms"] = mean;
        j["cibench_commit"] = build_info().commit;
        std::cout << j.dump() << "\n";
      }
    }
  }
  if (!a.json) table.print(std::cout);
  return 0;
}

int run_classify(ClassifyArgs a) {
  const BertBuildOptions bo = build_options(a);
  const BertModel model = build_bert(open_bert_source(a.model), bo);
  const BertConfig& c = model.config;

  if (a.max_length == 0) a.max_length = std::min(128, c.max_length());
  std::vector<Example> examples;
  if (!a.input.empty()) examples = read_examples(a.input);
  for (const std::string& t : a.texts) examples.push_back({t, -1});
  if (a.limit > 0 && examples.size() > static_cast<size_t>(a.limit)) examples.resize(a.limit);
  CIBENCH_CHECK(a.max_length >= 2 && a.max_length <= c.max_length(), "--max-length ",
                a.max_length, " is outside 2..", c.max_length());

  std::vector<std::vector<int>> ids;
  if (!examples.empty()) {
    const std::string vocab = a.vocab.empty() ? default_vocab(a.model) : a.vocab;
    if (vocab.empty())
      throw Error(str("no vocabulary for ", a.model,
                      ": pass --vocab vocab.txt, tokenizer.json, sentencepiece.bpe.model or a .gguf"));
    // A vocab.txt picks up its folder's tokenizer_config.json (lower-casing, accents).
    const auto tok = open_classifier_tokenizer(vocab);
    CIBENCH_CHECK(tok->vocab_size() <= c.vocab_size, vocab, " has ", tok->vocab_size(),
                  " pieces but the model's vocabulary is ", c.vocab_size);
    if (const std::string w = vocab_size_warning(vocab, tok->vocab_size(), c.vocab_size); !w.empty())
      std::cerr << "cibench: warning: " << w << "\n";
    for (const Example& e : examples) ids.push_back(tok->encode(e.text, a.max_length));
  }
  if (a.bench) return run_bench(a, model, ids);
  CIBENCH_CHECK(!examples.empty(), "nothing to classify: give --input FILE or --text TEXT (or --bench)");

  BertSessionOptions so;
  so.threads = a.threads;
  so.pin_threads = a.pin;
  so.max_length = a.max_length;
  so.isa = static_cast<int>(active_isa());
  BertSession session(model, so);
  auto label_name = [&](int i) {
    return c.labels.empty() ? std::to_string(i) : c.labels[static_cast<size_t>(i)];
  };
  int labelled = 0, correct = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const float* lg = session.classify(ids[i].data(), static_cast<int>(ids[i].size()));
    const int pred = static_cast<int>(std::max_element(lg, lg + c.num_labels) - lg);
    if (examples[i].label >= 0) {
      ++labelled;
      correct += pred == examples[i].label;
    }
    if (a.json) {
      nlohmann::json j;
      j["index"] = i;
      j["label_id"] = pred;
      j["label"] = label_name(pred);
      j["logits"] = std::vector<float>(lg, lg + c.num_labels);
      j["tokens"] = ids[i].size();
      if (examples[i].label >= 0) j["expected_label_id"] = examples[i].label;
      std::cout << j.dump() << "\n";
    } else {
      std::cout << label_name(pred);
      for (int k = 0; k < c.num_labels; ++k) std::printf("\t%.6f", static_cast<double>(lg[k]));
      std::cout << "\t" << examples[i].text << "\n";
    }
  }
  if (a.json) {
    nlohmann::json j;
    j["summary"] = true;
    j["model"] = model.origin;
    j["model_hash"] = model.content_hash;
    j["format"] = model.build.describe();
    j["isa"] = isa_name(session.isa());
    j["threads"] = a.threads;
    j["sentences"] = examples.size();
    if (labelled > 0) {
      j["labelled"] = labelled;
      j["correct"] = correct;
      j["accuracy"] = static_cast<double>(correct) / labelled;
    } else {
      j["accuracy"] = nullptr;  // no labels: not measured
    }
    std::cout << j.dump() << "\n";
  } else if (labelled > 0) {
    std::fprintf(stderr, "cibench: %s [%s, isa %s]: accuracy %d/%d = %.4f\n", model.origin.c_str(),
                 model.build.describe().c_str(), isa_name(session.isa()), correct, labelled,
                 static_cast<double>(correct) / labelled);
  }
  return 0;
}

const RegisterCommand reg{
    {"classify", "classify sentences with a BERT-family encoder, or time it (--bench)",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<ClassifyArgs>();
       sub.add_option("-m,--model", a->model,
                      "Hugging Face BERT/DistilBERT/RoBERTa/XLM-R classifier folder, or synthetic:NAME[@seed] "
                      "(distilbert-base, bert-base, bert-mini, bert-tiny, distilbert-mini, roberta-base, "
                      "roberta-mini)")
           ->capture_default_str();
       sub.add_option("--vocab", a->vocab,
                      "vocab.txt or .gguf (WordPiece), tokenizer.json (RoBERTa), sentencepiece.bpe.model "
                      "(XLM-R); default: the one beside the model");
       sub.add_option("-i,--input", a->input,
                      "TSV with a header naming `sentence` (and `label`), or one sentence per line");
       sub.add_option("--text", a->texts, "a sentence to classify (repeatable)");
       sub.add_option("-f,--format", a->format, "weight format of the projections")
           ->capture_default_str();
       sub.add_option("--format-class", a->class_formats,
                      "per-class override CLASS=FORMAT (classes: attention, ffn); repeatable");
       sub.add_option("--sparsity", a->sparsity, "magnitude-prune this fraction of the projections")
           ->capture_default_str();
       sub.add_option("--isa", a->isa, "force an instruction-set level");
       sub.add_option("-T,--threads", a->threads, "threads")->capture_default_str();
       sub.add_flag("--pin", a->pin, "pin thread i to CPU i");
       sub.add_option("--max-length", a->max_length, "truncate to this many tokens ([CLS]/[SEP] included; default 128, or the model's longest "
                      "sequence when shorter)");
       sub.add_option("--limit", a->limit, "classify at most this many input sentences (0 = all)")
           ->check(CLI::Range(0, 1000000000));
       sub.add_flag("--json", a->json, "one JSON line per sentence (or per bench case) and a summary");
       sub.add_flag("--bench", a->bench,
                    "time batch-1 requests: at --lengths with random ids, or at the lengths of the "
                    "--input sentences");
       sub.add_option("--lengths", a->lengths, "sequence lengths for --bench")
           ->delimiter(',')
           ->capture_default_str();
       sub.add_option("--bench-threads", a->thread_list,
                      "thread counts for --bench (default: --threads)")
           ->delimiter(',');
       sub.add_option("--warmup", a->warmup, "untimed requests first")->capture_default_str();
       sub.add_option("--reps", a->reps,
                      "timed requests per case (with --input: at least one per sentence)")
           ->capture_default_str();
       sub.add_option("--seed", a->seed, "seed of the random ids for --lengths")->capture_default_str();
       return [a] { return run_classify(*a); };
     }}};

}  // namespace cmd_classify
}  // namespace cibench::cli
