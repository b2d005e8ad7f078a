#include "engines/quant/recipe.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engines/core/error.h"
#include "engines/core/thread_pool.h"
#include "engines/quant/awq.h"
#include "engines/quant/gptq.h"
#include "engines/core/prune.h"
#include "engines/quant/recipe_grid.h"
#include "engines/quant/smoothquant.h"

namespace cibench {

const std::vector<RecipeRow>& recipe_table() {
  static const std::vector<RecipeRow> t = {
      {"rtn", "round-to-nearest onto the format's grid (per channel int8, per group int4)", false,
       false, {}},
      {"smoothquant",
       "per-input-channel smoothing s = max|X|^alpha / max|W|^(1-alpha) folded into the previous "
       "op, then RTN (for w8a8 and w8a8_static)",
       true, false, {{"alpha", 0.5, "migration strength in [0, 1]"}}},
      {"awq",
       "activation-aware scaling s = mean|X|^a, a searched on calibration rows for the least "
       "output error, then RTN",
       true, false, {{"grid", 20, "exponents tried: 0, 1/grid, ..., 1"}}},
      {"gptq",
       "column-by-column quantisation with error compensation from the calibration Hessian",
       true, true,
       {{"damp", 0.01, "diagonal damping as a fraction of mean(diag(H))"},
        {"block", 128, "columns per lazy-update block"},
        {"act_order", 0, "1 = quantise columns by decreasing Hessian diagonal"}}},
  };
  return t;
}

const RecipeRow& recipe_by_name(const std::string& name) {
  std::string known;
  for (const RecipeRow& r : recipe_table()) {
    if (name == r.name) return r;
    known += (known.empty() ? "" : ", ") + std::string(r.name);
  }
  throw Error(str("unknown quantisation recipe '", name, "' (known: ", known, ")"));
}

double RecipeSpec::param(const std::string& name) const {
  const RecipeRow& row = recipe_by_name(recipe);
  for (const RecipeParam& p : row.params)
    if (name == p.name) {
      auto it = params.find(name);
      return it == params.end() ? p.default_value : it->second;
    }
  throw Error(str("recipe '", recipe, "' has no parameter '", name, "'"));
}

void RecipeSpec::validate() const {
  const RecipeRow& row = recipe_by_name(recipe);
  QuantGrid::for_format(format);
  for (const auto& [k, v] : params) {
    bool found = false;
    for (const RecipeParam& p : row.params) found |= k == p.name;
    if (!found) {
      std::string known;
      for (const RecipeParam& p : row.params) known += (known.empty() ? "" : ", ") + std::string(p.name);
      throw Error(str("recipe '", recipe, "' has no parameter '", k, "' (it has: ",
                      known.empty() ? "none" : known, ")"));
    }
  }
  if (recipe == "smoothquant")
    CIBENCH_CHECK(param("alpha") >= 0 && param("alpha") <= 1, "smoothquant: alpha must be in [0, 1], got ", param("alpha"));
  if (recipe == "awq") CIBENCH_CHECK(param("grid") >= 1, "awq: grid must be >= 1, got ", param("grid"));
  if (recipe == "gptq") {
    CIBENCH_CHECK(param("damp") >= 0, "gptq: damp must be >= 0, got ", param("damp"));
    CIBENCH_CHECK(param("block") >= 1, "gptq: block must be >= 1, got ", param("block"));
  }
  CIBENCH_CHECK(sparsity >= 0.0 && sparsity < 1.0, "sparsity must be in [0, 1), got ", sparsity);
}

std::string RecipeSpec::describe() const {
  std::string s = recipe + " format=" + format;
  for (const RecipeParam& p : recipe_by_name(recipe).params) s += str(" ", p.name, "=", param(p.name));
  if (sparsity > 0)
    s += str(" sparsity=", sparsity, " prune=",
             prune_pattern.empty() ? prune_pattern_for_format(format) : prune_pattern);
  return s;
}

void RecipeSpec::set(const std::string& a) {
  const auto eq = a.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
    throw Error(str("recipe parameter expects NAME=VALUE, got '", a, "'"));
  if (a.compare(0, eq, "prune") == 0) {  // the pruning pattern, a word: prune=global
    const std::string pattern = a.substr(eq + 1);
    if (pattern != "global" && !is_per_matrix_prune_pattern(pattern))
      throw Error(str("recipe parameter '", a, "': unknown pruning pattern (expected unstructured, block, 2:4 or global)"));
    prune_pattern = pattern;
    return;
  }
  try {
    size_t used = 0;
    const double v = std::stod(a.substr(eq + 1), &used);
    if (used != a.size() - eq - 1) throw std::invalid_argument("trailing");
    params[a.substr(0, eq)] = v;
  } catch (const std::exception&) {
    throw Error(str("recipe parameter '", a, "': the value is not a number"));
  }
}

void RecipeSpec::set_all(const std::string& tail) {
  for (size_t at = 0; at < tail.size();) {
    const auto next = tail.find(':', at + 1);
    set(tail.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next == std::string::npos ? tail.size() : next;
  }
}

RecipeSpec RecipeSpec::parse(const std::string& recipe, const std::string& format, double sparsity) {
  RecipeSpec spec;
  const auto colon = recipe.find(':');
  spec.recipe = recipe.substr(0, colon);
  if (colon != std::string::npos) spec.set_all(recipe.substr(colon));
  spec.format = format;
  spec.sparsity = sparsity;
  spec.validate();
  return spec;
}

MemTensor& tensor_in(std::map<std::string, MemTensor>& work, const std::string& origin, const std::string& name) {
  auto it = work.find(name);
  if (it == work.end()) throw FileError(origin, str("missing tensor '", name, "'"));
  return it->second;
}

void report_site_errors(const CalibrationStats& calib, const std::string& site, const std::vector<std::string>& mats,
                        const std::function<MemTensor&(const std::string&)>& tensor,
                        std::map<std::string, std::vector<float>>& orig,
                        std::map<std::string, std::vector<float>>& row_scale,
                        std::map<std::string, std::vector<float>>& col_scale,
                        std::map<std::string, std::vector<float>>& pruned, const QuantGrid* grid,
                        const std::map<std::string, double>& exponent, MatmulRunner& runner,
                        std::vector<RecipeMatrixReport>& out) {
  if (!calib.has(site)) return;
  const SiteStats& st = calib.site(site);
  for (const std::string& n : mats) {
    const MemTensor& m = tensor(n);
    RecipeMatrixReport rep = matrix_error_report(n, m.data.data(), m.rows, m.cols, orig[n], row_scale[n], col_scale[n],
                                                 pruned[n], grid, st, runner);
    if (auto it = exponent.find(n); it != exponent.end()) rep.awq_exponent = it->second;
    out.push_back(rep);
  }
}

RecipeSpec RecipeSpec::parse_variant(const std::string& v, double sparsity) {
  const auto c1 = v.find(':');
  if (c1 == std::string::npos || c1 == 0 || c1 + 1 == v.size())
    throw Error(str("variant '", v, "': expected RECIPE:FORMAT[:NAME=VALUE...]"));
  const auto c2 = v.find(':', c1 + 1);
  const std::string recipe = v.substr(0, c1);
  const std::string format = v.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  const std::string params = c2 == std::string::npos ? std::string() : v.substr(c2);
  if (recipe == "prune" && format != "f32" && format != "f32_sparse")
    throw Error(str("variant '", v, "': prune applies to f32 or f32_sparse (quantised formats prune first "
                    "with a recipe, e.g. rtn:int8_sparse)"));
  try {
    if (recipe != "prune") return parse(recipe + params, format, sparsity);
    // Pruning alone: rtn onto a format that keeps f32 values (no grid to validate against);
    // only the pruning pattern may be set.
    RecipeSpec spec;
    spec.recipe = "rtn";
    spec.format = format;
    spec.sparsity = sparsity;
    spec.set_all(params);
    return spec;
  } catch (const Error& e) {
    throw Error(str("variant '", v, "': ", e.what()));
  }
}

std::map<std::string, double> RecipeSpec::all_params() const {
  std::map<std::string, double> out;
  for (const RecipeParam& p : recipe_by_name(recipe).params) out[p.name] = param(p.name);
  return out;
}

std::string RecipeSpec::params_text() const {
  std::string s;
  for (const RecipeParam& p : recipe_by_name(recipe).params) s += str(s.empty() ? "" : " ", p.name, "=", param(p.name));
  return s;
}

std::optional<double> mean_rel_err(const std::vector<RecipeMatrixReport>& matrices, bool rtn) {
  double sum = 0;
  int n = 0;
  for (const auto& m : matrices) {
    const double e = rtn ? m.rtn_rel_err : m.rel_err;
    if (e < 0) continue;
    sum += e;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

RecipeMatrixReport matrix_error_report(const std::string& name, const float* w, int64_t rows,
                                       int64_t cols, const std::vector<float>& orig,
                                       const std::vector<float>& row_scale,
                                       const std::vector<float>& col_scale,
                                       std::vector<float> rtn_base, const QuantGrid* grid,
                                       const SiteStats& st, MatmulRunner& runner) {
  std::vector<float> eff(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) eff[r * cols + j] = w[r * cols + j] / (row_scale[r] * col_scale[j]);
  if (grid) grid->round_matrix(rtn_base.data(), rows, cols);
  RecipeMatrixReport rep;
  rep.name = name;
  const double e0 = output_energy(orig.data(), rows, cols, st.sample.data(), st.sample_count(), runner);
  if (e0 > 0) {
    rep.rel_err = output_sq_error(orig.data(), eff.data(), rows, cols, st.sample.data(), st.sample_count(), runner) / e0;
    rep.rtn_rel_err =
        output_sq_error(orig.data(), rtn_base.data(), rows, cols, st.sample.data(), st.sample_count(), runner) / e0;
  }
  return rep;
}

LlamaSource memory_llama_source(const LlamaConfig& config, std::string origin,
                                std::string container, std::map<std::string, MemTensor> tensors) {
  auto store = std::make_shared<std::map<std::string, MemTensor>>(std::move(tensors));
  LlamaSource s;
  s.config = config;
  s.origin = std::move(origin);
  s.container = std::move(container);
  for (auto& [name, t] : *store) {
    TensorSource ts;
    ts.rows = t.rows;
    ts.cols = t.cols;
    const MemTensor* p = &t;
    ts.read = [p](int64_t r0, int64_t n, float* dst) {
      std::copy(p->data.begin() + r0 * p->cols, p->data.begin() + (r0 + n) * p->cols, dst);
    };
    s.tensors.emplace(name, std::move(ts));
  }
  s.keepalive = store;
  s.content_hash = tensors_hash(s);
  return s;
}

std::string tensors_hash(const LlamaSource& src) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, t] : src.tensors) {
    h = fnv1a64(name.data(), name.size() + 1, h);
    const int64_t shape[2] = {t.rows, t.cols};
    h = fnv1a64(shape, sizeof shape, h);
    const std::vector<float> v = t.read_all();
    h = fnv1a64(v.data(), v.size() * sizeof(float), h);
  }
  return hash_label(h);
}

namespace {

struct Site {
  std::string name;                 // calibration site
  std::vector<std::string> mats;    // matrices reading this input
  std::string fold_vector;          // norm weight receiving 1/s ("" when folded into rows)
  std::string fold_rows;            // matrix whose rows receive 1/s
  std::vector<int64_t> tie;         // tied channel classes (wo under GQA)
};

std::vector<Site> layer_sites(const LlamaConfig& c, int l) {
  const std::string p = "layers." + std::to_string(l) + ".";
  // The wo site: attention-output channel h*hd + d reads value channel (h / kv_mul)*hd + d.
  std::vector<int64_t> tie(static_cast<size_t>(c.q_dim()));
  const int hd = c.head_dim(), kv_mul = c.n_heads / c.n_kv_heads;
  for (int j = 0; j < c.q_dim(); ++j) tie[j] = (j / hd / kv_mul) * hd + j % hd;
  // Rows before the inputs they feed: wo and w2 first (their folds touch wv and w3, which the
  // attn_in / ffn_in sites then see already scaled).
  return {
      {p + "wo", {p + "wo"}, "", p + "wv", tie},
      {p + "w2", {p + "w2"}, "", p + "w3", {}},
      {p + "attn_in", {p + "wq", p + "wk", p + "wv"}, p + "attention_norm", "", {}},
      {p + "ffn_in", {p + "w1", p + "w3"}, p + "ffn_norm", "", {}},
  };
}

}  // namespace

std::vector<float> scale_site_channels(const RecipeSpec& spec, const std::string& site,
                                       const std::vector<std::string>& mats, const std::vector<int64_t>& tie,
                                       const SiteStats& st, const QuantGrid& grid, MatmulRunner& runner,
                                       const std::function<MemTensor&(const std::string&)>& tensor,
                                       std::map<std::string, std::vector<float>>& col_scale,
                                       std::map<std::string, double>& exponent) {
  std::vector<MatView> views;
  for (const std::string& n : mats) views.push_back({tensor(n).data.data(), tensor(n).rows});
  const int64_t cols = tensor(mats[0]).cols;
  CIBENCH_CHECK(st.cols == cols, "calibration site ", site, " has ", st.cols, " channels, the matrices ", cols);
  std::vector<float> s;
  if (spec.recipe == "smoothquant") {
    s = smoothquant_scales(views, cols, st.absmax.data(), spec.param("alpha"), tie);
  } else {
    AwqOptions ao;
    ao.grid = static_cast<int>(spec.param("grid"));
    const std::vector<float> mean = st.mean_abs();
    AwqResult r = awq_search(views, cols, st.sample.data(), st.sample_count(), mean.data(), grid, ao, tie, runner);
    s = std::move(r.scales);
    for (const std::string& n : mats) exponent[n] = r.exponent;
  }
  for (const std::string& n : mats) {
    MemTensor& m = tensor(n);
    scale_columns(m.data.data(), m.rows, m.cols, s.data());
    for (int64_t j = 0; j < cols; ++j) col_scale[n][j] *= s[j];
  }
  return s;
}

int64_t quantize_onto_grid(const RecipeSpec& spec, const std::string& site, const CalibrationStats* calib,
                           MemTensor& m, const QuantGrid& grid, const uint8_t* keep) {
  if (spec.recipe == "gptq") {
    CIBENCH_CHECK(calib, "gptq needs calibration data for ", site);
    const SiteStats& st = calib->site(site);
    CIBENCH_CHECK(!st.xtx.empty(), "gptq needs calibration Hessians for ", site);
    GptqOptions go;
    go.damp = spec.param("damp");
    go.block = static_cast<int64_t>(spec.param("block"));
    go.act_order = spec.param("act_order") != 0;
    gptq_quantize(m.data.data(), m.rows, m.cols, st.xtx.data(), grid, go, keep);
  } else {
    grid.round_matrix(m.data.data(), m.rows, m.cols);
  }
  std::vector<float> snapped(m.data.size());
  const int64_t off = snap_to_format(grid.format(), m.data.data(), m.rows, m.cols, snapped.data());
  m.data.swap(snapped);
  return off;
}

RecipeOutput apply_recipe(const LlamaSource& src, const RecipeSpec& spec,
                          const CalibrationStats* calib, int threads) {
  spec.validate();
  const RecipeRow& row = recipe_by_name(spec.recipe);
  if (row.needs_calibration && !calib)
    throw Error(str("recipe '", spec.recipe, "' needs calibration data (--calib FILE:A-B)"));
  const QuantGrid grid = QuantGrid::for_format(spec.format);
  const bool static_act = grid.format().quantize_act_static != nullptr;
  if (static_act && !calib)
    throw Error(str("format '", spec.format, "' needs calibration data for its static activation "
                    "scales (--calib FILE:A-B), also with recipe '", spec.recipe, "'"));
  const LlamaConfig& c = src.config;
  c.validate(src.origin);

  std::map<std::string, MemTensor> work = read_all_tensors(src);
  auto T = [&](const std::string& n) -> MemTensor& { return tensor_in(work, src.origin, n); };

  std::vector<std::string> projections;
  for (int l = 0; l < c.n_layers; ++l)
    for (const char* w : {"wq", "wk", "wv", "wo", "w1", "w2", "w3"})
      projections.push_back("layers." + std::to_string(l) + "." + w);

  // Originals (for errors), pruning masks, and the row/column scales applied to each matrix.
  std::map<std::string, std::vector<float>> orig, row_scale, col_scale;
  std::map<std::string, std::vector<uint8_t>> keep;
  const std::string pattern = spec.prune_pattern.empty() ? prune_pattern_for_format(spec.format)
                                                         : spec.prune_pattern;
  std::vector<PruneTarget> targets;
  for (const std::string& n : projections) {
    MemTensor& m = T(n);
    if (calib) orig[n] = m.data;
    row_scale[n].assign(static_cast<size_t>(m.rows), 1.f);
    col_scale[n].assign(static_cast<size_t>(m.cols), 1.f);
    targets.push_back({m.data.data(), m.rows, m.cols});
  }
  if (spec.sparsity > 0) {
    prune_targets(targets, spec.sparsity, pattern);  // per matrix, or one threshold ("global")
    for (const std::string& n : projections) {
      const MemTensor& m = T(n);
      auto& k = keep[n];
      k.resize(m.data.size());
      for (size_t i = 0; i < k.size(); ++i) k[i] = m.data[i] != 0.f;
    }
  }
  std::map<std::string, std::vector<float>> pruned;  // the pruned FP32 weights (RTN baseline)
  if (calib) for (const std::string& n : projections) pruned[n] = T(n).data;

  ThreadPool pool(std::max(1, threads));
  MatmulRunner runner(pool, active_isa());
  RecipeOutput out;
  std::map<std::string, double> exponent;

  // Channel scaling (smoothquant, awq).
  if (spec.recipe == "smoothquant" || spec.recipe == "awq") {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const Site& site : layer_sites(c, l)) {
        const std::vector<float> s = scale_site_channels(spec, site.name, site.mats, site.tie, calib->site(site.name),
                                                         grid, runner, T, col_scale, exponent);
        const int64_t cols = static_cast<int64_t>(s.size());
        if (!site.fold_vector.empty()) {
          MemTensor& v = T(site.fold_vector);
          for (int64_t j = 0; j < cols; ++j) v.data[j] /= s[j];
        } else {
          MemTensor& m = T(site.fold_rows);
          // A v projection with a bias (qkv_bias): the bias is part of the row's output.
          const bool v_bias = c.qkv_bias && site.fold_rows.size() > 2 &&
                              site.fold_rows.compare(site.fold_rows.size() - 3, 3, ".wv") == 0;
          MemTensor* bias = v_bias ? &T(site.fold_rows.substr(0, site.fold_rows.size() - 2) + "bv") : nullptr;
          for (int64_t r = 0; r < m.rows; ++r) {
            // The channel of the site's input that row r produces: for wo's tie classes the
            // first channel of the class (all share one scale); otherwise r itself.
            int64_t j = r;
            if (!site.tie.empty()) j = std::find(site.tie.begin(), site.tie.end(), r) - site.tie.begin();
            const float inv = 1.f / s[j];
            for (int64_t k = 0; k < m.cols; ++k) m.data[r * m.cols + k] *= inv;
            if (bias) bias->data[r] *= inv;
            row_scale[site.fold_rows][r] *= inv;
          }
        }
      }
    }
  }

  // Quantisation onto the grid.
  for (int l = 0; l < c.n_layers; ++l) {
    for (const Site& site : layer_sites(c, l)) {
      for (const std::string& n : site.mats) {
        MemTensor& m = T(n);
        const uint8_t* k = spec.sparsity > 0 ? keep[n].data() : nullptr;
        if (spec.scale_only) continue;
        out.off_grid += quantize_onto_grid(spec, site.name, calib, m, grid, k);
      }
    }
  }

  // Static activation scales (w8a8_static): per projection, max |x| over the calibration rows of
  // the input the matrix sees once the channel scales are applied (x_j / s_j), over 127.
  if (static_act) {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const Site& site : layer_sites(c, l)) {
        const SiteStats& st = calib->site(site.name);
        for (const std::string& n : site.mats) {
          const auto& cs = col_scale[n];
          float amax = 0.f;
          for (int64_t j = 0; j < st.cols; ++j) amax = std::max(amax, st.absmax[j] / cs[j]);
          CIBENCH_CHECK(amax > 0.f && std::isfinite(amax), "calibration site ", site.name,
                        " saw no finite nonzero activation; cannot calibrate a static scale for ", n);
          work[n + ".act_scale"] = MemTensor{1, 1, {amax / 127.f}};
        }
      }
    }
  }

  // Per-matrix output error on calibration rows, in the original (unscaled) space.
  if (calib) {
    for (int l = 0; l < c.n_layers; ++l) {
      for (const Site& site : layer_sites(c, l))
        report_site_errors(*calib, site.name, site.mats, T, orig, row_scale, col_scale, pruned, &grid, exponent,
                           runner, out.matrices);
    }
  }

  out.spec = spec;
  out.source_hash = src.content_hash;
  out.source_origin = src.origin;
  out.source_container = src.container;
  out.build.format = spec.format;
  out.build.class_format["output"] = "f32";
  out.source = memory_llama_source(c, src.origin + " [" + spec.describe() + "]", "recipe",
                                   std::move(work));
  return out;
}

}  // namespace cibench
