#pragma once
// Quantisation recipes: named, parameterised entries of a table (like the weight-format table),
// each turning FP32 Llama weights into weights for one target format row.
//
//   rtn          round-to-nearest onto the format's grid (per channel int8, per group int4)
//   smoothquant  per-input-channel smoothing s = max|X|^alpha / max|W|^(1-alpha), then RTN
//                (meant for w8a8, whose per-token activation quantisation it helps)
//   awq          per-input-channel scaling s = mean|X|^a, a searched on calibration rows to
//                minimise the layer output error, then RTN
//   gptq         column-by-column quantisation with error compensation from the calibration
//                Hessian (damping, block size, optional activation order)
// Every recipe may be preceded by magnitude pruning (prune, then quantise).
//
// The output is a LlamaSource whose projections are f32 values lying exactly on the target
// format's grid (so build_llama packs them losslessly) and whose RMSNorm weights (and the rows
// of wv / w3) carry the inverse channel scales. Where the scales are folded, per site:
//   attn_in (wq wk wv)  <- attention_norm weight      ffn_in (w1 w3) <- ffn_norm weight
//   wo                  <- rows of wv (one scale per value-head channel: query heads that
//                          share a key/value head under GQA get tied scales, so it is exact)
//   w2                  <- rows of w3 (SwiGLU is linear in the up projection, so it is exact)
// The output head (tied to the embeddings in the stories models) is not touched: it stays f32.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/quant/calibration.h"

namespace cibench {

struct RecipeParam {
  const char* name;
  double default_value;
  const char* help;
};

struct RecipeRow {
  const char* name;
  const char* description;
  bool needs_calibration;
  bool needs_hessians;
  std::vector<RecipeParam> params;
};

const std::vector<RecipeRow>& recipe_table();
// Throws Error listing the known recipes.
const RecipeRow& recipe_by_name(const std::string& name);

struct RecipeSpec {
  std::string recipe = "rtn";
  std::string format = "int4_g32";
  std::map<std::string, double> params;  // overrides of the row's defaults
  double sparsity = 0.0;                 // magnitude pruning before quantisation
  std::string prune_pattern;             // "" = the format's (see prune_pattern_for_format), or
                                         // unstructured, block, 2:4, global (one threshold)
  bool scale_only = false;  // tests: apply and fold the channel scales but do not quantise

  // The value of a parameter (override or default); throws on a name the recipe does not have.
  double param(const std::string& name) const;
  // Throws Error on unknown recipe/format/parameter names or out-of-range values.
  void validate() const;
  // "awq format=int4_g32 grid=20" (every parameter, defaults included; sparsity when > 0).
  std::string describe() const;
  // Parses "name=value" (e.g. "alpha=0.8", "act_order=1") into params; "prune=PATTERN" sets
  // prune_pattern (e.g. "gptq:int8_sparse:prune=global").
  void set(const std::string& assignment);
  // set() for each ":NAME=VALUE" of `tail` (e.g. ":alpha=0.8:prune=global"; "" sets nothing).
  void set_all(const std::string& tail);
  // "NAME[:PARAM=VALUE...]" (e.g. "gptq", "smoothquant:alpha=0.8") with `format` and `sparsity`;
  // validated (throws Error naming the unknown recipe or parameter).
  static RecipeSpec parse(const std::string& recipe, const std::string& format, double sparsity = 0);
  // "RECIPE:FORMAT[:NAME=VALUE...]" as the recipes commands take it (e.g. "gptq:int4_g32",
  // "smoothquant:w8a8:alpha=0.8"); "prune:f32" / "prune:f32_sparse" is pruning alone (rtn onto
  // a format that stores f32 values exactly). Validated; throws Error naming the variant.
  static RecipeSpec parse_variant(const std::string& variant, double sparsity = 0);
  // Every parameter of the recipe with its value (defaults included), by name.
  std::map<std::string, double> all_params() const;
  // "alpha=0.5 grid=20" (every parameter; "" for a recipe without parameters).
  std::string params_text() const;
  // Pruning alone: rtn onto f32 or f32_sparse (no rounding).
  bool prune_only() const { return recipe == "rtn" && (format == "f32" || format == "f32_sparse"); }
};

struct RecipeMatrixReport {
  std::string name;     // "layers.3.wq"
  double rel_err = -1;  // ||(W_eff - W) X^T||^2 / ||W X^T||^2 on calibration rows (-1: no data)
  double rtn_rel_err = -1;  // the same for plain RTN of the same (pruned) weights
  double awq_exponent = -1; // awq: the exponent a that won for this matrix's site
};

// The mean over matrices of rel_err (or of rtn_rel_err when `rtn`); nullopt when no matrix has
// the measure (no calibration data).
std::optional<double> mean_rel_err(const std::vector<RecipeMatrixReport>& matrices, bool rtn = false);

class QuantGrid;
class MatmulRunner;

// One projection's report on the calibration sample rows of `st`: the recipe's weights `w`
// (rows x cols, still multiplied by row_scale[r] * col_scale[j], which are divided out here)
// against the original `orig`, and RTN (on `grid`, none: no rounding) of `rtn_base` against it.
RecipeMatrixReport matrix_error_report(const std::string& name, const float* w, int64_t rows,
                                       int64_t cols, const std::vector<float>& orig,
                                       const std::vector<float>& row_scale,
                                       const std::vector<float>& col_scale,
                                       std::vector<float> rtn_base, const QuantGrid* grid,
                                       const SiteStats& st, MatmulRunner& runner);

struct RecipeOutput {
  LlamaSource source;        // on-grid projections, adjusted norms (content_hash of the result)
  LlamaBuildOptions build;   // attention/ffn = the format, output = f32
  RecipeSpec spec;
  std::string source_hash;   // content_hash of the FP32 source
  std::string source_origin, source_container;
  std::vector<RecipeMatrixReport> matrices;
  int64_t off_grid = 0;      // elements the format's pack would have changed (0 expected)
};

// Applies `spec` to `src`. `calib` is required by recipes that need calibration (and must hold
// Hessians for gptq); with it, per-matrix output errors are reported for every recipe.
RecipeOutput apply_recipe(const LlamaSource& src, const RecipeSpec& spec,
                          const CalibrationStats* calib, int threads = 1);

// A LlamaSource over tensors held in memory (name -> (rows, cols, values)).
struct MemTensor {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
};

class MatmulRunner;
class QuantGrid;

// Every tensor of a source (a LlamaSource or a BertSource) read into memory, by name.
template <class Source>
std::map<std::string, MemTensor> read_all_tensors(const Source& src) {
  std::map<std::string, MemTensor> work;
  for (const auto& [name, t] : src.tensors) work[name] = MemTensor{t.rows, t.cols, t.read_all()};
  return work;
}
// work[name], or a FileError naming `origin` and the missing tensor.
MemTensor& tensor_in(std::map<std::string, MemTensor>& work, const std::string& origin, const std::string& name);

// Channel scaling of one calibration site for SmoothQuant or AWQ (spec.recipe), shared by the
// Llama and BERT recipes: checks the site's statistics match its matrices, picks the per-input-
// channel scales s (SmoothQuant from the activation maxima with spec's alpha; AWQ by its grid
// search), multiplies the columns of every matrix of the site by s, accumulates s into
// col_scale[matrix] and records AWQ's exponent per matrix. `tie`: channels that must share one
// scale (empty: none). Returns s; the caller folds 1/s into what produces the site's input.
std::vector<float> scale_site_channels(const RecipeSpec& spec, const std::string& site,
                                       const std::vector<std::string>& mats, const std::vector<int64_t>& tie,
                                       const SiteStats& st, const QuantGrid& grid, MatmulRunner& runner,
                                       const std::function<MemTensor&(const std::string&)>& tensor,
                                       std::map<std::string, std::vector<float>>& col_scale,
                                       std::map<std::string, double>& exponent);

// Quantises one matrix of a calibration site onto the grid in place (GPTQ with the site's
// Hessian when spec.recipe is gptq, otherwise round to nearest; `keep`: the pruning mask GPTQ must
// respect, or null) and then snaps it exactly onto the format's values. Returns how many values
// were off the grid before the snap (0 when the recipe's output was exact).
int64_t quantize_onto_grid(const RecipeSpec& spec, const std::string& site, const CalibrationStats* calib,
                           MemTensor& m, const QuantGrid& grid, const uint8_t* keep);
// Appends to `out` the error report of each matrix of a calibration site (matrix_error_report, in
// the original space: row and column scales divided out; RTN of the pruned weights as baseline;
// AWQ's exponent when one was searched), when `calib` has the site. Shared by the Llama and BERT
// recipes.
void report_site_errors(const CalibrationStats& calib, const std::string& site, const std::vector<std::string>& mats,
                        const std::function<MemTensor&(const std::string&)>& tensor,
                        std::map<std::string, std::vector<float>>& orig,
                        std::map<std::string, std::vector<float>>& row_scale,
                        std::map<std::string, std::vector<float>>& col_scale,
                        std::map<std::string, std::vector<float>>& pruned, const QuantGrid* grid,
                        const std::map<std::string, double>& exponent, MatmulRunner& runner,
                        std::vector<RecipeMatrixReport>& out);
LlamaSource memory_llama_source(const LlamaConfig& config, std::string origin,
                                std::string container, std::map<std::string, MemTensor> tensors);
// "fnv1a64:..." over the names, shapes and values of a source's tensors (read in full).
std::string tensors_hash(const LlamaSource& src);

}  // namespace cibench
