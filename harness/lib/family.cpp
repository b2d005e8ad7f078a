// The three model families: Llama-family decoders, BERT/DistilBERT classifiers, test SUTs.
#include "harness/lib/family.h"

#include <map>

#include <nlohmann/json.hpp>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/quant/calibration.h"
#include "harness/lib/memory_check.h"
#include "harness/lib/run_record.h"
#include "harness/lib/sut_llama.h"
#include "harness/lib/sut_llama_spec.h"

namespace cibench {
namespace {

// Keys only a classifier implements, refused for the other families.
void refuse_classifier_keys(const Scenario& sc) {
  for (const Shape shape : sc.shapes)
    if (shape != Shape::dynamic)
      throw ScenarioError(sc.pos("matrix.shapes").message("padded shapes are implemented for BERT/DistilBERT classifiers"));
  for (int64_t c : sc.caches)
    if (c != 0) throw ScenarioError(sc.pos("matrix.cache").message("the result cache is implemented for BERT/DistilBERT classifiers"));
}

// Static and continuous batching are implemented for Llama-family decoders.
void refuse_batching_keys(const Scenario& sc) {
  for (BatchingMode m : sc.batchings)
    if (m != BatchingMode::none)
      throw ScenarioError(sc.pos("matrix.batching").message(
          str("batching \"", batching_name(m), "\" is implemented for Llama-family decoders (model.source a Llama model "
              "or synthetic:NAME)")));
}

// Speculative decoding is implemented for Llama-family decoders.
void refuse_speculative_keys(const Scenario& sc) {
  for (const DrafterSpec& d : sc.drafters)
    if (d.kind != DrafterSpec::Kind::off)
      throw ScenarioError(sc.pos("matrix.speculative").message(
          str("speculative decoding (", d.text(), ") is implemented for Llama-family decoders (model.source a Llama "
              "model or synthetic:NAME)")));
}

// ---- the harness's own SUTs (sut:null, sut:sleep:...) ------------------------------------------

class TestFamily : public ModelFamily {
 public:
  explicit TestFamily(const Scenario& sc) : sc_(sc) {
    refuse_classifier_keys(sc);
    refuse_batching_keys(sc);
    refuse_speculative_keys(sc);
    try {
      make_test_sut(sc.model);
    } catch (const Error& e) {
      throw ScenarioError(sc.model_pos.message(e.what()));
    }
  }
  Fields model_provenance() const override {
    return {{"model_hash", sql_null()}, {"model_container", std::string("test-sut")}, {"model_params", sql_null()}};
  }
  int64_t samples() const override { return sc_.synthetic_samples; }
  bool has_samples() const override { return sc_.synthetic_samples > 0; }
  std::string label(const Variant& v) const override { return str("t", v.threads, " w", v.workers); }
  void describe(const Variant&, Fields&) const override {}  // no format, sparsity or KV mode
  std::unique_ptr<SystemUnderTest> make_sut(const Variant&) override { return make_test_sut(sc_.model); }
  VariantQuality quality(const Variant&, int, const NoteFn&) override {
    VariantQuality q;
    q.unavailable = sc_.accuracy.enabled ? "test SUT: no model to score"
                                         : "accuracy not requested ([accuracy] absent or enabled = false)";
    return q;
  }

 private:
  const Scenario& sc_;
};

// ---- BERT / DistilBERT classifiers -------------------------------------------------------------

class BertFamily : public ModelFamily {
 public:
  explicit BertFamily(const Scenario& sc) : sc_(sc), bench_(sc) {
    refuse_batching_keys(sc);
    refuse_speculative_keys(sc);
    if (sc.shared_prefix_tokens > 0)
      throw ScenarioError(sc.pos("workload.shared_prefix_tokens").message(
          "a shared prompt prefix is implemented for decoders (classifier requests are whole sentences)"));
  }
  Fields model_provenance() const override {
    return model_fields(bench_.source());
  }
  std::vector<std::string> warnings() const override { return bench_.warnings(); }
  int64_t samples() const override { return static_cast<int64_t>(bench_.inputs()->size()); }
  void describe(const Variant& v, Fields& cfg) const override {
    cfg.emplace_back("format", v.format_name());
    cfg.emplace_back("sparsity", v.sparsity);
    cfg.emplace_back("kv_mode", std::string(kv_mode_name(v.kv_mode)));
    cfg.emplace_back("shape", std::string(shape_name(v.shape)));
    cfg.emplace_back("pad_to", v.shape == Shape::padded ? SqlValue(int64_t{sc_.classifier.pad_to}) : sql_null());
    cfg.emplace_back("cache_enabled", int64_t{v.cache});
    cfg.emplace_back("cache_limit_entries", v.cache && v.cache_entries > 0 ? SqlValue(v.cache_entries) : sql_null());
    cfg.emplace_back("cache_limit_bytes", v.cache && v.cache_bytes > 0 ? SqlValue(v.cache_bytes) : sql_null());
  }
  void release_builds_except(const Variant& v) override { bench_.keep_only(v.format_name(), v.sparsity); }
  std::unique_ptr<SystemUnderTest> make_sut(const Variant& v) override {
    return std::make_unique<BertSut>(bench_.model(v.format_name(), v.sparsity), bench_.inputs(), bench_.sut_options(v));
  }
  void measured(SystemUnderTest& sut, Fields& f, std::vector<std::string>& lines) override {
    // The result cache's counts of the timed run (the SUT is a BertSut: make_sut made it).
    const std::optional<CacheStats> cache = static_cast<BertSut&>(sut).cache_stats();
    if (!cache) return;
    f.emplace_back("cache_hits", cache->hits);
    f.emplace_back("cache_misses", cache->misses);
    f.emplace_back("cache_hit_rate", cache->hits + cache->misses ? SqlValue(cache->hit_rate()) : sql_null());
    f.emplace_back("cache_evictions", cache->evictions);
    f.emplace_back("cache_entries", cache->entries);
    f.emplace_back("cache_bytes", cache->bytes);
    f.emplace_back("cache_peak_bytes", cache->peak_bytes);
    lines.push_back(str("cache: ", cache->hits, " hits, ", cache->misses, " misses (hit rate ", cache->hit_rate(), "), ",
                        cache->entries, " entries, ", cache->bytes, " bytes"));
  }
  // The sentence's token count ([CLS] and [SEP] included).
  std::optional<int32_t> prompt_tokens(int64_t sample) const override {
    return static_cast<int32_t>(bench_.inputs()->ids[static_cast<size_t>(sample)].size());
  }
  VariantQuality quality(const Variant& v, int step, const NoteFn&) override {
    VariantQuality q;
    if (!sc_.accuracy.enabled) q.unavailable = "accuracy not requested ([accuracy] absent or enabled = false)";
    else if (step > 0) q.unavailable = "stored with step 0 of this variant";
    else q.classifier = &bench_.accuracy(v.format_name(), v.sparsity, v.threads);
    return q;
  }

 private:
  const Scenario& sc_;
  ClassifierBench bench_;
};

// ---- Llama-family decoders ---------------------------------------------------------------------

class LlamaFamily : public ModelFamily {
 public:
  explicit LlamaFamily(const Scenario& sc) : sc_(sc) {
    refuse_classifier_keys(sc);
    try {
      models_ = std::make_unique<LlamaModels>(sc.model, sc.source_model);
    } catch (const Error& e) {
      throw ScenarioError(sc.model_pos.message(e.what()));
    }
    check_quantized_file();
    open_draft_sources();
    open_tokenizer_and_prompts();
    prepare_calibration();
    if (sc.accuracy.enabled && !sc.accuracy.eval_set.empty() && !tokenizer_ && !models_->synthetic())
      throw ScenarioError(sc.pos("accuracy.eval_set").message("scoring eval text needs a tokenizer: set model.tokenizer"));
    try {
      format_by_name(sc.accuracy.reference_format);
    } catch (const Error& e) {
      throw ScenarioError(sc.pos("accuracy.reference_format").message(e.what()));
    }
    check_task();
    check_memory();
  }

  Fields model_provenance() const override {
    return model_fields(models_->source());
  }
  int64_t samples() const override { return prompts_->size(); }
  void describe(const Variant& v, Fields& cfg) const override {
    cfg.emplace_back("format", v.format_name());
    cfg.emplace_back("sparsity", v.sparsity);
    cfg.emplace_back("kv_mode", std::string(kv_mode_name(v.kv_mode)));
    const RecipeRecord rr = models_->record(v.format_name(), v.sparsity, v.recipe);
    auto text_or_null = [](const std::string& x) { return x.empty() ? sql_null() : SqlValue(x); };
    cfg.emplace_back("recipe", text_or_null(rr.recipe));
    cfg.emplace_back("recipe_params", text_or_null(rr.params_json));
    cfg.emplace_back("calibration", text_or_null(rr.calibration_json));
    cfg.emplace_back("quantized_file", text_or_null(rr.quantized_file));
    const bool batched = v.batching != BatchingMode::none;
    cfg.emplace_back("batching", std::string(batching_name(v.batching)));
    cfg.emplace_back("max_tokens_per_step", batched ? SqlValue(int64_t{v.max_tokens_per_step}) : sql_null());
    cfg.emplace_back("kv_pool_tokens", batched ? SqlValue(kv_pool_positions(v)) : sql_null());
    cfg.emplace_back("kv_policy", v.batching == BatchingMode::continuous ? SqlValue(std::string(kv_policy_name(v.kv_policy))) : sql_null());
    cfg.emplace_back("batch_timeout_ms", v.batching == BatchingMode::static_batch ? SqlValue(v.batch_timeout_ms) : sql_null());
    cfg.emplace_back("prefix_cache", batched ? SqlValue(int64_t{v.prefix_cache}) : sql_null());
    cfg.emplace_back("speculative", v.drafter.text());
    cfg.emplace_back("draft_tokens", v.speculative() ? SqlValue(int64_t{v.draft_tokens}) : sql_null());
  }
  void measured(SystemUnderTest& sut, Fields& f, std::vector<std::string>& lines) override {
    if (auto* sp = dynamic_cast<LlamaSpecSut*>(&sut)) {
      measured_speculative(*sp, f, lines);
    } else {
      f.emplace_back("spec_reason", std::string("speculative decoding off"));
      f.emplace_back("spec_speedup_reason", std::string("speculative decoding off"));
    }
    auto* b = dynamic_cast<LlamaBatchSut*>(&sut);
    if (!b) {
      f.emplace_back("batching_reason", std::string("batching none: one sequence per worker, no scheduler steps"));
      return;
    }
    const BatchSutStats s = b->stats();
    f.emplace_back("engine_steps", s.steps);
    f.emplace_back("preemptions", s.preemptions);
    if (s.steps == 0) {
      f.emplace_back("batching_reason", std::string("the engine ran no step"));
    } else {
      f.emplace_back("batch_occupancy_mean", s.mean_batch());
      f.emplace_back("batch_occupancy_max", int64_t{s.max_seqs});
      f.emplace_back("kv_occupancy_mean", s.mean_kv_occupancy());
      f.emplace_back("kv_occupancy_max", s.kv_occupancy_max);
      f.emplace_back("forward_ms_mean", static_cast<double>(s.forward_ns) / 1e6 / static_cast<double>(s.steps));
      f.emplace_back("scheduler_overhead", s.scheduler_overhead());
    }
    lines.push_back(str("batching: ", batching_name(b->options().mode), ", ", s.steps, " steps, sequences per step mean ",
                        s.mean_batch(), " max ", s.max_seqs, ", KV pool occupancy mean ", s.mean_kv_occupancy(), " max ",
                        s.kv_occupancy_max, " of ", s.kv_total_blocks, " blocks, ", s.preemptions, " preemptions, forward ",
                        s.steps ? static_cast<double>(s.forward_ns) / 1e6 / static_cast<double>(s.steps) : 0.0,
                        " ms per step, scheduling ", 100.0 * s.scheduler_overhead(), " % of it"));
    if (!b->options().prefix_cache) {
      f.emplace_back("prefix_cache_reason", std::string("prefix caching off"));
    } else if (s.prefix_lookups == 0) {
      f.emplace_back("prefix_cache_reason", std::string("no query was admitted"));
    } else {
      f.emplace_back("prefix_cache_lookups", s.prefix_lookups);
      f.emplace_back("prefix_cache_hits", s.prefix_hits);
      f.emplace_back("prefix_cache_prompt_tokens", s.prefix_lookup_tokens);
      f.emplace_back("prefix_cache_hit_tokens", s.prefix_hit_tokens);
      f.emplace_back("prefix_cache_hit_rate", s.prefix_hit_rate());
      f.emplace_back("prefix_cache_evictions", s.prefix_evictions);
      lines.push_back(str("prefix cache: ", s.prefix_hits, " of ", s.prefix_lookups, " admissions hit, ", s.prefix_hit_tokens,
                          " of ", s.prefix_lookup_tokens, " prompt tokens attached instead of computed (",
                          100.0 * s.prefix_hit_rate(), " %), ", s.prefix_evictions, " cached blocks evicted"));
    }
  }
  void release_builds_except(const Variant& v) override {
    models_->keep_only(v.format_name(), v.sparsity, v.recipe);
    if (!v.speculative() || draft_key_ != draft_key(v)) draft_.reset();
  }
  std::unique_ptr<SystemUnderTest> make_sut(const Variant& v) override {
    if (v.speculative())
      return std::make_unique<LlamaSpecSut>(models_->get(v.format_name(), v.sparsity, v.recipe), draft_model(v), v.drafter,
                                            v.draft_tokens, session_options(v), v.workers, prompts_);
    if (v.batching != BatchingMode::none)
      return std::make_unique<LlamaBatchSut>(models_->get(v.format_name(), v.sparsity, v.recipe), batch_options(v), prompts_);
    return std::make_unique<LlamaSut>(models_->get(v.format_name(), v.sparsity, v.recipe), session_options(v), v.workers,
                                      prompts_);
  }
  VariantQuality quality(const Variant& v, int step, const NoteFn& note) override {
    VariantQuality q;
    if (!sc_.accuracy.enabled) {
      q.unavailable = "accuracy not requested ([accuracy] absent or enabled = false)";
      return q;
    }
    if (step > 0) {
      q.unavailable = "stored with step 0 of this variant";
      return q;
    }
    if (!reference_ && reference_error_.empty()) build_reference(v, note);
    if (!reference_) {
      q.unavailable = "accuracy reference failed: " + reference_error_;
      return q;
    }
    const auto model = models_->get(v.format_name(), v.sparsity, v.recipe);
    q.lm = reference_->evaluate(*model, session_options(v), sc_.accuracy);
    if (sc_.accuracy.task_set) {
      if (!task_reference_) {
        q.lm->verdict = "fail";
        q.lm->reasons = "task reference failed: " + task_error_;
        return q;
      }
      const TaskSet& set = *sc_.accuracy.task_set;
      note(str("task: ", set.items.size(), " items of ", set.path));
      const bool is_reference = v.format_name() == sc_.accuracy.reference_format && v.sparsity == 0 && v.recipe.empty();
      const TaskScores scores = is_reference ? *task_reference_
                                             : score_task(*model, session_options(v), *tokenizer_, set,
                                                          sc_.accuracy.task_max_new_tokens, task_progress(note));
      BootstrapOptions boot;
      boot.resamples = sc_.accuracy.bootstrap_resamples;
      boot.seed = sc_.accuracy.bootstrap_seed;
      const TaskStats st = task_stats(scores.correct(sc_.accuracy.task_metric, set),
                                      is_reference ? std::vector<int>{} : task_reference_correct_, boot);
      TaskOutcome t;
      t.file = set.path;
      t.format = set.format;
      t.metric = sc_.accuracy.task_metric;
      t.items = static_cast<int64_t>(set.items.size());
      t.accuracy = st.stats.accuracy;
      t.accuracy_ci = st.stats.accuracy_ci;
      if (!is_reference) {
        t.reference_accuracy = st.stats.reference_accuracy;
        t.delta = st.stats.accuracy_delta;
        t.delta_ci = st.stats.delta_ci;
        t.mcnemar_p = st.mcnemar_p;
      }
      t.resamples = st.stats.resamples;
      t.items_per_s = scores.items_per_s();
      q.lm->task = t;
      judge_task_floors(*q.lm, sc_.accuracy);
    }
    return q;
  }

 private:
  static void measured_speculative(LlamaSpecSut& sp, Fields& f, std::vector<std::string>& lines) {
    const SpecSutStats s = sp.stats();
    const SpeculativeStats& st = s.spec;
    // Replaced when the suite links the row to its twin without speculation.
    f.emplace_back("spec_speedup_reason", std::string("the variant without speculation had not completed"));
    f.emplace_back("spec_drafted", st.drafted);
    f.emplace_back("spec_accepted", st.accepted);
    f.emplace_back("spec_draft_steps", st.draft_steps);
    f.emplace_back("spec_verify_steps", st.verify_steps);
    f.emplace_back("spec_target_forwards", st.target_forwards);
    f.emplace_back("spec_draft_forwards", st.draft_forwards);
    if (s.queries > 0 && s.total_ns > 0) {
      f.emplace_back("spec_draft_share", s.draft_share());
      f.emplace_back("spec_verify_share", s.verify_share());
    }
    if (st.drafted == 0) {
      f.emplace_back("spec_reason", std::string(s.queries == 0 ? "no timed query" : "nothing was drafted (one-token generations)"));
      lines.push_back(str("speculative ", sp.drafter().text(), " k=", sp.draft_tokens(), ": nothing drafted"));
      return;
    }
    f.emplace_back("spec_acceptance", st.acceptance_rate());
    f.emplace_back("spec_mean_accepted_length", st.mean_accepted_length());
    nlohmann::json by = nlohmann::json::array();
    std::string by_text;
    for (size_t i = 0; i < st.drafted_at.size(); ++i) {
      if (st.drafted_at[i] == 0) {
        by.push_back(nullptr);
        by_text += " -";
      } else {
        const double r = static_cast<double>(st.accepted_at[i]) / static_cast<double>(st.drafted_at[i]);
        by.push_back(r);
        by_text += str(" ", r);
      }
    }
    f.emplace_back("spec_acceptance_by_position", by.dump());
    lines.push_back(str("speculative ", sp.drafter().text(), " k=", sp.draft_tokens(), ": ", st.accepted, " of ", st.drafted,
                        " drafts accepted (", st.acceptance_rate(), "), mean accepted length ", st.mean_accepted_length(),
                        ", by position", by_text, "; ", st.target_forwards, " target and ", st.draft_forwards,
                        " draft forwards for ", st.generated, " tokens; time drafting ", 100.0 * s.draft_share(),
                        " %, verifying ", 100.0 * s.verify_share(), " %"));
  }

  // Draft models named by draft:MODEL, opened at the start (their weights are read when built):
  // a vocabulary other than the target's is refused before anything runs.
  void open_draft_sources() {
    for (const DrafterSpec& d : sc_.drafters) {
      if (d.kind != DrafterSpec::Kind::draft || draft_sources_.count(d.model)) continue;
      const SourcePos pos = sc_.pos("matrix.speculative");
      try {
        LlamaSource ds = open_llama_source(d.model);
        const int dv = ds.config.vocab_size, tv = models_->source().config.vocab_size;
        if (dv != tv)
          throw ScenarioError(pos.message(str("draft model ", d.model, " has a vocabulary of ", dv, " tokens, the target ",
                                              sc_.model, " ", tv, ": speculative decoding needs the same tokenizer")));
        draft_sources_.emplace(d.model, std::move(ds));
      } catch (const ScenarioError&) {
        throw;
      } catch (const Error& e) {
        throw ScenarioError(pos.message(e.what()));
      }
    }
  }
  // The draft model of a speculative variant (nullptr for prompt lookup): self:FORMAT, the
  // target's weights in FORMAT; draft:MODEL, that model in the target's format. The last one
  // built is kept for the next variants (draft_tokens sweeps re-use it).
  std::shared_ptr<const LlamaModel> draft_model(const Variant& v) {
    if (v.drafter.kind == DrafterSpec::Kind::lookup) return nullptr;
    const bool self = v.drafter.kind == DrafterSpec::Kind::self;
    const std::string key = draft_key(v);
    if (draft_ && draft_key_ == key) return draft_;
    draft_.reset();
    LlamaBuildOptions bo;
    bo.format = self ? v.drafter.format : v.format_name();
    draft_ = std::make_shared<const LlamaModel>(build_llama(self ? models_->source() : draft_sources_.at(v.drafter.model), bo));
    draft_key_ = key;
    return draft_;
  }
  static std::string draft_key(const Variant& v) {
    return v.drafter.kind == DrafterSpec::Kind::self ? v.drafter.text() : str(v.drafter.text(), " in ", v.format_name());
  }
  // The draft build's bytes, for the memory check.
  double draft_bytes(const Variant& v) const {
    if (v.drafter.kind == DrafterSpec::Kind::lookup || v.drafter.kind == DrafterSpec::Kind::off) return 0;
    const bool self = v.drafter.kind == DrafterSpec::Kind::self;
    LlamaBuildOptions bo;
    bo.format = self ? v.drafter.format : v.format_name();
    const LlamaConfig& c = self ? models_->source().config : draft_sources_.at(v.drafter.model).config;
    return static_cast<double>(estimate_llama_build_bytes(c, bo));
  }

  BatchSutOptions batch_options(const Variant& v, bool check_isa = true) const {
    const SessionOptions so = session_options(v, check_isa);
    BatchSutOptions b;
    b.mode = v.batching;
    b.max_batch = v.max_batch;
    b.max_tokens_per_step = v.max_tokens_per_step;
    b.kv_pool_tokens = v.kv_pool_tokens;
    b.kv_policy = v.kv_policy;
    b.batch_timeout_ms = v.batch_timeout_ms;
    b.prefix_cache = v.prefix_cache;
    b.threads = so.threads;
    b.pin_threads = so.pin_threads;
    b.isa = so.isa;
    b.kv_mode = so.kv_mode;
    return b;
  }
  // The KV pool's positions as the batch allocates them (0 = max_batch x the context; whole blocks).
  int64_t kv_pool_positions(const Variant& v) const {
    const int64_t want = v.kv_pool_tokens > 0 ? v.kv_pool_tokens
                                              : static_cast<int64_t>(v.max_batch) * models_->source().config.seq_len;
    const int bt = KvPoolOptions{}.block_tokens;
    return static_cast<int64_t>(KvBlockPool::blocks_for(want, bt)) * bt;
  }
  // check_isa = false: the options' sizes only (the memory check runs before the ISA is needed).
  SessionOptions session_options(const Variant& v, bool check_isa = true) const {
    SessionOptions so;
    so.threads = v.threads;
    so.pin_threads = v.pin_threads;
    so.kv_mode = v.kv_mode;
    if (v.isa && check_isa) {
      if (!isa_supported(*v.isa))
        throw Error(str("isa '", isa_name(*v.isa), "' cannot run here: ", isa_unavailable_reason(*v.isa)));
      so.isa = static_cast<int>(*v.isa);
    }
    return so;
  }

  // Each variant's model, its workers' sessions and (with [accuracy]) the reference build held
  // beside it must fit the memory available, before any row is written.
  void check_memory() const {
    const LlamaConfig& c = models_->source().config;
    const std::optional<int64_t> available = available_memory_bytes();
    // With [accuracy]: the reference build and its log-probabilities (max_tokens x vocabulary).
    ExtraMemory reference;
    if (sc_.accuracy.enabled) {
      LlamaBuildOptions ref;
      ref.format = sc_.accuracy.reference_format;
      reference = {static_cast<double>(estimate_llama_build_bytes(c, ref)) +
                       static_cast<double>(sc_.accuracy.max_tokens) * c.vocab_size * sizeof(float),
                   "the accuracy reference build and log-probabilities"};
    }
    for (const Variant& v : sc_.variants()) {
      LlamaBuildOptions b;
      b.format = v.format_name();
      SessionOptions so;
      so.threads = v.threads;
      so.kv_mode = v.kv_mode;
      try {
        if (v.batching != BatchingMode::none) {
          // One engine: its KV pool, step scratch and logits instead of per-worker sessions.
          const BatchSutOptions bo = batch_options(v, /*check_isa=*/false);
          const ExtraMemory engine{reference.bytes + static_cast<double>(LlamaBatch::estimate_bytes(c, llama_batch_options(c, bo))),
                                   reference.bytes > 0 ? "the batch engine (KV pool, scratch) and " + reference.what
                                                       : std::string("the batch engine (KV pool, scratch)")};
          try {
            require_llama_memory(str("variant ", v.label()), c, b, so, 0, engine, available);
          } catch (const Error& e) {
            throw ScenarioError(sc_.pos("matrix.kv_pool_tokens").message(e.what()));
          }
          continue;
        }
        ExtraMemory extra = reference;
        if (v.speculative()) {
          extra.bytes += draft_bytes(v);
          extra.what = reference.bytes > 0 ? "the draft model and " + reference.what : std::string("the draft model");
        }
        require_llama_memory(str("variant ", v.label()), c, b, so, v.workers, extra, available);
      } catch (const Error& e) {
        throw ScenarioError(sc_.pos("matrix.format").message(e.what()));
      }
    }
  }

  // A quantised model file fixes the format, the recipe and the pruning of its weights.
  void check_quantized_file() const {
    const QuantizedModelFile* q = models_->quantized();
    if (!q) return;
    for (const FormatRow* f : sc_.formats)
      if (f->name != q->meta.format && f->name != sc_.accuracy.reference_format)
        throw ScenarioError(sc_.pos("matrix.format").message(
            str("format ", f->name, ": ", q->path, " holds ", q->meta.format, " weights (", q->meta.recipe_spec, ")")));
    for (const auto& r : sc_.recipes)
      if (!r.empty())
        throw ScenarioError(sc_.pos("matrix.recipe").message(
            str(q->path, " is already quantised (", q->meta.recipe_spec, "): remove matrix.recipe")));
    for (double s : sc_.sparsities)
      if (s != 0)
        throw ScenarioError(sc_.pos("matrix.sparsity").message(
            str(q->path, " is already quantised (sparsity ", q->meta.sparsity, " recorded): remove matrix.sparsity")));
    if (sc_.calibration.enabled)
      throw ScenarioError(sc_.pos("calibration.slice").message(
          str(q->path, " records its own calibration (", q->meta.calib_slice, "): remove [calibration]")));
  }

  void open_tokenizer_and_prompts() {
    // Every request must be able to generate what the workload asks for: the SUT fits a prompt
    // into the context by cutting it, but never cuts a generation.
    const int64_t context = models_->source().config.seq_len;
    if (sc_.gen_tokens.upper_bound() >= context)
      throw ScenarioError(sc_.pos("workload.gen_tokens").message(
          str("up to ", sc_.gen_tokens.upper_bound(), " generated tokens do not fit the model's context of ", context,
              " positions (with at least one prompt token): lower gen_tokens below ", context)));
    std::string tok_path = sc_.tokenizer;
    if (tok_path.empty() && sc_.model.size() > 5 && sc_.model.substr(sc_.model.size() - 5) == ".gguf") tok_path = sc_.model;
    const int vocab = models_->source().config.vocab_size;
    if (!tok_path.empty()) {
      try {
        tokenizer_ = open_tokenizer(tok_path, vocab);
      } catch (const Error& e) {
        throw ScenarioError(sc_.pos("model.tokenizer").message(e.what()));
      }
    }
    PromptSource p;
    if (sc_.workload_source == "eval") {
      if (!tokenizer_)
        throw ScenarioError(sc_.pos("workload.source").message("an eval-set workload needs a tokenizer: set model.tokenizer"));
      p = PromptSource::eval_text(sc_.eval_set, *tokenizer_);
    } else {
      p = PromptSource::synthetic(vocab, sc_.seed_samples, sc_.synthetic_samples);
    }
    p.set_shared_prefix(sc_.shared_prefix_tokens, sc_.shared_prefixes);
    p.set_repeat(sc_.prompt_repeat);
    prompts_ = std::make_shared<const PromptSource>(std::move(p));
  }

  // Calibration windows for the recipes, checked disjoint from the accuracy eval text.
  void prepare_calibration() {
    if (!sc_.calibration.enabled) return;
    const SourcePos pos = sc_.pos("calibration.slice");
    if (!tokenizer_) throw ScenarioError(pos.message("calibration needs a tokenizer: set model.tokenizer"));
    try {
      const LoadedSlice cs = load_slice(TextSlice::parse(sc_.calibration.slice));
      if (sc_.accuracy.enabled && !sc_.accuracy.eval_set.empty())
        check_disjoint(cs, load_slice(TextSlice::parse(sc_.accuracy.eval_set)));
      bool hessians = false;
      for (const auto& r : sc_.recipes) hessians |= r.rfind("gptq", 0) == 0;
      models_->set_calibration(std::make_shared<const CalibrationSet>(make_calibration(
                                   cs, *tokenizer_, sc_.calibration.samples, sc_.calibration.seq_len,
                                   sc_.calibration.seed)),
                               hessians, 1);
    } catch (const ScenarioError&) {
      throw;
    } catch (const Error& e) {
      throw ScenarioError(pos.message(e.what()));
    }
  }

  // The reference build scored on the eval text (or synthetic tokens), once per run, at the
  // first variant scored.
  void build_reference(const Variant& v, const NoteFn& note) {
    try {
      note(str("accuracy reference: ", sc_.accuracy.reference_format, " build"));
      auto ref = models_->get(sc_.accuracy.reference_format, 0.0);
      SessionOptions ro;
      ro.threads = v.threads;
      std::vector<int> toks;
      std::string kind, set;
      if (models_->synthetic() || sc_.accuracy.eval_set.empty() || !tokenizer_) {
        toks = AccuracyReference::synthetic_tokens(ref->config.vocab_size, sc_.seed_samples, sc_.accuracy.max_tokens);
        kind = models_->synthetic() ? "fidelity on random weights" : "fidelity on random tokens";
        set = str("synthetic tokens (seed ", sc_.seed_samples, ")");
      } else {
        const TextSlice es = TextSlice::parse(sc_.accuracy.eval_set);
        toks = es.path == sc_.accuracy.eval_set
                   ? AccuracyReference::eval_tokens(sc_.accuracy.eval_set, *tokenizer_, sc_.accuracy.max_tokens)
                   : slice_tokens(load_slice(es), *tokenizer_, sc_.accuracy.max_tokens);
        kind = str(sc_.accuracy.reference_format, " reference on eval text");
        set = sc_.accuracy.eval_set;
      }
      reference_ = std::make_unique<AccuracyReference>(*ref, ro, std::move(toks), sc_.accuracy.window, kind, set);
      if (sc_.accuracy.task_set) {
        try {
          const TaskSet& ts = *sc_.accuracy.task_set;
          note(str("task reference: ", ts.items.size(), " items of ", ts.path, " on the ",
                   sc_.accuracy.reference_format, " build"));
          task_reference_ = std::make_unique<TaskScores>(
              score_task(*ref, ro, *tokenizer_, ts, sc_.accuracy.task_max_new_tokens, task_progress(note)));
          task_reference_correct_ = task_reference_->correct(sc_.accuracy.task_metric, ts);
        } catch (const std::exception& e) {
          task_error_ = e.what();
        }
      }
    } catch (const std::exception& e) {
      reference_error_ = e.what();
    }
  }

  // Progress on long task files: a note every tenth of the items.
  static TaskProgress task_progress(const NoteFn& note) {
    return [note](size_t done, size_t total) {
      if (total >= 50 && (done * 10 / total != (done - 1) * 10 / total || done == total))
        note(str("  task items ", done, "/", total));
    };
  }

  // accuracy.task needs the tokenizer, and every item (context and its longest choice, or prompt
  // and task_max_new_tokens) must fit the model's context: ScenarioError naming file:line.
  void check_task() {
    const auto& set = sc_.accuracy.task_set;
    if (!set) return;
    const SourcePos pos = sc_.pos("accuracy.task");
    if (!tokenizer_) throw ScenarioError(pos.message("scoring a task file needs a tokenizer: set model.tokenizer"));
    const int limit = models_->source().config.seq_len;
    for (const TaskItem& item : set->items) {
      size_t need = 0;
      if (set->kind == TaskKind::multiple_choice) {
        const EncodedItem e = encode_item(*tokenizer_, item);
        for (size_t k = 0; k < e.continuations.size(); ++k) {
          if (e.continuations[k].empty())
            throw ScenarioError(pos.message(str(set->path, ":", item.line, ": choice ", k, " adds no tokens")));
          need = std::max(need, e.context.size() + e.continuations[k].size());
        }
      } else {
        need = tokenizer_->encode(item.prompt, true, false).size() + static_cast<size_t>(sc_.accuracy.task_max_new_tokens);
      }
      if (need > static_cast<size_t>(limit))
        throw ScenarioError(pos.message(str(set->path, ":", item.line, ": the item needs ", need,
                                            " positions; the model's context holds ", limit)));
    }
  }

  const Scenario& sc_;
  std::unique_ptr<LlamaModels> models_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<const PromptSource> prompts_;
  std::unique_ptr<AccuracyReference> reference_;
  std::string reference_error_;
  std::unique_ptr<TaskScores> task_reference_;
  std::vector<int> task_reference_correct_;
  std::string task_error_;
  std::map<std::string, LlamaSource> draft_sources_;
  std::shared_ptr<const LlamaModel> draft_;
  std::string draft_key_;
};

}  // namespace

std::unique_ptr<ModelFamily> open_model_family(const Scenario& sc) {
  if (sc.is_test_sut()) return std::make_unique<TestFamily>(sc);
  if (is_bert_spec(sc.model)) return std::make_unique<BertFamily>(sc);
  return std::make_unique<LlamaFamily>(sc);
}

}  // namespace cibench
