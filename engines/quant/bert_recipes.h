#pragma once
// Quantisation recipes and pruning for BERT/DistilBERT classifiers: the recipe table of
// engines/quant/recipe.h (rtn, smoothquant, awq, gptq, each optionally after magnitude pruning)
// applied to a BertSource, with calibration statistics collected through BertSession's
// activation observer on labelled sentences that never overlap the evaluation sentences.
//
// Sites (matrices sharing an input) and where the channel scales 1/s go, per layer i:
//   attn_in  (query key value)  <- a second output of the LayerNorm before them (the embedding
//                                  LayerNorm for i = 0, layer i-1's ffn_norm otherwise) with
//                                  gamma/s and beta/s (layers.{i}.qkv_in_norm). Post-LN
//                                  encoders add that LayerNorm's output to the residual, so the
//                                  residual keeps the original gamma/beta (see bert.h).
//   attn_out (attn_out)         <- the rows and bias of value (the attention output channel j is
//                                  a convex combination of value channel j)
//   ffn_in   (ffn_in)           <- a second output of attn_norm (layers.{i}.ffn_in_norm)
//   ffn_out  (ffn_out)          <- its input is GELU(ffn_in x + b): not foldable, so it stays
//                                  unscaled (plain RTN/GPTQ) for GELU; under ReLU (DistilBERT
//                                  variants) relu(z/s) = relu(z)/s for s > 0, so the scales go
//                                  into the rows and bias of ffn_in.
// Every fold is exact in FP32. Embeddings, LayerNorms, the pooler/pre-classifier and the
// classifier stay f32 in every recipe.
#include <cstdint>
#include <string>
#include <vector>

#include "engines/models/bert.h"
#include "engines/quant/calibration.h"
#include "engines/models/sentences.h"
#include "engines/quant/recipe.h"

namespace cibench {

// ---- Labelled sentences and disjoint slices ---------------------------------------------------

using LabelledSentence = LabelledText;

// read_labelled_sentences (engines/models/sentences.h) of a TSV with a header, refusing a file
// without one or without sentences.
std::vector<LabelledSentence> read_sentence_tsv(const std::string& path);

// "FILE" (every data row), "FILE:A-B" (rows A .. B-1, 0-based, half-open, header excluded), or
// "FILE:perm=SEED:A-B" (positions A .. B-1 of a permutation of the rows drawn with SEED), so a
// calibration slice and an evaluation slice can be two ranges of one seeded shuffle:
//   calib FILE:perm=1234:0-128, eval FILE:perm=1234:128-872.
struct SentenceSlice {
  std::string path;
  bool permuted = false;
  uint64_t seed = 0;
  int64_t begin = 0;
  int64_t end = -1;  // -1: to the end
  static SentenceSlice parse(const std::string& spec);
  std::string spec() const;
};

struct LoadedSentences {
  SentenceSlice slice;               // end resolved
  std::vector<int64_t> rows;         // data-row index in the file of each sentence
  std::vector<LabelledSentence> items;
  std::vector<uint64_t> text_hashes; // FNV-1a 64 of each sentence's text
  std::string rows_hash;             // "fnv1a64:..." over the row indices
  std::string text_hash;             // "fnv1a64:..." over the texts and labels
  // "FILE:perm=S:A-B sentences=N rows=fnv1a64:... text=fnv1a64:..."
  std::string describe() const;
};
// Throws FileError naming the file when it cannot be read, or the range is out of bounds/empty.
LoadedSentences load_sentences(const SentenceSlice& s);

// Throws Error naming both slices and the first shared sentence when calibration and evaluation
// share a sentence (compared by text, so the same sentence from two files is caught too).
void check_disjoint(const LoadedSentences& calib, const LoadedSentences& eval);

// ---- Calibration ------------------------------------------------------------------------------

// Runs the FP32 build of `src` over each sequence alone (batch 1, no padding) with a
// CalibrationStats observer. Sites: layers.{i}.attn_in, .attn_out, .ffn_in, .ffn_out.
CalibrationStats collect_bert_calibration(const BertSource& src,
                                          const std::vector<std::vector<int>>& sequences,
                                          const CalibrationOptions& opts, uint64_t seed);

// ---- Recipes ----------------------------------------------------------------------------------

struct BertRecipeOutput {
  BertSource source;       // in-memory tensors: on-grid projections, folded norms/rows
  BertBuildOptions build;  // every projection in spec.format
  RecipeSpec spec;
  std::vector<RecipeMatrixReport> matrices;  // per projection, with calibration data
  int64_t off_grid = 0;    // elements the format's pack changed (0 expected)
  std::vector<std::string> unscaled_sites;   // sites a scaling recipe had to leave alone
};

// Applies `spec` to `src`. spec.format is a quantised row with a grid (int8, w8a8, int8_sparse,
// int8_bs, int8_24, int4_g*) for any recipe, or f32 / f32_sparse with recipe "rtn" and no
// parameters: pruning alone (the format stores f32 values exactly). Recipes that need
// calibration throw without `calib`. With spec.sparsity > 0 the magnitude mask is chosen first
// (per row, the format's pattern); rtn, smoothquant and awq then quantise the pruned weights;
// gptq quantises the unpruned weights with the mask forcing zeros, so the pruning error is
// compensated along with the rounding error (SparseGPT's update with a magnitude mask).
BertRecipeOutput apply_bert_recipe(const BertSource& src, const RecipeSpec& spec,
                                   const CalibrationStats* calib, int threads = 1);

// Projection tensor names of a config ("layers.0.query.weight", ...), in layer order.
std::vector<std::string> bert_projection_names(const BertConfig& c);

// Predicted label of each sequence (batch 1, no padding); `logits` (optional) receives
// (n, num_labels).
std::vector<int> bert_predict(const BertModel& model, const std::vector<std::vector<int>>& seqs,
                              int threads = 1, std::vector<float>* logits = nullptr);

}  // namespace cibench
