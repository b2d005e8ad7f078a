#include "engines/quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/models/llama.h"

#include "engines/core/splitmix.h"

namespace cibench {
namespace {

constexpr int64_t kHessianBatch = 256;

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hash_label(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// ---- slices ----------------------------------------------------------------------------------

TextSlice TextSlice::parse(const std::string& spec) {
  TextSlice s;
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon + 1 < spec.size()) {
    const std::string range = spec.substr(colon + 1);
    const auto dash = range.find('-');
    bool numeric = dash != std::string::npos && dash > 0 && dash + 1 < range.size();
    for (char ch : range) numeric = numeric && (std::isdigit(static_cast<unsigned char>(ch)) || ch == '-');
    if (numeric) {
      s.path = spec.substr(0, colon);
      s.begin = std::stoll(range.substr(0, dash));
      s.end = std::stoll(range.substr(dash + 1));
      if (s.end <= s.begin)
        throw Error(str("text slice '", spec, "': documents ", s.begin, "-", s.end,
                        " is empty (A-B means documents A .. B-1)"));
      return s;
    }
  }
  s.path = spec;
  return s;
}

std::string TextSlice::spec() const {
  return end < 0 ? str(path, ":", begin, "-end") : str(path, ":", begin, "-", end);
}

std::vector<std::string> split_text_documents(const std::string& text) {
  std::vector<std::string> docs;
  const bool marked = text.find("<|endoftext|>") != std::string::npos;
  std::istringstream in(text);
  std::string line, cur;
  auto flush = [&] {
    const auto b = cur.find_first_not_of(" \r\n\t");
    if (b != std::string::npos)
      docs.push_back(cur.substr(b, cur.find_last_not_of(" \r\n\t") - b + 1));
    cur.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (marked ? line == "<|endoftext|>" : line.find_first_not_of(" \t") == std::string::npos) {
      flush();
    } else {
      cur += (cur.empty() ? "" : "\n") + line;
    }
  }
  flush();
  return docs;
}

LoadedSlice load_slice(const TextSlice& s) {
  require_regular_file(s.path);
  std::ifstream in(s.path, std::ios::binary);
  if (!in) throw FileError(s.path, "cannot open the text file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> all = split_text_documents(ss.str());
  LoadedSlice out;
  out.slice = s;
  if (out.slice.end < 0) out.slice.end = static_cast<int64_t>(all.size());
  if (out.slice.begin < 0 || out.slice.end > static_cast<int64_t>(all.size()) ||
      out.slice.begin >= out.slice.end)
    throw FileError(s.path, str("slice ", out.slice.begin, "-", out.slice.end, " is outside its ",
                                all.size(), " documents"));
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t i = out.slice.begin; i < out.slice.end; ++i) {
    std::string& d = all[static_cast<size_t>(i)];
    out.doc_hashes.push_back(fnv1a64(d.data(), d.size()));
    h = fnv1a64(d.data(), d.size() + 1, h);  // the terminating NUL separates documents
    out.docs.push_back(std::move(d));
  }
  out.hash = hash_label(h);
  return out;
}

void check_disjoint(const LoadedSlice& calib, const LoadedSlice& eval) {
  std::map<uint64_t, int64_t> seen;
  for (size_t i = 0; i < calib.doc_hashes.size(); ++i)
    seen.emplace(calib.doc_hashes[i], calib.slice.begin + static_cast<int64_t>(i));
  for (size_t i = 0; i < eval.doc_hashes.size(); ++i) {
    auto it = seen.find(eval.doc_hashes[i]);
    if (it != seen.end())
      throw Error(str("calibration slice ", calib.slice.spec(), " and evaluation slice ",
                      eval.slice.spec(), " overlap: calibration document ", it->second,
                      " is evaluation document ", eval.slice.begin + static_cast<int64_t>(i),
                      " (same text); choose disjoint document ranges"));
  }
}

std::vector<int> slice_tokens(const LoadedSlice& slice, const Tokenizer& tok, int64_t max_tokens) {
  std::vector<int> out;
  for (const std::string& d : slice.docs) {
    const auto ids = tok.encode(d, true, false);
    out.insert(out.end(), ids.begin(), ids.end());
    if (max_tokens > 0 && static_cast<int64_t>(out.size()) >= max_tokens) break;
  }
  if (max_tokens > 0 && static_cast<int64_t>(out.size()) > max_tokens)
    out.resize(static_cast<size_t>(max_tokens));
  return out;
}

std::string CalibrationSet::describe() const {
  return str(source.slice.spec(), " docs=", source.docs.size(), " text=", source.hash,
             " samples=", samples, " seq_len=", seq_len, " seed=", seed, " tokens=", token_hash);
}

CalibrationSet make_calibration(const LoadedSlice& slice, const Tokenizer& tok, int samples,
                                int seq_len, uint64_t seed) {
  CIBENCH_CHECK(samples >= 1, "calibration: samples must be >= 1, got ", samples);
  CIBENCH_CHECK(seq_len >= 2, "calibration: seq_len must be >= 2, got ", seq_len);
  CalibrationSet c;
  c.source = slice;
  c.seed = seed;
  c.samples = samples;
  c.seq_len = seq_len;
  const std::vector<int> stream = slice_tokens(slice, tok, 0);
  if (static_cast<int64_t>(stream.size()) < seq_len)
    throw FileError(slice.slice.path, str("calibration slice ", slice.slice.spec(), " has ",
                                          stream.size(), " tokens, fewer than seq_len ", seq_len));
  uint64_t rng = seed;
  const uint64_t span = stream.size() - static_cast<size_t>(seq_len) + 1;
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < samples; ++i) {
    const size_t off = static_cast<size_t>(splitmix64_next(rng) % span);
    c.windows.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(off),
                           stream.begin() + static_cast<std::ptrdiff_t>(off + seq_len));
    h = fnv1a64(c.windows.back().data(), c.windows.back().size() * sizeof(int), h);
  }
  c.token_hash = hash_label(h);
  return c;
}

// ---- statistics -------------------------------------------------------------------------------

std::vector<float> SiteStats::mean_abs() const {
  std::vector<float> m(static_cast<size_t>(cols), 0.f);
  if (rows_seen == 0) return m;
  for (int64_t j = 0; j < cols; ++j)
    m[j] = static_cast<float>(abssum[j] / static_cast<double>(rows_seen));
  return m;
}

std::string site_of_matrix(const std::string& n) {
  if (n.rfind("layers.", 0) != 0) return "";
  const auto dot = n.rfind('.');
  const std::string p = n.substr(0, dot + 1), w = n.substr(dot + 1);
  if (w == "wq" || w == "wk" || w == "wv") return p + "attn_in";
  if (w == "w1" || w == "w3") return p + "ffn_in";
  if (w == "wo" || w == "w2") return p + w;
  // BERT/DistilBERT (BertSession observer names): query/key/value share one input.
  if (w == "query" || w == "key" || w == "value") return p + "attn_in";
  if (w == "attn_out" || w == "ffn_in" || w == "ffn_out") return p + w;
  return "";
}

CalibrationStats::CalibrationStats(const CalibrationOptions& opts, uint64_t seed)
    : opts_(opts), rng_(seed ^ 0x5eed5eedull) {
  pool_ = std::make_unique<ThreadPool>(std::max(1, opts.threads));
  runner_ = std::make_unique<MatmulRunner>(*pool_, active_isa());
}

void CalibrationStats::observe(const std::string& matrix_name, const float* x, int64_t rows,
                               int64_t cols) {
  // wk/wv and w3 read the same rows as wq and w1: count them once.
  const auto dot = matrix_name.rfind('.');
  const std::string w = dot == std::string::npos ? matrix_name : matrix_name.substr(dot + 1);
  if (w == "wk" || w == "wv" || w == "w3" || w == "key" || w == "value") return;
  const std::string name = site_of_matrix(matrix_name);
  if (name.empty()) return;
  SiteStats& s = sites_[name];
  if (s.cols == 0) {
    s.cols = cols;
    s.absmax.assign(static_cast<size_t>(cols), 0.f);
    s.abssum.assign(static_cast<size_t>(cols), 0.0);
    if (opts_.hessians) s.xtx.assign(static_cast<size_t>(cols * cols), 0.0);
  }
  CIBENCH_CHECK(s.cols == cols, "calibration: ", matrix_name, " input width changed from ", s.cols,
                " to ", cols);
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = x + i * cols;
    for (int64_t j = 0; j < cols; ++j) {
      const float a = std::fabs(r[j]);
      s.absmax[j] = std::max(s.absmax[j], a);
      s.abssum[j] += a;
    }
    // Reservoir sample of rows.
    const int64_t seen = s.rows_seen + 1;
    if (s.sample_count() < opts_.sample_rows) {
      s.sample.insert(s.sample.end(), r, r + cols);
    } else {
      const int64_t k = static_cast<int64_t>(splitmix64_next(rng_) % static_cast<uint64_t>(seen));
      if (k < opts_.sample_rows) std::copy(r, r + cols, s.sample.begin() + k * cols);
    }
    s.rows_seen = seen;
    if (opts_.hessians) {
      std::vector<float>& p = pending_[name];
      p.insert(p.end(), r, r + cols);
      if (static_cast<int64_t>(p.size()) >= kHessianBatch * cols) flush(name, s);
    }
  }
}

// X^T X of the pending rows with the f32 kernels: the transposed batch (cols x m) is packed as a
// weight matrix and multiplied by itself, then added to the double accumulator.
void CalibrationStats::flush(const std::string& name, SiteStats& s) {
  std::vector<float>& p = pending_[name];
  const int64_t m = static_cast<int64_t>(p.size()) / s.cols, n = s.cols;
  if (m == 0) return;
  std::vector<float> xt(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) xt[j * m + i] = p[i * n + j];
  const WeightMatrix wt = pack_matrix("xt", xt.data(), n, m, format_by_name("f32"));
  std::vector<float> g(static_cast<size_t>(n * n));
  runner_->reserve(n, m);
  runner_->matmul(wt, xt.data(), m, n, g.data(), n);
  for (size_t i = 0; i < g.size(); ++i) s.xtx[i] += g[i];
  p.clear();
}

void CalibrationStats::finish() {
  for (auto& [name, s] : sites_)
    if (opts_.hessians) flush(name, s);
}

const SiteStats& CalibrationStats::site(const std::string& name) const {
  auto it = sites_.find(name);
  if (it == sites_.end()) throw Error(str("calibration has no statistics for '", name, "'"));
  return it->second;
}

CalibrationStats collect_calibration(const LlamaSource& src, const CalibrationSet& calib,
                                     const CalibrationOptions& opts) {
  LlamaModel model = build_llama(src, LlamaBuildOptions{});
  CalibrationStats stats(opts, calib.seed);
  SessionOptions so;
  so.threads = std::max(1, opts.threads);
  so.observer = &stats;
  so.max_context = std::max(model.config.seq_len, calib.seq_len);
  LlamaSession session(model, so);
  for (const auto& w : calib.windows) {
    session.reset();
    session.prefill(w.data(), static_cast<int>(w.size()));
  }
  stats.finish();
  return stats;
}

}  // namespace cibench
