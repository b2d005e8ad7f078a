#include "engines/models/llama.h"

#include <cmath>

#include "engines/core/error.h"
#include "engines/core/prune.h"

namespace cibench {

const std::string& LlamaBuildOptions::format_for(const std::string& tensor_class) const {
  auto it = class_format.find(tensor_class);
  return it == class_format.end() ? format : it->second;
}

std::string LlamaBuildOptions::describe() const {
  std::string s = format;
  for (const auto& [cls, fmt] : class_format) s += "," + cls + "=" + fmt;
  return s;
}

size_t LlamaLayer::vector_bytes() const {
  size_t n = 0;
  for (const std::vector<float>* v : {&attention_norm, &ffn_norm, &bq, &bk, &bv, &bo, &q_norm, &k_norm})
    n += v->size();
  return n * sizeof(float);
}

size_t LlamaModel::weight_bytes() const {
  size_t b = (tok_embeddings.size() + final_norm.size()) * sizeof(float);
  for (const LlamaLayer& l : layers) {
    b += l.vector_bytes();
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) b += w->bytes();
  }
  return b + output.bytes();
}

size_t estimate_llama_build_bytes(const LlamaConfig& c, const LlamaBuildOptions& opts) {
  auto packed = [](const std::string& fmt, int64_t rows, int64_t cols) {
    return static_cast<size_t>(rows) * format_by_name(fmt).row_bytes(cols);
  };
  const int64_t d = c.dim, hd = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  const std::string &fa = opts.format_for("attention"), &ff = opts.format_for("ffn");
  size_t b = static_cast<size_t>(v * d + d) * sizeof(float);  // embeddings, final norm
  const int64_t vectors = 2 * d + (c.qkv_bias ? q + 2 * kv : 0) + (c.o_bias ? d : 0) +
                          (c.qk_norm ? 2 * c.head_dim() : 0);
  b += static_cast<size_t>(c.n_layers) *
       (static_cast<size_t>(vectors) * sizeof(float) + packed(fa, q, d) + packed(fa, d, q) +
        packed(fa, kv, d) * 2 + packed(ff, hd, d) * 2 + packed(ff, d, hd));
  b += packed(opts.format_for("output"), v, d);
  return b + static_cast<size_t>(std::max({v * d, hd * d, q * d})) * sizeof(float);  // one tensor read at a time
}

size_t LlamaModel::streamed_bytes_per_token() const {
  size_t b = output.bytes();
  for (const LlamaLayer& l : layers)
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) b += w->bytes();
  return b;
}

namespace {

// Packs one projection; with sparsity > 0 it is magnitude-pruned first. Every pruning pattern
// works within a row, so pruning happens row block by row block as the rows are read.
WeightMatrix pack_tensor(const LlamaSource& src, const std::string& tensor_name,
                         const std::string& fmt_name, double sparsity) {
  const TensorSource& t = src.tensor(tensor_name);
  const FormatRow& format = format_by_name(fmt_name);
  WeightMatrix w;
  if (sparsity <= 0.0) {
    w = pack_matrix(tensor_name, t.rows, t.cols, format, t.read);
  } else {
    const std::string pattern = prune_pattern_for_format(fmt_name);
    const int64_t cols = t.cols;
    w = pack_matrix(tensor_name, t.rows, cols, format, [&](int64_t r0, int64_t n, float* dst) {
      t.read(r0, n, dst);
      prune_magnitude(dst, n, cols, sparsity, pattern);
    });
  }
  if (format.quantize_act_static) {
    // Static activation quantisation: the calibrated scale travels as a 1 x 1 tensor
    // "<projection>.act_scale" (written by the recipes, stored in .cbq files).
    auto it = src.tensors.find(tensor_name + ".act_scale");
    if (it == src.tensors.end() || it->second.rows != 1 || it->second.cols != 1)
      throw FileError(src.origin, str("format ", fmt_name, " needs a calibrated activation scale "
                                      "for ", tensor_name, " (1 x 1 tensor ", tensor_name,
                                      ".act_scale); produce the model with cibench quantize "
                                      "--format ", fmt_name, " and calibration data"));
    float scale = 0.f;
    it->second.read(0, 1, &scale);
    if (!(scale > 0.f) || !std::isfinite(scale))
      throw FileError(src.origin, str(tensor_name, ".act_scale must be positive and finite, got ", scale));
    w.act_scale = scale;
  }
  return w;
}

}  // namespace

LlamaModel build_llama(const LlamaSource& src, const LlamaBuildOptions& opts) {
  const LlamaConfig& c = src.config;
  c.validate(src.origin);
  for (const auto& [cls, fmt] : opts.class_format) {
    if (cls != "attention" && cls != "ffn" && cls != "output")
      throw Error(str("unknown tensor class '", cls, "' in format overrides (known: attention, ffn, output)"));
    format_by_name(fmt);
  }
  format_by_name(opts.format);
  if (opts.sparsity < 0.0 || opts.sparsity >= 1.0)
    throw Error(str("sparsity must be in [0, 1), got ", opts.sparsity));

  LlamaModel m;
  m.config = c;
  m.origin = src.origin;
  m.container = src.container;
  m.content_hash = src.content_hash;
  m.build = opts;
  m.tok_embeddings = src.tensor("tok_embeddings").read_all();
  m.final_norm = src.tensor("norm").read_all();
  const std::string& fa = opts.format_for("attention");
  const std::string& ff = opts.format_for("ffn");
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LlamaLayer& L = m.layers[l];
    L.attention_norm = src.tensor(p + "attention_norm").read_all();
    L.ffn_norm = src.tensor(p + "ffn_norm").read_all();
    L.wq = pack_tensor(src, p + "wq", fa, opts.sparsity);
    L.wk = pack_tensor(src, p + "wk", fa, opts.sparsity);
    L.wv = pack_tensor(src, p + "wv", fa, opts.sparsity);
    L.wo = pack_tensor(src, p + "wo", fa, opts.sparsity);
    L.w1 = pack_tensor(src, p + "w1", ff, opts.sparsity);
    L.w2 = pack_tensor(src, p + "w2", ff, opts.sparsity);
    L.w3 = pack_tensor(src, p + "w3", ff, opts.sparsity);
    if (c.qkv_bias) {
      L.bq = src.tensor(p + "bq").read_all();
      L.bk = src.tensor(p + "bk").read_all();
      L.bv = src.tensor(p + "bv").read_all();
    }
    if (c.o_bias) L.bo = src.tensor(p + "bo").read_all();
    if (c.qk_norm) {
      L.q_norm = src.tensor(p + "q_norm").read_all();
      L.k_norm = src.tensor(p + "k_norm").read_all();
    }
  }
  const std::string& fo = opts.format_for("output");
  if (c.tied_output) {
    m.output = pack_matrix("output", m.tok_embeddings.data(), c.vocab_size, c.dim,
                           format_by_name(fo));
  } else {
    m.output = pack_tensor(src, "output", fo, 0.0);  // the head is never pruned
  }
  return m;
}

}  // namespace cibench
