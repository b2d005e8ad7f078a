#include "engines/models/llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
  for (const std::vector<float>* v : {&attention_norm, &ffn_norm, &bq, &bk, &bv, &bo, &q_norm, &k_norm,
                                         &post_attention_norm, &post_ffn_norm})
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

size_t LlamaModel::repacked_bytes() const {
  size_t b = output.repacked_bytes();
  for (const LlamaLayer& l : layers)
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) b += w->repacked_bytes();
  return b;
}

size_t estimate_llama_build_bytes(const LlamaConfig& c, const LlamaBuildOptions& opts) {
  auto packed = [](const std::string& fmt, int64_t rows, int64_t cols) {
    return static_cast<size_t>(rows) * format_by_name(fmt).row_bytes(cols);
  };
  const int64_t d = c.dim, hd = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  const std::string &fa = opts.format_for("attention"), &ff = opts.format_for("ffn");
  size_t b = static_cast<size_t>(v * d + d) * sizeof(float);  // embeddings, final norm
  const int64_t vectors = 2 * d + (c.qkv_bias ? q + 2 * kv : 0) + (c.o_bias ? d : 0) +
                          (c.qk_norm ? 2 * c.head_dim() : 0) + (c.post_norms ? 2 * d : 0);
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

double WeightConversion::relative_rms() const {
  return ref_sq > 0.0 ? std::sqrt(err_sq / ref_sq) : (err_sq > 0.0 ? INFINITY : 0.0);
}

void WeightConversion::add(const WeightConversion& o) {
  if (format.empty()) format = o.format;
  else if (!o.format.empty() && ("," + format + ",").find("," + o.format + ",") == std::string::npos)
    format += "," + o.format;
  for (const std::string& s : o.stored_types)
    if (std::find(stored_types.begin(), stored_types.end(), s) == stored_types.end())
      stored_types.push_back(s);
  std::sort(stored_types.begin(), stored_types.end());
  tensors += o.tensors;
  copied += o.copied;
  err_sq += o.err_sq;
  ref_sq += o.ref_sq;
}

WeightConversion LlamaModel::conversion_overall() const {
  WeightConversion all;
  for (const auto& [cls, c] : conversion) all.add(c);
  return all;
}

std::string LlamaModel::conversion_summary() const {
  if (conversion.empty()) return "";
  auto pct = [](double r) {
    char b[32];
    std::snprintf(b, sizeof b, r == 0.0 ? "%.0f %%" : "%.3g %%", 100.0 * r);
    return std::string(b);
  };
  std::string s;
  for (const auto& [cls, c] : conversion) {
    std::string types;
    for (const std::string& t : c.stored_types) types += (types.empty() ? "" : ",") + t;
    s += str(s.empty() ? "" : ", ", cls, " ", types, " -> ", c.format, " ", pct(c.relative_rms()),
             c.copied == c.tensors ? " (copied)" : "");
  }
  return s + ", overall " + pct(conversion_overall().relative_rms());
}

namespace {

// Adds to `conv` how far the packed rows of `w` are from the rows `t` delivers.
void measure_conversion(const TensorSource& t, const WeightMatrix& w, WeightConversion* conv) {
  const int64_t cols = t.cols;
  const int64_t block_rows = std::max<int64_t>(1, (1 << 20) / cols);
  std::vector<float> ref(static_cast<size_t>(std::min(block_rows, t.rows) * cols));
  std::vector<float> got(static_cast<size_t>(cols));
  for (int64_t r0 = 0; r0 < t.rows; r0 += block_rows) {
    const int64_t n = std::min(block_rows, t.rows - r0);
    t.read(r0, n, ref.data());
    for (int64_t r = 0; r < n; ++r) {
      w.format->unpack_row(w.row(r0 + r), cols, got.data());
      const float* x = ref.data() + r * cols;
      for (int64_t i = 0; i < cols; ++i) {
        const double e = static_cast<double>(got[i]) - static_cast<double>(x[i]);
        conv->err_sq += e * e;
        conv->ref_sq += static_cast<double>(x[i]) * static_cast<double>(x[i]);
      }
    }
  }
  const std::string type = t.stored_type.empty() ? "float" : t.stored_type;
  if (std::find(conv->stored_types.begin(), conv->stored_types.end(), type) == conv->stored_types.end()) {
    conv->stored_types.push_back(type);
    std::sort(conv->stored_types.begin(), conv->stored_types.end());
  }
  conv->tensors += 1;
}

// Whether rows of `format` are the rows of `t`'s native layout byte for byte (the same pack and
// unpack: int4_g32 and int4_g32_a8 share their weight rows).
bool native_rows(const TensorSource& t, const FormatRow& format) {
  if (t.native_format.empty() || !t.read_native) return false;
  const FormatRow& native = format_by_name(t.native_format);
  return format.pack_row == native.pack_row && format.unpack_row == native.unpack_row &&
         format.row_bytes == native.row_bytes && !format.packed_row_bytes;
}

// Packs one projection; with sparsity > 0 it is magnitude-pruned first. Every pruning pattern
// works within a row, so pruning happens row block by row block as the rows are read. When the
// source's stored rows already are rows of the format, they are copied. With `conv`, the
// conversion error is added to it.
WeightMatrix pack_tensor(const LlamaSource& src, const std::string& tensor_name,
                         const std::string& fmt_name, double sparsity,
                         WeightConversion* conv = nullptr, const std::string& matrix_name = "") {
  const TensorSource& t = src.tensor(tensor_name);
  const FormatRow& format = format_by_name(fmt_name);
  WeightMatrix w;
  const std::string& wname = matrix_name.empty() ? tensor_name : matrix_name;
  if (sparsity <= 0.0 && native_rows(t, format)) {
    w.name = wname;
    w.rows = t.rows;
    w.cols = t.cols;
    w.format = &format;
    w.row_bytes = format.row_bytes(t.cols);
    w.storage = AlignedBuffer(w.bytes());
    const int64_t block_rows = std::max<int64_t>(1, static_cast<int64_t>((size_t{1} << 22) / w.row_bytes));
    for (int64_t r0 = 0; r0 < t.rows; r0 += block_rows)
      t.read_native(r0, std::min(block_rows, t.rows - r0), w.storage.data() + r0 * w.row_bytes);
    if (conv) conv->copied += 1;
  } else if (sparsity <= 0.0) {
    w = pack_matrix(wname, t.rows, t.cols, format, t.read);
  } else {
    const std::string pattern = prune_pattern_for_format(fmt_name);
    const int64_t cols = t.cols;
    w = pack_matrix(wname, t.rows, cols, format, [&](int64_t r0, int64_t n, float* dst) {
      t.read(r0, n, dst);
      prune_magnitude(dst, n, cols, sparsity, pattern);
    });
  }
  if (conv) {
    if (conv->format.empty()) conv->format = fmt_name;
    measure_conversion(t, w, conv);
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
  // Quantised source weights (GGUF blocks) are re-quantised by the formats: measure how far.
  bool quantised = false;
  for (const auto& [name, t] : src.tensors)
    if (!t.stored_type.empty() && name != "norm" && name.find("_norm") == std::string::npos &&
        (name != "tok_embeddings" || c.tied_output))
      quantised = true;
  WeightConversion conv_attn, conv_ffn, conv_out;
  WeightConversion* ca = quantised ? &conv_attn : nullptr;
  WeightConversion* cf = quantised ? &conv_ffn : nullptr;
  WeightConversion* co = quantised ? &conv_out : nullptr;
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LlamaLayer& L = m.layers[l];
    L.attention_norm = src.tensor(p + "attention_norm").read_all();
    L.ffn_norm = src.tensor(p + "ffn_norm").read_all();
    L.wq = pack_tensor(src, p + "wq", fa, opts.sparsity, ca);
    L.wk = pack_tensor(src, p + "wk", fa, opts.sparsity, ca);
    L.wv = pack_tensor(src, p + "wv", fa, opts.sparsity, ca);
    L.wo = pack_tensor(src, p + "wo", fa, opts.sparsity, ca);
    L.w1 = pack_tensor(src, p + "w1", ff, opts.sparsity, cf);
    L.w2 = pack_tensor(src, p + "w2", ff, opts.sparsity, cf);
    L.w3 = pack_tensor(src, p + "w3", ff, opts.sparsity, cf);
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
    if (c.post_norms) {
      L.post_attention_norm = src.tensor(p + "post_attention_norm").read_all();
      L.post_ffn_norm = src.tensor(p + "post_ffn_norm").read_all();
    }
  }
  const std::string& fo = opts.format_for("output");
  if (c.tied_output) {
    const TensorSource& emb = src.tensor("tok_embeddings");
    if (native_rows(emb, format_by_name(fo))) {
      m.output = pack_tensor(src, "tok_embeddings", fo, 0.0, co, "output");  // the stored rows, copied
    } else {
      m.output = pack_matrix("output", m.tok_embeddings.data(), c.vocab_size, c.dim,
                             format_by_name(fo));
      if (co) {
        co->format = fo;
        measure_conversion(emb, m.output, co);
      }
    }
  } else {
    m.output = pack_tensor(src, "output", fo, 0.0, co);  // the head is never pruned
  }
  if (quantised) {
    m.conversion["attention"] = conv_attn;
    m.conversion["ffn"] = conv_ffn;
    m.conversion["output"] = conv_out;
  }
  return m;
}

}  // namespace cibench
