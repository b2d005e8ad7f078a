#include "harness/lib/sut_bert.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "harness/lib/schedule.h"

namespace cibench {

namespace fs = std::filesystem;

int ClassifierInputs::longest() const {
  size_t m = 0;
  for (const auto& s : ids) m = std::max(m, s.size());
  return static_cast<int>(m);
}

void ClassifierInputs::encode(int64_t s, std::vector<int>& out) const {
  CIBENCH_CHECK(s >= 0 && s < size(), "classifier: sample ", s, " outside [0, ", size(), ")");
  // Sentences are tokenized inside the timed service; a synthetic workload has ids only (a model
  // folder with a vocabulary but no eval set), which the service uses as they are.
  if (tokenizer && !texts.empty()) out = tokenizer->encode(texts[static_cast<size_t>(s)], max_length);
  else out = ids[static_cast<size_t>(s)];
}

// ---- BertSut ----

struct BertSut::Worker {
  std::unique_ptr<BertSession> session;
  std::vector<std::vector<int>> seq;  // per batch slot
  std::vector<int> pending;           // slots that missed the cache
  std::vector<int> ids;               // (batch, len)
  std::vector<uint8_t> mask;
  std::vector<float> logits;
};

BertSut::BertSut(std::shared_ptr<const BertModel> model, std::shared_ptr<const ClassifierInputs> inputs,
                 const BertSutOptions& o)
    : model_(std::move(model)), in_(std::move(inputs)), o_(o) {
  CIBENCH_CHECK(o_.workers >= 1 && o_.threads >= 1 && o_.max_batch >= 1, "classifier SUT: workers, threads and max_batch must be >= 1");
  CIBENCH_CHECK(o_.shape != Shape::padded || (o_.pad_to >= 2 && o_.pad_to <= model_->config.max_length()),
                "classifier SUT: pad_to ", o_.pad_to, " outside [2, ", model_->config.max_length(), "] (the model's positions)");
  if (o_.cache) cache_ = std::make_unique<ResultCache>(o_.cache_entries, o_.cache_bytes);
  workers_.resize(static_cast<size_t>(o_.workers));
}

BertSut::~BertSut() = default;

SutInfo BertSut::info() const {
  SutInfo i;
  i.description = str("BERT classifier (", bert_arch_name(model_->config.arch), ", ", model_->build.describe(), "), ",
                      o_.workers, " worker(s) x ", o_.threads, " thread(s), shape ", shape_name(o_.shape),
                      o_.shape == Shape::padded ? str(" ", o_.pad_to) : std::string(), ", batch <= ", o_.max_batch,
                      o_.cache ? ", result cache" : "");
  i.isa_used = isa_name(o_.isa >= 0 ? static_cast<Isa>(o_.isa) : active_isa());
  i.weight_bytes = static_cast<int64_t>(model_->weight_bytes());
  i.repacked_weight_bytes = static_cast<int64_t>(model_->repacked_bytes());
  i.weight_conversion_reason = "classifier sources store float weights only";
  i.pinning = o_.pin_threads ? "compact" : "none";
  return i;
}

void BertSut::start_worker(int w) {
  auto wk = std::make_unique<Worker>();
  BertSessionOptions so;
  so.threads = o_.threads;
  so.pin_threads = o_.pin_threads;
  so.isa = o_.isa;
  so.max_batch = o_.max_batch;
  // Scratch for the longest sample (every sample's ids are known up front), not the model's
  // positions: ModernBERT's 8192 would ask 256 MiB of attention scores per thread.
  so.max_length = o_.shape == Shape::padded ? o_.pad_to : std::min(model_->config.max_length(), std::max(2, in_->longest()));
  wk->session = std::make_unique<BertSession>(*model_, so);
  wk->seq.resize(static_cast<size_t>(o_.max_batch));
  workers_[static_cast<size_t>(w)] = std::move(wk);
}

void BertSut::stop_worker(int w) { workers_[static_cast<size_t>(w)].reset(); }

void BertSut::issue(int w, const Query& q, QueryContext& ctx) {
  QueryContext* c = &ctx;
  issue_batch(w, &q, &c, 1);
}

namespace {
int argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }
}  // namespace

void BertSut::issue_batch(int w, const Query* qs, QueryContext* const* ctxs, int n) {
  Worker& wk = *workers_[static_cast<size_t>(w)];
  CIBENCH_CHECK(n >= 1 && n <= o_.max_batch, "classifier SUT: batch of ", n, " (max_batch ", o_.max_batch, ")");
  const int labels = model_->config.num_labels;
  ctxs[0]->phase(Phase::prefill);
  wk.pending.clear();
  for (int k = 0; k < n; ++k) {
    std::vector<int>& ids = wk.seq[static_cast<size_t>(k)];
    in_->encode(qs[k].sample_index, ids);
    if (o_.shape == Shape::padded && static_cast<int>(ids.size()) > o_.pad_to)
      throw Error(str("sample ", qs[k].sample_index, " has ", ids.size(), " tokens > pad_to ", o_.pad_to));
    if (cache_ && qs[k].index >= 0) {
      if (auto v = cache_->get(ResultCache::key_of(ids.data(), static_cast<int>(ids.size())))) {
        if (o_.on_result) o_.on_result(qs[k], argmax(v->data(), labels));
        ctxs[k]->complete();
        continue;
      }
    }
    wk.pending.push_back(k);
  }
  const int m = static_cast<int>(wk.pending.size());
  if (m == 0) return;
  const float* logits = nullptr;
  if (o_.shape == Shape::dynamic && m == 1) {
    const auto& ids = wk.seq[static_cast<size_t>(wk.pending[0])];
    logits = wk.session->classify(ids.data(), static_cast<int>(ids.size()));
  } else {
    int len = o_.pad_to;
    if (o_.shape == Shape::dynamic) {
      len = 0;
      for (int k : wk.pending) len = std::max(len, static_cast<int>(wk.seq[static_cast<size_t>(k)].size()));
    }
    wk.ids.assign(static_cast<size_t>(m) * static_cast<size_t>(len), in_->pad_id);
    wk.mask.assign(wk.ids.size(), 0);
    for (int j = 0; j < m; ++j) {
      const auto& ids = wk.seq[static_cast<size_t>(wk.pending[static_cast<size_t>(j)])];
      std::copy(ids.begin(), ids.end(), wk.ids.begin() + static_cast<std::ptrdiff_t>(j) * len);
      std::fill_n(wk.mask.begin() + static_cast<std::ptrdiff_t>(j) * len, ids.size(), uint8_t{1});
    }
    wk.logits.resize(static_cast<size_t>(m) * static_cast<size_t>(labels));
    wk.session->classify_batch(wk.ids.data(), wk.mask.data(), m, len, wk.logits.data());
    logits = wk.logits.data();
  }
  for (int j = 0; j < m; ++j) {
    const int k = wk.pending[static_cast<size_t>(j)];
    const float* row = logits + static_cast<ptrdiff_t>(j) * labels;
    if (cache_ && qs[k].index >= 0) {
      const auto& ids = wk.seq[static_cast<size_t>(k)];
      cache_->put(ResultCache::key_of(ids.data(), static_cast<int>(ids.size())), std::vector<float>(row, row + labels));
    }
    if (o_.on_result) o_.on_result(qs[k], argmax(row, labels));
    ctxs[k]->complete();
  }
}

std::optional<CacheStats> BertSut::cache_stats() const {
  if (!cache_) return std::nullopt;
  return cache_->stats();
}

// ---- ClassifierBench ----

ClassifierBench::ClassifierBench(const Scenario& sc) : sc_(sc) {
  try {
    src_ = open_bert_source(sc.model);
  } catch (const Error& e) {
    throw ScenarioError(sc.model_pos.message(e.what()));
  }
  auto in = std::make_shared<ClassifierInputs>();
  in->max_length = src_.config.max_length();
  in->pad_id = src_.config.pad_token_id;
  const bool synthetic = src_.container == "synthetic";
  // The tokenizer: model.tokenizer (a vocab.txt, tokenizer.json, sentencepiece.bpe.model, .gguf or a
  // Hugging Face folder), else the model's folder.
  std::string tok = sc.tokenizer;
  if (tok.empty() && !synthetic) tok = sc.model;
  if (!tok.empty()) {
    try {
      in->tokenizer = open_classifier_tokenizer(tok);
    } catch (const Error& e) {
      throw ScenarioError(sc.pos(sc.tokenizer.empty() ? "model.source" : "model.tokenizer").message(e.what()));
    }
    if (in->tokenizer->vocab_size() > src_.config.vocab_size)
      throw ScenarioError(sc.pos("model.tokenizer").message(str("the vocabulary has ", in->tokenizer->vocab_size(),
                                                                " pieces, the model ", src_.config.vocab_size)));
    // Fewer pieces than embedding rows: said, and stored with the run.
    if (const std::string w = vocab_size_warning(sc.tokenizer.empty() ? sc.model : sc.tokenizer,
                                                 in->tokenizer->vocab_size(), src_.config.vocab_size);
        !w.empty())
      warnings_.push_back(w);
  }
  if (sc.workload_source == "eval") {
    if (!in->tokenizer)
      throw ScenarioError(sc.pos("workload.source").message("sentences need the classifier's vocabulary: set model.tokenizer"));
    std::vector<LabelledText> rows;
    try {
      rows = read_labelled_sentences(sc.eval_set);
    } catch (const Error& e) {
      throw ScenarioError(sc.pos("workload.eval_set").message(e.what()));
    }
    if (rows.empty()) throw ScenarioError(sc.pos("workload.eval_set").message("no sentences in " + sc.eval_set));
    bool any_label = false;
    for (auto& r : rows) {
      in->ids.push_back(in->tokenizer->encode(r.text, in->max_length));
      in->texts.push_back(std::move(r.text));
      in->labels.push_back(r.label);
      any_label |= r.label >= 0;
    }
    if (!any_label) in->labels.clear();
    for (int l : in->labels)
      if (l >= src_.config.num_labels)
        throw ScenarioError(sc.pos("workload.eval_set").message(str("label ", l, " >= the model's ", src_.config.num_labels, " labels")));
  } else {  // seeded random ids, lengths from workload.prompt_tokens ([CLS] and [SEP] included)
    const int vocab = in->tokenizer ? in->tokenizer->vocab_size() : src_.config.vocab_size;
    // Ids from 1000 up (past BERT's special and unused pieces) when the vocabulary is that large;
    // a small one (a test model) uses all of its ids.
    const int lo = vocab > 2000 ? 1000 : 0;
    for (int64_t s = 0; s < sc.synthetic_samples; ++s) {
      const int len = static_cast<int>(std::clamp<int64_t>(
          sc.prompt_tokens.draw(hash3(sc.seed_lengths, 0xb5, static_cast<uint64_t>(s)), hash3(sc.seed_lengths, 0xb6, static_cast<uint64_t>(s))),
          2, in->max_length));
      std::vector<int> ids(static_cast<size_t>(len));
      for (int i = 0; i < len; ++i)
        ids[static_cast<size_t>(i)] = lo + static_cast<int>(hash3(sc.seed_samples, static_cast<uint64_t>(s), static_cast<uint64_t>(i)) %
                                                            static_cast<uint64_t>(vocab - lo));
      in->ids.push_back(std::move(ids));
    }
  }
  bool padded = false;
  for (const Shape s : sc.shapes) padded |= s == Shape::padded;
  if (padded) {
    if (sc.classifier.pad_to > src_.config.max_length())
      throw ScenarioError(sc.pos("classifier.pad_to").message(str("pad_to ", sc.classifier.pad_to, " > the model's ",
                                                                  src_.config.max_length(), " positions")));
    if (in->longest() > sc.classifier.pad_to)
      throw ScenarioError(sc.pos("classifier.pad_to").message(str("the longest sample has ", in->longest(),
                                                                  " tokens > pad_to ", sc.classifier.pad_to, " (padding never truncates)")));
  }
  for (const auto& rc : sc.recipes)
    if (!rc.empty())
      throw ScenarioError(sc.pos("matrix.recipe").message(
          "quantisation recipes are not applied to classifier scenarios yet (cibench bert-recipes runs them on encoders); remove matrix.recipe"));
  inputs_ = std::move(in);
}

std::shared_ptr<const BertModel> ClassifierBench::model(const std::string& format, double sparsity) {
  const std::string key = str(format, "/", sparsity);
  if (auto it = models_.find(key); it != models_.end()) return it->second;
  const std::string ref = str(sc_.accuracy.reference_format, "/", 0);
  for (auto it = models_.begin(); it != models_.end();) it = it->first == ref ? std::next(it) : models_.erase(it);
  BertBuildOptions bo;
  bo.format = format;
  bo.sparsity = sparsity;
  auto m = std::make_shared<const BertModel>(build_bert(src_, bo));
  models_[key] = m;
  return m;
}

void ClassifierBench::keep_only(const std::string& format, double sparsity) {
  const std::string key = str(format, "/", sparsity);
  std::erase_if(models_, [&](const auto& e) { return e.first != key; });
}

BertSutOptions ClassifierBench::sut_options(const Variant& v) const {
  BertSutOptions o;
  o.workers = v.workers;
  o.threads = v.threads;
  o.pin_threads = v.pin_threads;
  o.isa = v.isa ? static_cast<int>(*v.isa) : -1;
  o.shape = v.shape;
  o.pad_to = sc_.classifier.pad_to;
  o.max_batch = v.max_batch;
  o.cache = v.cache;
  o.cache_entries = v.cache_entries;
  o.cache_bytes = v.cache_bytes;
  return o;
}

std::vector<int> ClassifierBench::predict_all(const BertModel& m, int threads) const {
  BertSessionOptions so;
  so.threads = threads;
  so.max_length = std::min(m.config.max_length(), std::max(2, inputs_->longest()));
  BertSession s(m, so);
  std::vector<int> out;
  out.reserve(static_cast<size_t>(inputs_->size()));
  for (const auto& ids : inputs_->ids) {
    const float* l = s.classify(ids.data(), static_cast<int>(ids.size()));
    out.push_back(argmax(l, m.config.num_labels));
  }
  return out;
}

void classifier_verdict(ClassifierAccuracy& a, const AccuracySpec& floor) {
  std::vector<std::string> fails, checks;
  auto check = [&](const std::string& what, bool ok, double v, double lim, const char* op) {
    checks.push_back(str(what, " ", v, " ", op, " ", lim));
    if (!ok) fails.push_back(str(what, " ", v, " not ", op, " ", lim));
  };
  if (floor.min_top1_agreement) check("agreement", a.agreement >= *floor.min_top1_agreement, a.agreement, *floor.min_top1_agreement, ">=");
  if (a.stats) {
    const ClassifierStats& s = *a.stats;
    if (floor.min_task_accuracy) check("accuracy", s.accuracy >= *floor.min_task_accuracy, s.accuracy, *floor.min_task_accuracy, ">=");
    if (floor.max_accuracy_drop && s.accuracy_delta) {
      const double drop = -*s.accuracy_delta;
      check(str("accuracy drop (95% CI of the delta [", s.delta_ci->lo, ", ", s.delta_ci->hi, "])"),
            drop <= *floor.max_accuracy_drop, drop, *floor.max_accuracy_drop, "<=");
    }
  } else if (floor.min_task_accuracy || floor.max_accuracy_drop) {
    fails.push_back("no labels in the eval set: task accuracy floors cannot be checked");
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string r;
    for (const auto& x : v) r += (r.empty() ? "" : "; ") + x;
    return r;
  };
  if (checks.empty() && fails.empty()) {
    a.verdict = "no floor";
    a.reasons = "no quality floor set in [accuracy]";
  } else if (fails.empty()) {
    a.verdict = "pass";
    a.reasons = join(checks);
  } else {
    a.verdict = "fail";
    a.reasons = join(fails);
  }
}

const ClassifierAccuracy& ClassifierBench::accuracy(const std::string& format, double sparsity, int threads) {
  const std::string key = str(format, "/", sparsity);
  if (auto it = acc_.find(key); it != acc_.end()) return it->second;
  if (!ref_pred_) ref_pred_ = predict_all(*model(sc_.accuracy.reference_format, 0.0), threads);
  const std::vector<int> pred = predict_all(*model(format, sparsity), threads);
  ClassifierAccuracy a;
  a.examples = static_cast<int64_t>(pred.size());
  a.eval_set = inputs_->texts.empty() ? str("synthetic ids (seed ", sc_.seed_samples, ")") : sc_.eval_set;
  const bool labelled = !inputs_->labels.empty() &&
                        std::find(inputs_->labels.begin(), inputs_->labels.end(), -1) == inputs_->labels.end();
  int64_t agree = 0;
  for (size_t i = 0; i < pred.size(); ++i) agree += pred[i] == (*ref_pred_)[i];
  a.agreement = static_cast<double>(agree) / static_cast<double>(pred.size());
  if (labelled) {
    a.kind = str(sc_.accuracy.reference_format, " reference on labelled eval set");
    a.stats = classifier_stats(pred, inputs_->labels, *ref_pred_,
                               BootstrapOptions{sc_.accuracy.bootstrap_resamples, sc_.accuracy.bootstrap_seed});
  } else {
    a.kind = src_.container == "synthetic" ? "fidelity on random weights" : str(sc_.accuracy.reference_format, " reference, unlabelled");
  }
  classifier_verdict(a, sc_.accuracy);
  return acc_.emplace(key, std::move(a)).first->second;
}

}  // namespace cibench
