// cibench quantize: applies a quantisation recipe (rtn, smoothquant, awq, gptq; optionally after
// magnitude pruning) to a Llama model, calibrated on a named slice of a text file, and writes a
// .cbq file with the packed weights, the recipe, its parameters, the calibration record and the
// source model's content hash (engines/quant/quantized_file.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "engines/core/error.h"
#include "engines/models/llama.h"
#include "engines/quant/quantized_file.h"
#include "engines/models/tokenizer.h"
#include "engines/quant/calibration.h"
#include "engines/quant/recipe.h"
#include "harness/cli/command.h"

namespace cibench::cli {
namespace cmd_quantize {

struct QuantizeArgs {
  std::string model, tokenizer, recipe = "rtn", format = "int4_g32", calib, eval, out;
  std::vector<std::string> params;
  double sparsity = 0;
  int samples = 64, seq_len = 128, threads = 1;
  unsigned long long seed = 1234;
};

int run_quantize(const QuantizeArgs& a) {
  CIBENCH_CHECK(!a.model.empty(), "--model is required");
  CIBENCH_CHECK(!a.out.empty(), "--out is required");
  RecipeSpec spec;
  spec.recipe = a.recipe;
  spec.format = a.format;
  spec.sparsity = a.sparsity;
  for (const std::string& p : a.params) spec.set(p);
  spec.validate();
  LlamaSource src = open_llama_source(a.model);
  std::unique_ptr<CalibrationSet> calib;
  std::unique_ptr<CalibrationStats> stats;
  std::string eval_spec;
  if (!a.calib.empty()) {
    CIBENCH_CHECK(!a.tokenizer.empty(), "--calib needs --tokenizer");
    auto tok = open_tokenizer(a.tokenizer, src.config.vocab_size);
    const LoadedSlice cs = load_slice(TextSlice::parse(a.calib));
    if (!a.eval.empty()) {
      const LoadedSlice es = load_slice(TextSlice::parse(a.eval));
      check_disjoint(cs, es);
      eval_spec = es.slice.spec() + " text=" + es.hash;
    }
    calib = std::make_unique<CalibrationSet>(make_calibration(cs, *tok, a.samples, a.seq_len, a.seed));
    CalibrationOptions co;
    co.hessians = recipe_by_name(a.recipe).needs_hessians;
    co.threads = a.threads;
    stats = std::make_unique<CalibrationStats>(collect_calibration(src, *calib, co));
  } else if (recipe_by_name(a.recipe).needs_calibration) {
    throw Error(str("recipe '", a.recipe, "' needs --calib FILE:A-B (documents A .. B-1 of a text file)"));
  }
  const RecipeOutput out = apply_recipe(src, spec, stats.get(), a.threads);
  if (out.off_grid != 0)
    throw Error(str(out.off_grid, " weights of the recipe's output are not on the ", a.format,
                    " grid (a recipe/format mismatch); nothing written"));
  write_quantized(a.out, out.source, quantized_meta(out, calib.get(), eval_spec));
  // Round trip before reporting success.
  const QuantizedModelFile f = load_quantized(a.out, src.content_hash);
  const LlamaModel m = build_quantized(f);
  double rel = 0, rtn = 0;
  for (const auto& r : out.matrices) {
    rel += r.rel_err;
    rtn += r.rtn_rel_err;
  }
  std::printf("wrote %s: %s\n  source %s (%s)\n", a.out.c_str(), spec.describe().c_str(),
              src.origin.c_str(), src.content_hash.c_str());
  if (calib) std::printf("  calibration %s\n", calib->describe().c_str());
  if (!eval_spec.empty()) std::printf("  disjoint from evaluation %s\n", eval_spec.c_str());
  if (!out.matrices.empty())
    std::printf("  calibration output error, mean over %zu projections: %.6g (rtn %.6g)\n",
                out.matrices.size(), rel / out.matrices.size(), rtn / out.matrices.size());
  std::printf("  weights %zu bytes (%s); file re-packs exactly\n", m.weight_bytes(),
              m.build.describe().c_str());
  return 0;
}

const RegisterCommand reg{
    {"quantize", "apply a quantisation recipe to a model and write a .cbq file",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<QuantizeArgs>();
       sub.add_option("-m,--model", a->model, "FP32 model: llama2.c .bin, Hugging Face folder, .gguf")->required();
       sub.add_option("-z,--tokenizer", a->tokenizer, "tokenizer of the model (for --calib)");
       sub.add_option("-r,--recipe", a->recipe, "rtn, smoothquant, awq or gptq")->capture_default_str();
       sub.add_option("-f,--format", a->format, "target format: int8, w8a8, w8a8_static, int4_g{32,64,128}[_asym], int8_sparse, int8_bs, int8_24")
           ->capture_default_str();
       sub.add_option("--param", a->params, "recipe parameter NAME=VALUE (alpha, grid, damp, block, act_order); repeatable");
       sub.add_option("--sparsity", a->sparsity, "magnitude-prune this fraction first (pattern from the format)")
           ->capture_default_str();
       sub.add_option("--calib", a->calib, "calibration text slice FILE:A-B (documents A .. B-1)");
       sub.add_option("--eval", a->eval, "evaluation slice FILE:A-B; refused if it shares a document with --calib");
       sub.add_option("--samples", a->samples, "calibration windows")->capture_default_str();
       sub.add_option("--seq-len", a->seq_len, "tokens per calibration window")->capture_default_str();
       sub.add_option("--seed", a->seed, "calibration sampling seed")->capture_default_str();
       sub.add_option("-T,--threads", a->threads, "threads")->capture_default_str();
       sub.add_option("-o,--out", a->out, "output .cbq file")->required();
       return [a] { return run_quantize(*a); };
     }}};

}  // namespace cmd_quantize
}  // namespace cibench::cli
