#include "engines/quant/bert_recipes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "engines/core/error.h"
#include "engines/core/thread_pool.h"
#include "engines/quant/awq.h"
#include "engines/quant/gptq.h"
#include "engines/core/prune.h"
#include "engines/quant/recipe_grid.h"
#include "engines/quant/smoothquant.h"

#include "engines/core/splitmix.h"

namespace cibench {

namespace {

bool parse_i64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

// ---- Labelled sentences -----------------------------------------------------------------------

std::vector<LabelledSentence> read_sentence_tsv(const std::string& path) {
  bool tsv = false;
  std::vector<LabelledSentence> out = read_labelled_sentences(path, &tsv);
  if (!tsv) throw FileError(path, "line 1: the header names no 'sentence' (or 'text') column");
  if (out.empty()) throw FileError(path, "no sentences");
  return out;
}

SentenceSlice SentenceSlice::parse(const std::string& spec) {
  SentenceSlice s;
  std::string rest = spec;
  // Peel ":A-B" and ":perm=SEED" off the end (a path may itself contain ':').
  auto peel = [&]() -> std::string {
    const auto c = rest.rfind(':');
    if (c == std::string::npos) return "";
    return rest.substr(c + 1);
  };
  std::string tail = peel();
  int64_t a = 0, b = 0;
  if (const auto dash = tail.find('-'); dash != std::string::npos && !tail.empty() &&
                                        parse_i64(tail.substr(0, dash), &a) &&
                                        parse_i64(tail.substr(dash + 1), &b)) {
    if (a < 0 || b <= a)
      throw Error(str("sentence slice '", spec, "': range ", tail, " must be A-B with 0 <= A < B"));
    s.begin = a;
    s.end = b;
    rest = rest.substr(0, rest.rfind(':'));
    tail = peel();
  }
  if (tail.rfind("perm=", 0) == 0) {
    int64_t seed = 0;
    if (!parse_i64(tail.substr(5), &seed) || seed < 0)
      throw Error(str("sentence slice '", spec, "': perm=", tail.substr(5),
                      " is not a non-negative seed"));
    s.permuted = true;
    s.seed = static_cast<uint64_t>(seed);
    rest = rest.substr(0, rest.rfind(':'));
  }
  if (rest.empty()) throw Error(str("sentence slice '", spec, "' names no file"));
  s.path = rest;
  return s;
}

std::string SentenceSlice::spec() const {
  std::string s = path;
  if (permuted) s += str(":perm=", seed);
  if (end >= 0 || begin > 0) s += str(":", begin, "-", end);
  return s;
}

std::string LoadedSentences::describe() const {
  return str(slice.spec(), " sentences=", items.size(), " rows=", rows_hash, " text=", text_hash);
}

LoadedSentences load_sentences(const SentenceSlice& s) {
  const std::vector<LabelledSentence> all = read_sentence_tsv(s.path);
  const int64_t n = static_cast<int64_t>(all.size());
  LoadedSentences out;
  out.slice = s;
  if (out.slice.end < 0) out.slice.end = n;
  if (out.slice.begin >= out.slice.end || out.slice.end > n)
    throw FileError(s.path, str("slice ", s.spec(), " is outside its ", n, " sentences"));
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (s.permuted) {  // Fisher-Yates with splitmix64
    uint64_t st = s.seed;
    for (int64_t i = n - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(splitmix64_next(st) % static_cast<uint64_t>(i + 1));
      std::swap(order[i], order[j]);
    }
  }
  uint64_t hr = 0xcbf29ce484222325ull, ht = 0xcbf29ce484222325ull;
  for (int64_t p = out.slice.begin; p < out.slice.end; ++p) {
    const int64_t row = order[p];
    const LabelledSentence& e = all[row];
    out.rows.push_back(row);
    out.items.push_back(e);
    out.text_hashes.push_back(fnv1a64(e.text.data(), e.text.size()));
    hr = fnv1a64(&row, sizeof row, hr);
    ht = fnv1a64(e.text.data(), e.text.size() + 0, ht);
    ht = fnv1a64(&e.label, sizeof e.label, ht);
  }
  out.rows_hash = hash_label(hr);
  out.text_hash = hash_label(ht);
  return out;
}

void check_disjoint(const LoadedSentences& calib, const LoadedSentences& eval) {
  std::map<uint64_t, size_t> seen;
  for (size_t i = 0; i < calib.text_hashes.size(); ++i) seen.emplace(calib.text_hashes[i], i);
  for (size_t i = 0; i < eval.text_hashes.size(); ++i) {
    auto it = seen.find(eval.text_hashes[i]);
    if (it == seen.end() || calib.items[it->second].text != eval.items[i].text) continue;
    throw Error(str("calibration slice ", calib.slice.spec(), " and evaluation slice ",
                    eval.slice.spec(), " share a sentence (calibration row ",
                    calib.rows[it->second], ", evaluation row ", eval.rows[i], "): \"",
                    eval.items[i].text.substr(0, 80), "\"; calibration and evaluation must not overlap"));
  }
}

// ---- Calibration ------------------------------------------------------------------------------

CalibrationStats collect_bert_calibration(const BertSource& src,
                                          const std::vector<std::vector<int>>& sequences,
                                          const CalibrationOptions& opts, uint64_t seed) {
  CIBENCH_CHECK(!sequences.empty(), "calibration: no sequences");
  const BertModel model = build_bert(src, BertBuildOptions{});
  CalibrationStats stats(opts, seed);
  int max_len = 1;
  for (const auto& q : sequences) max_len = std::max(max_len, static_cast<int>(q.size()));
  BertSessionOptions so;
  so.threads = std::max(1, opts.threads);
  so.max_length = max_len;
  so.observer = &stats;
  BertSession session(model, so);
  for (const auto& q : sequences) session.classify(q.data(), static_cast<int>(q.size()));
  stats.finish();
  return stats;
}

// ---- Recipes ----------------------------------------------------------------------------------

std::vector<std::string> bert_projection_names(const BertConfig& c) {
  std::vector<std::string> v;
  for (int l = 0; l < c.n_layers; ++l)
    for (const char* w : {"query", "key", "value", "attn_out", "ffn_in", "ffn_out"})
      v.push_back(str("layers.", l, ".", w, ".weight"));
  return v;
}

namespace {

struct BertSite {
  std::string name;               // calibration site
  std::vector<std::string> mats;  // weight tensors reading the input
  std::string fold_norm;          // LayerNorm (prefix) whose folded copy receives 1/s
  std::string folded_norm;        // the folded copy's name (prefix, ".weight"/".bias")
  std::string fold_rows;          // matrix (prefix) whose rows and bias receive 1/s
};

// Processing order: sites that fold into rows first (value, ffn_in), so the q/k/v and ffn_in
// sites see those rows already scaled.
std::vector<BertSite> bert_sites(const BertConfig& c, int l) {
  const std::string p = str("layers.", l, ".");
  const std::string prev_norm = l == 0 ? "embeddings.norm" : str("layers.", l - 1, ".ffn_norm");
  std::vector<BertSite> s;
  s.push_back({p + "attn_out", {p + "attn_out.weight"}, "", "", p + "value"});
  s.push_back({p + "ffn_out", {p + "ffn_out.weight"}, "", "",
               c.activation == BertActivation::relu ? p + "ffn_in" : ""});
  s.push_back({p + "attn_in", {p + "query.weight", p + "key.weight", p + "value.weight"},
               prev_norm, p + "qkv_in_norm", ""});
  s.push_back({p + "ffn_in", {p + "ffn_in.weight"}, p + "attn_norm", p + "ffn_in_norm", ""});
  return s;
}

BertSource memory_bert_source(const BertSource& base, std::string origin,
                              std::map<std::string, MemTensor> tensors) {
  auto store = std::make_shared<std::map<std::string, MemTensor>>(std::move(tensors));
  BertSource s;
  s.config = base.config;
  s.origin = std::move(origin);
  s.container = "recipe";
  uint64_t h = 0xcbf29ce484222325ull;
  for (auto& [name, t] : *store) {
    TensorSource ts;
    ts.rows = t.rows;
    ts.cols = t.cols;
    const MemTensor* p = &t;
    ts.read = [p, tname = name](int64_t r0, int64_t n, float* dst) {  // (clang 14 cannot capture a binding)
      CIBENCH_CHECK(r0 >= 0 && n >= 0 && r0 + n <= p->rows, "tensor '", tname, "': rows [", r0,
                    ", ", r0 + n, ") are outside its ", p->rows, " rows");
      std::copy(p->data.begin() + r0 * p->cols, p->data.begin() + (r0 + n) * p->cols, dst);
    };
    s.tensors.emplace(name, std::move(ts));
    s.source_names[name] = name;
    h = fnv1a64(name.data(), name.size() + 1, h);
    const int64_t shape[2] = {t.rows, t.cols};
    h = fnv1a64(shape, sizeof shape, h);
    h = fnv1a64(t.data.data(), t.data.size() * sizeof(float), h);
  }
  s.keepalive = store;
  s.content_hash = hash_label(h);
  return s;
}

}  // namespace

BertRecipeOutput apply_bert_recipe(const BertSource& src, const RecipeSpec& spec,
                                   const CalibrationStats* calib, int threads) {
  // The recipes' sites (and SmoothQuant's folding) follow post-LayerNorm layers.
  if (src.config.modern())
    throw Error(str("encoder recipes run on BERT, DistilBERT and RoBERTa/XLM-R; ", src.origin,
                    " is a ModernBERT (pre-LayerNorm) classifier: pack it in a weight format instead"));
  const bool quantise = QuantGrid::supports(spec.format);
  if (quantise) {
    spec.validate();
  } else {
    // Pruning alone: the format must hold f32 values exactly.
    if (spec.format != "f32" && spec.format != "f32_sparse")
      throw Error(str("encoder recipes: format '", spec.format,
                      "' has no quantisation grid; use a grid format (int8, w8a8, int8_sparse, "
                      "int8_bs, int8_24, int4_g32/64/128[_asym]) or f32 / f32_sparse for pruning "
                      "alone"));
    if (spec.recipe != "rtn" || !spec.params.empty())
      throw Error(str("encoder recipes: ", spec.format, " stores f32 values; only pruning applies "
                      "(recipe rtn without parameters), got '", spec.recipe, "'"));
    CIBENCH_CHECK(spec.sparsity >= 0.0 && spec.sparsity < 1.0, "sparsity must be in [0, 1), got ",
                  spec.sparsity);
  }
  const RecipeRow& row = recipe_by_name(spec.recipe);
  if (row.needs_calibration && !calib)
    throw Error(str("recipe '", spec.recipe, "' needs calibration sentences (--calib)"));
  const BertConfig& c = src.config;
  c.validate(src.origin);

  std::map<std::string, MemTensor> work = read_all_tensors(src);
  auto T = [&](const std::string& n) -> MemTensor& { return tensor_in(work, src.origin, n); };
  for (const auto& [name, t] : work)
    CIBENCH_CHECK(name.find("_in_norm.") == std::string::npos, src.origin,
                  ": the source already carries folded scales (", name,
                  "); apply recipes to the FP32 model");

  const std::vector<std::string> projections = bert_projection_names(c);
  std::map<std::string, std::vector<float>> orig, pruned, row_scale, col_scale;
  std::map<std::string, std::vector<uint8_t>> keep;
  const std::string pattern = spec.prune_pattern.empty() ? prune_pattern_for_format(spec.format)
                                                         : spec.prune_pattern;
  // The pruned copies first (one threshold over every projection for "global").
  if (spec.sparsity > 0) {
    std::vector<PruneTarget> targets;
    for (const std::string& n : projections) {
      const MemTensor& m = T(n);
      pruned[n] = m.data;
      targets.push_back({pruned[n].data(), m.rows, m.cols});
    }
    prune_targets(targets, spec.sparsity, pattern);
  }
  for (const std::string& n : projections) {
    MemTensor& m = T(n);
    if (calib) orig[n] = m.data;
    row_scale[n].assign(static_cast<size_t>(m.rows), 1.f);
    col_scale[n].assign(static_cast<size_t>(m.cols), 1.f);
    if (spec.sparsity > 0) {
      std::vector<float> p = std::move(pruned[n]);
      auto& k = keep[n];
      k.resize(p.size());
      for (size_t i = 0; i < k.size(); ++i) k[i] = p[i] != 0.f;
      // GPTQ keeps the unpruned values and compensates their removal; the others start pruned.
      if (spec.recipe != "gptq" || !quantise) m.data = p;
      pruned[n] = std::move(p);
    } else if (calib) {
      pruned[n] = m.data;
    }
  }

  ThreadPool pool(std::max(1, threads));
  MatmulRunner runner(pool, active_isa());
  BertRecipeOutput out;
  std::map<std::string, double> exponent;
  const bool scaling = quantise && (spec.recipe == "smoothquant" || spec.recipe == "awq");
  std::optional<QuantGrid> grid;
  if (quantise) grid = QuantGrid::for_format(spec.format);

  if (scaling) {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const BertSite& site : bert_sites(c, l)) {
        if (site.fold_norm.empty() && site.fold_rows.empty()) {
          out.unscaled_sites.push_back(site.name);
          continue;
        }
        const std::vector<float> s = scale_site_channels(spec, site.name, site.mats, {}, calib->site(site.name),
                                                         *grid, runner, T, col_scale, exponent);
        const int64_t cols = static_cast<int64_t>(s.size());
        if (!site.fold_norm.empty()) {
          // A copy of the LayerNorm with gamma/s and beta/s: the projections' input only.
          for (const char* part : {".weight", ".bias"}) {
            MemTensor v = T(site.fold_norm + part);
            for (int64_t j = 0; j < cols; ++j) v.data[j] /= s[j];
            work[site.folded_norm + part] = std::move(v);
          }
        } else {
          MemTensor& m = T(site.fold_rows + ".weight");
          MemTensor& b = T(site.fold_rows + ".bias");
          const std::string wn = site.fold_rows + ".weight";
          for (int64_t r = 0; r < m.rows; ++r) {
            const float inv = 1.f / s[r];
            for (int64_t k = 0; k < m.cols; ++k) m.data[r * m.cols + k] *= inv;
            b.data[r] *= inv;
            row_scale[wn][r] *= inv;
          }
        }
      }
    }
  }

  // Quantisation onto the grid (or the pruned f32 values as they are).
  if (quantise && !spec.scale_only) {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const BertSite& site : bert_sites(c, l)) {
        for (const std::string& n : site.mats) {
          MemTensor& m = T(n);
          const uint8_t* k = spec.sparsity > 0 ? keep[n].data() : nullptr;
          out.off_grid += quantize_onto_grid(spec, site.name, calib, m, *grid, k);
        }
      }
    }
  } else if (!quantise) {
    const FormatRow& fmt = format_by_name(spec.format);
    for (const std::string& n : projections) {
      MemTensor& m = T(n);
      std::vector<float> snapped(m.data.size());
      out.off_grid += snap_to_format(fmt, m.data.data(), m.rows, m.cols, snapped.data());
      m.data.swap(snapped);
    }
  }

  // Per-projection output error on the calibration rows, in the original (unscaled) space;
  // the RTN baseline rounds the same pruned weights.
  if (calib) {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const BertSite& site : bert_sites(c, l))
        report_site_errors(*calib, site.name, site.mats, T, orig, row_scale, col_scale, pruned,
                           grid ? &*grid : nullptr, exponent, runner, out.matrices);
    }
  }

  out.spec = spec;
  out.build.format = spec.scale_only ? "f32" : spec.format;
  // The folded copies must not be pruned again by build_bert: the mask is already applied.
  out.build.sparsity = 0.0;
  std::string desc = quantise ? spec.describe()
                              : str("prune format=", spec.format, " sparsity=", spec.sparsity,
                                    " prune=", pattern);
  out.source = memory_bert_source(src, src.origin + " [" + desc + "]", std::move(work));
  return out;
}

std::vector<int> bert_predict(const BertModel& model, const std::vector<std::vector<int>>& seqs,
                              int threads, std::vector<float>* logits) {
  int max_len = 1;
  for (const auto& q : seqs) max_len = std::max(max_len, static_cast<int>(q.size()));
  BertSessionOptions so;
  so.threads = std::max(1, threads);
  so.max_length = max_len;
  BertSession session(model, so);
  const int nl = model.config.num_labels;
  std::vector<int> pred;
  pred.reserve(seqs.size());
  if (logits) logits->clear();
  for (const auto& q : seqs) {
    const float* lg = session.classify(q.data(), static_cast<int>(q.size()));
    pred.push_back(static_cast<int>(std::max_element(lg, lg + nl) - lg));
    if (logits) logits->insert(logits->end(), lg, lg + nl);
  }
  return pred;
}

}  // namespace cibench
