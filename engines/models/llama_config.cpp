#include "engines/models/llama_config.h"

#include <cmath>

#include "engines/core/error.h"

namespace cibench {

FileError unaccounted_tensors(const std::string& file, const std::string& config,
                              const std::vector<std::string>& names) {
  return FileError(file, str(names.size(), " tensor", names.size() == 1 ? "" : "s", " that ", config,
                             " does not account for, e.g. '", names.front(), "'",
                             names.size() > 1 ? str(" and '", names.back(), "'") : std::string(),
                             ": the config and the weights disagree"));
}

int64_t LlamaConfig::parameter_count() const {
  const int64_t d = dim, h = hidden_dim, kv = kv_dim(), v = vocab_size;
  int64_t per_layer = 2 * d + d * d * 2 + 2 * kv * d + 3 * d * h;
  return v * d + n_layers * per_layer + d + (tied_output ? 0 : v * d);
}

void LlamaConfig::validate(const std::string& origin) const {
  auto bad = [&](const std::string& what) { throw FileError(origin, "invalid model config: " + what); };
  if (dim <= 0 || hidden_dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 ||
      vocab_size <= 0 || seq_len <= 0)
    bad(str("all sizes must be positive (dim=", dim, " hidden_dim=", hidden_dim,
            " n_layers=", n_layers, " n_heads=", n_heads, " n_kv_heads=", n_kv_heads,
            " vocab_size=", vocab_size, " seq_len=", seq_len, ")"));
  if (dim > (1 << 16) || hidden_dim > (1 << 18) || n_layers > 1024 || vocab_size > (1 << 22) ||
      seq_len > (1 << 20) || n_heads > dim)
    bad(str("sizes out of range (dim=", dim, " hidden_dim=", hidden_dim, " n_layers=", n_layers,
            " n_heads=", n_heads, " vocab_size=", vocab_size, " seq_len=", seq_len, ")"));
  if (dim % n_heads != 0) bad(str("dim ", dim, " is not a multiple of n_heads ", n_heads));
  if (n_heads % n_kv_heads != 0)
    bad(str("n_heads ", n_heads, " is not a multiple of n_kv_heads ", n_kv_heads));
  if (head_dim() % 2 != 0) bad(str("head_dim ", head_dim(), " must be even for RoPE"));
  if (!(norm_eps > 0) || !std::isfinite(norm_eps)) bad(str("norm_eps must be > 0, got ", norm_eps));
  if (!(rope_theta > 0) || !std::isfinite(rope_theta))
    bad(str("rope_theta must be > 0, got ", rope_theta));
}

std::vector<float> TensorSource::read_all() const {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  read(0, rows, v.data());
  return v;
}

const TensorSource& LlamaSource::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw FileError(origin, str("missing tensor '", name, "'"));
  return it->second;
}

void validate_llama_source(const LlamaSource& src, bool scan_values) {
  const LlamaConfig& c = src.config;
  c.validate(src.origin);
  auto expect = [&](const std::string& name, int64_t rows, int64_t cols) {
    const TensorSource& t = src.tensor(name);
    if (t.rows != rows || t.cols != cols)
      throw FileError(src.origin, str("tensor '", name, "' has shape [", t.rows, ", ", t.cols,
                                      "] but the config implies [", rows, ", ", cols, "]"));
    if (!scan_values) return;
    std::vector<float> buf;
    const int64_t block = std::max<int64_t>(1, (1 << 18) / cols);
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      buf.resize(static_cast<size_t>(n * cols));
      t.read(r0, n, buf.data());
      for (size_t i = 0; i < buf.size(); ++i)
        if (!std::isfinite(buf[i]))
          throw FileError(src.origin,
                          str("tensor '", name, "' has a non-finite value (", buf[i], ") at row ",
                              r0 + static_cast<int64_t>(i) / cols, ", column ",
                              static_cast<int64_t>(i) % cols));
    }
  };
  expect("tok_embeddings", c.vocab_size, c.dim);
  expect("norm", 1, c.dim);
  if (!c.tied_output) expect("output", c.vocab_size, c.dim);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    expect(p + "attention_norm", 1, c.dim);
    expect(p + "ffn_norm", 1, c.dim);
    expect(p + "wq", c.dim, c.dim);
    expect(p + "wk", c.kv_dim(), c.dim);
    expect(p + "wv", c.kv_dim(), c.dim);
    expect(p + "wo", c.dim, c.dim);
    expect(p + "w1", c.hidden_dim, c.dim);
    expect(p + "w2", c.dim, c.hidden_dim);
    expect(p + "w3", c.hidden_dim, c.dim);
  }
}

}  // namespace cibench
