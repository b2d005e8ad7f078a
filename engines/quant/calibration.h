#pragma once
// Calibration data for the quantisation recipes: a named slice of a text file, sampled with a
// fixed seed into token windows, run through the FP32 model with an ActivationObserver that
// accumulates per-input statistics (max |x|, mean |x|, X^T X, a seeded sample of rows).
// A calibration slice and an evaluation slice must never share a document (checked by content,
// so two different files holding the same story are caught too).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/models/llama_config.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"

namespace cibench {

// "FILE" (every document) or "FILE:A-B" (documents A .. B-1, 0-based, half-open). Documents are
// separated by lines "<|endoftext|>" (or, when there is none, by blank lines).
struct TextSlice {
  std::string path;
  int64_t begin = 0;
  int64_t end = -1;  // -1 = to the end of the file
  static TextSlice parse(const std::string& spec);
  std::string spec() const;  // canonical "FILE:A-B" (end resolved after load)
};

// The documents of a text file as cibench splits them (harness eval sets use the same rule).
std::vector<std::string> split_text_documents(const std::string& text);

// A slice loaded: its documents (with their indices in the file) and a hash of their text.
struct LoadedSlice {
  TextSlice slice;                  // end resolved
  std::vector<std::string> docs;
  std::vector<uint64_t> doc_hashes;  // FNV-1a 64 of each document's text
  std::string hash;                  // over the slice's documents, "fnv1a64:<hex>"
};
// Throws FileError naming the file when it cannot be read or the slice is out of range/empty.
LoadedSlice load_slice(const TextSlice& s);

// Throws Error naming both slices and the first shared document when calibration and evaluation
// data overlap.
void check_disjoint(const LoadedSlice& calib, const LoadedSlice& eval);

// Token windows for calibration: the slice's documents tokenized (BOS first) and concatenated,
// `samples` windows of `seq_len` tokens at offsets drawn with `seed`.
struct CalibrationSet {
  LoadedSlice source;
  uint64_t seed = 0;
  int samples = 0;
  int seq_len = 0;
  std::vector<std::vector<int>> windows;
  std::string token_hash;  // "fnv1a64:<hex>" of the windows' token ids: the calibration hash
  // One line for metadata/reports: "FILE:A-B docs=N samples=S seq_len=L seed=K hash=..."
  std::string describe() const;
};
CalibrationSet make_calibration(const LoadedSlice& slice, const Tokenizer& tok, int samples,
                                int seq_len, uint64_t seed);

// The evaluation token stream of a slice: documents tokenized (BOS first), concatenated, cut at
// max_tokens (0 = all).
std::vector<int> slice_tokens(const LoadedSlice& slice, const Tokenizer& tok, int64_t max_tokens);

// FNV-1a 64 over bytes; "fnv1a64:<16 hex>" labels.
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull);
std::string hash_label(uint64_t h);

// Statistics of the input of one group of matrices that share it ("site"):
//   layers.{i}.attn_in (wq wk wv), layers.{i}.wo, layers.{i}.ffn_in (w1 w3), layers.{i}.w2.
// BERT encoders (BertSession names): layers.{i}.attn_in (query key value), layers.{i}.attn_out,
// layers.{i}.ffn_in, layers.{i}.ffn_out.
struct SiteStats {
  int64_t cols = 0;
  int64_t rows_seen = 0;
  std::vector<float> absmax;     // max |x_j|
  std::vector<double> abssum;    // sum |x_j|
  std::vector<double> xtx;       // sum x x^T (cols x cols), when Hessians are collected
  std::vector<float> sample;     // up to sample_rows rows (reservoir, seeded)
  int64_t sample_count() const { return cols ? static_cast<int64_t>(sample.size()) / cols : 0; }
  std::vector<float> mean_abs() const;
};

struct CalibrationOptions {
  bool hessians = true;       // accumulate X^T X (GPTQ)
  int64_t sample_rows = 512;  // rows kept per site for output-error searches (AWQ)
  int threads = 1;
};

class CalibrationStats : public ActivationObserver {
 public:
  CalibrationStats(const CalibrationOptions& opts, uint64_t seed);
  void observe(const std::string& matrix_name, const float* x, int64_t rows,
               int64_t cols) override;
  // Flushes pending Hessian rows; call once after the last forward pass.
  void finish();
  const SiteStats& site(const std::string& name) const;  // throws naming the site
  bool has(const std::string& name) const { return sites_.count(name) != 0; }
  const std::map<std::string, SiteStats>& sites() const { return sites_; }

 private:
  void flush(const std::string& name, SiteStats& s);
  CalibrationOptions opts_;
  uint64_t rng_;
  std::map<std::string, SiteStats> sites_;
  std::map<std::string, std::vector<float>> pending_;  // rows waiting for a Hessian update
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<MatmulRunner> runner_;
};

// The site whose input a matrix reads ("layers.3.wk" -> "layers.3.attn_in"); "" for others.
std::string site_of_matrix(const std::string& matrix_name);

// Runs the FP32 build of `src` over the calibration windows with a CalibrationStats observer.
CalibrationStats collect_calibration(const LlamaSource& src, const CalibrationSet& calib,
                                     const CalibrationOptions& opts);

}  // namespace cibench
