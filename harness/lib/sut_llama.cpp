#include "harness/lib/sut_llama.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/quant/calibration.h"
#include "engines/runtime/sampler.h"
#include "harness/lib/run_record.h"
#include "harness/lib/schedule.h"

namespace cibench {

LlamaModels::LlamaModels(const std::string& spec, const std::string& source_model) {
  if (source_model.empty()) {
    if (is_quantized_file(spec))
      throw FileError(spec, "is a quantised model file: name the FP32 model it was made from "
                            "(model.source_model) so its content hash can be checked");
    src_ = open_llama_source(spec);
    return;
  }
  src_ = open_llama_source(source_model);
  cbq_ = std::make_unique<QuantizedModelFile>(load_quantized(spec, src_.content_hash));
}

void LlamaModels::set_calibration(std::shared_ptr<const CalibrationSet> calib, bool hessians,
                                  int threads) {
  calib_ = std::move(calib);
  hessians_ = hessians;
  calib_threads_ = std::max(1, threads);
  stats_.reset();
}

RecipeRecord LlamaModels::record(const std::string& format, double sparsity,
                                 const std::string& recipe) const {
  RecipeRecord r;
  if (cbq_ && recipe.empty() && format == cbq_->meta.format && sparsity == 0) {
    const QuantizedMeta& m = cbq_->meta;
    r.recipe = m.recipe;
    r.params_json = nlohmann::json(m.params).dump();
    if (!m.calib_slice.empty())
      r.calibration_json = calibration_json(m.calib_slice, m.calib_docs, m.calib_text_hash, m.calib_samples,
                                       m.calib_seq_len, m.calib_seed, m.calib_hash);
    r.quantized_file = cbq_->path;
    return r;
  }
  if (recipe.empty()) return r;
  const RecipeSpec spec = RecipeSpec::parse(recipe, format, sparsity);
  r.recipe = spec.recipe;
  r.params_json = nlohmann::json(spec.all_params()).dump();
  if (calib_)
    r.calibration_json = calibration_json(calib_->source.slice.spec(), static_cast<int64_t>(calib_->source.docs.size()),
                                    calib_->source.hash, calib_->samples, calib_->seq_len, calib_->seed,
                                    calib_->token_hash);
  return r;
}

nlohmann::json weight_conversion_json(const LlamaModel& m) {
  if (m.conversion.empty()) return nullptr;
  auto one = [](const WeightConversion& c) {
    return nlohmann::json{{"stored_types", c.stored_types}, {"format", c.format},
                          {"relative_rms", c.relative_rms()}, {"tensors", c.tensors}, {"copied", c.copied}};
  };
  nlohmann::json j;
  for (const auto& [cls, c] : m.conversion) j[cls] = one(c);
  j["overall"] = one(m.conversion_overall());
  return j;
}

void set_weight_conversion(const LlamaModel& m, SutInfo& info) {
  if (m.conversion.empty()) {
    info.weight_conversion_rel_rms.reset();
    info.weight_conversion.reset();
    info.weight_conversion_reason = "the source stores no quantised weights";
    return;
  }
  info.weight_conversion_rel_rms = m.conversion_overall().relative_rms();
  info.weight_conversion = weight_conversion_json(m).dump();
  info.weight_conversion_reason.clear();
}

namespace {
std::string build_key(const std::string& format, double sparsity, const std::string& recipe) {
  return str(format, "/", sparsity, "/", recipe);
}
}  // namespace

void LlamaModels::keep_only(const std::string& format, double sparsity, const std::string& recipe) {
  const std::string key = build_key(format, sparsity, recipe);
  std::erase_if(cache_, [&](const auto& e) { return e.first != key; });
}

std::shared_ptr<const LlamaModel> LlamaModels::get(const std::string& format, double sparsity,
                                                   const std::string& recipe) {
  const std::string key = build_key(format, sparsity, recipe);
  for (auto& [k, m] : cache_)
    if (k == key) return m;
  std::shared_ptr<const LlamaModel> m;
  if (cbq_ && recipe.empty() && format == cbq_->meta.format && sparsity == 0) {
    m = std::make_shared<const LlamaModel>(build_quantized(*cbq_));
  } else if (cbq_ && !recipe.empty()) {
    throw Error(str(cbq_->path, " is already quantised (", cbq_->meta.recipe_spec,
                    "): a recipe cannot be applied to it"));
  } else if (!recipe.empty()) {
    const RecipeSpec spec = RecipeSpec::parse(recipe, format, sparsity);
    const bool needs = recipe_by_name(spec.recipe).needs_calibration ||
                       format_by_name(format).quantize_act_static;
    if (needs && !calib_)
      throw Error(str("recipe '", recipe, "' with format ", format, " needs calibration data ([calibration])"));
    if (calib_ && !stats_) {
      CalibrationOptions co;
      co.hessians = hessians_;
      co.threads = calib_threads_;
      stats_ = std::make_unique<CalibrationStats>(collect_calibration(src_, *calib_, co));
    }
    const RecipeOutput out = apply_recipe(src_, spec, stats_.get(), calib_threads_);
    if (out.off_grid != 0)
      throw Error(str(spec.describe(), ": ", out.off_grid, " weights are off the format's grid"));
    m = std::make_shared<const LlamaModel>(build_llama(out.source, out.build));
  } else {
    LlamaBuildOptions o;
    o.format = format;
    o.sparsity = sparsity;
    m = std::make_shared<const LlamaModel>(build_llama(src_, o));
  }
  cache_.emplace_back(key, m);
  if (cache_.size() > 2) cache_.erase(cache_.begin());  // keep memory bounded: two builds at most
  return m;
}

PromptSource PromptSource::synthetic(int vocab_size, uint64_t seed, int64_t n_samples) {
  PromptSource p;
  p.n_ = n_samples;
  p.vocab_ = vocab_size;
  p.seed_ = seed;
  return p;
}

PromptSource PromptSource::eval_text(const std::string& path, const Tokenizer& tok, int64_t max_docs) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path, "cannot open the eval set");
  std::stringstream ss;
  ss << in.rdbuf();
  PromptSource p;
  for (const auto& d : split_text_documents(ss.str())) {
    if (static_cast<int64_t>(p.docs_.size()) >= max_docs) break;
    auto ids = tok.encode(d, /*add_bos=*/true, /*add_eos=*/false);
    if (ids.size() >= 2) p.docs_.push_back(std::move(ids));
  }
  if (p.docs_.empty()) throw FileError(path, "no documents in the eval set");
  p.n_ = static_cast<int64_t>(p.docs_.size());
  p.vocab_ = tok.vocab_size();
  return p;
}

void PromptSource::set_shared_prefix(int tokens, int count) {
  CIBENCH_CHECK(tokens >= 0, "shared prefix tokens must be >= 0, got ", tokens);
  CIBENCH_CHECK(count >= 1, "shared prefixes must be >= 1, got ", count);
  prefix_tokens_ = tokens;
  prefix_count_ = count;
}

void PromptSource::set_repeat(int period) {
  CIBENCH_CHECK(period >= 0, "prompt repeat period must be >= 0, got ", period);
  repeat_ = period;
}

void PromptSource::fill(int64_t s, int len, std::vector<int>& out) const {
  out.resize(static_cast<size_t>(len));
  const int np = std::min(len, prefix_tokens_);
  const uint64_t k = static_cast<uint64_t>(s) % static_cast<uint64_t>(prefix_count_);
  if (docs_.empty()) {
    const uint64_t prefix_seed = seed_ ^ 0x73797374656d2070ull;  // another stream than the samples'
    for (int j = 0; j < np; ++j)
      out[static_cast<size_t>(j)] =
          static_cast<int>(hash3(prefix_seed, k, static_cast<uint64_t>(j)) % static_cast<uint64_t>(vocab_));
    for (int j = np; j < len; ++j) {
      const int at = repeat_ > 0 ? (j - np) % repeat_ : j - np;
      out[static_cast<size_t>(j)] = static_cast<int>(
          hash3(seed_, static_cast<uint64_t>(s), static_cast<uint64_t>(at)) % static_cast<uint64_t>(vocab_));
    }
    return;
  }
  if (np > 0) {
    const auto& p = docs_[static_cast<size_t>(k % static_cast<uint64_t>(n_))];
    for (int j = 0; j < np; ++j) out[static_cast<size_t>(j)] = p[static_cast<size_t>(j) % p.size()];
  }
  const auto& d = docs_[static_cast<size_t>(s % n_)];
  if (np == 0) {
    for (int j = 0; j < len; ++j) out[static_cast<size_t>(j)] = d[static_cast<size_t>(j) % d.size()];
    return;
  }
  // After a prefix, the document's text without its BOS (documents have at least 2 tokens).
  for (int j = np; j < len; ++j) out[static_cast<size_t>(j)] = d[1 + static_cast<size_t>(j - np) % (d.size() - 1)];
}

LlamaSut::LlamaSut(std::shared_ptr<const LlamaModel> model, const SessionOptions& opts, int workers,
                   std::shared_ptr<const PromptSource> prompts)
    : model_(std::move(model)), opts_(opts), prompts_(std::move(prompts)),
      sessions_(static_cast<size_t>(workers)), scratch_(static_cast<size_t>(workers)),
      kv_bytes_(static_cast<size_t>(workers), 0), isa_(static_cast<size_t>(workers), -1) {}

LlamaSut::~LlamaSut() = default;

SutInfo LlamaSut::info() const {
  SutInfo i;
  i.description = str("llama ", model_->origin, " ", model_->build.describe());
  // Called after the workers stopped (no session is being created concurrently).
  if (isa_[0] >= 0) i.isa_used = isa_name(static_cast<Isa>(isa_[0]));
  i.weight_bytes = static_cast<int64_t>(model_->weight_bytes());
  i.repacked_weight_bytes = static_cast<int64_t>(model_->repacked_bytes());
  set_weight_conversion(*model_, i);
  size_t kv = 0;
  for (size_t b : kv_bytes_) kv += b;
  if (kv) i.kv_cache_bytes = static_cast<int64_t>(kv);
  i.pinning = opts_.pin_threads ? "pool thread i -> cpu i (each worker)" : "none";
  return i;
}

void LlamaSut::start_worker(int w) {
  const size_t k = static_cast<size_t>(w);
  sessions_[k] = std::make_unique<LlamaSession>(*model_, opts_);
  isa_[k] = static_cast<int>(sessions_[k]->isa());
  kv_bytes_[k] = sessions_[k]->kv_cache_bytes();
}

void LlamaSut::stop_worker(int w) { sessions_[static_cast<size_t>(w)].reset(); }

void LlamaSut::issue(int w, const Query& q, QueryContext& ctx) {
  LlamaSession& s = *sessions_[static_cast<size_t>(w)];
  std::vector<int>& prompt = scratch_[static_cast<size_t>(w)];
  // Fit prompt + generation into the context (keep at least one prompt token).
  const int limit = s.context_limit();
  int gen = std::max(1, std::min(q.gen_tokens, limit - 1));
  int plen = std::max(1, std::min(q.prompt_tokens, limit - gen));
  prompts_->fill(q.sample_index, plen, prompt);
  const int vocab = model_->config.vocab_size;
  s.reset();
  ctx.phase(Phase::prefill);
  const float* logits = s.prefill(prompt.data(), plen);
  int tok = Sampler::argmax(logits, vocab);
  ctx.token();
  ctx.phase(Phase::decode);
  for (int g = 1; g < gen; ++g) {
    logits = s.step(tok);
    tok = Sampler::argmax(logits, vocab);
    ctx.token();
  }
  ctx.complete();
}

}  // namespace cibench
