// BERT-family encoders: configuration, packing into weight formats, and the session that runs
// them (see bert.h). Loading (Hugging Face folders, synthetic presets) is in bert_loaders.cpp.
#include "engines/models/bert.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "engines/core/error.h"
#include "engines/models/hf_config.h"
#include "engines/kernels/kernels.h"
#include "engines/models/safetensors.h"
#include "engines/core/prune.h"

#include "engines/core/splitmix.h"

namespace cibench {

namespace fs = std::filesystem;

const char* bert_arch_name(BertArch a) {
  switch (a) {
    case BertArch::bert: return "bert";
    case BertArch::distilbert: return "distilbert";
    case BertArch::roberta: return "roberta";
    case BertArch::modernbert: return "modernbert";
  }
  return "?";
}

const char* bert_pooling_name(BertPooling p) {
  return p == BertPooling::cls ? "cls" : "mean";
}

const char* bert_activation_name(BertActivation a) {
  switch (a) {
    case BertActivation::gelu: return "gelu";
    case BertActivation::gelu_tanh: return "gelu_tanh";
    case BertActivation::relu: return "relu";
    case BertActivation::none: return "linear";
  }
  return "?";
}

// ---- Configuration --------------------------------------------------------------------------------

int64_t BertConfig::parameter_count() const {
  const int64_t h = hidden, f = intermediate;
  if (modern()) {
    const int64_t norm = norm_bias ? 2 * h : h;
    const int64_t attn = 4 * h * h + (attention_bias ? 4 * h : 0);
    const int64_t mlp = 3 * f * h + (mlp_bias ? 2 * f + h : 0);
    const int64_t layers = n_layers * (attn + mlp + 2 * norm) - norm;  // layer 0: no attn_norm
    const int64_t head = h * h + (head_dense_bias ? h : 0) + norm + static_cast<int64_t>(num_labels) * (h + 1);
    return static_cast<int64_t>(vocab_size) * h + norm + layers + norm + head;
  }
  const int64_t emb = (static_cast<int64_t>(vocab_size) + max_positions + type_vocab_size) * h + 2 * h;
  const int64_t layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h;
  const int64_t head = h * h + h + static_cast<int64_t>(num_labels) * h + num_labels;
  return emb + n_layers * layer + head;
}

void BertConfig::validate(const std::string& origin) const {
  auto bad = [&](const std::string& what) {
    throw FileError(origin, "invalid encoder config: " + what);
  };
  if (hidden <= 0 || n_layers <= 0 || n_heads <= 0 || intermediate <= 0 || vocab_size <= 0 ||
      max_positions <= 0 || num_labels <= 0 || type_vocab_size < 0)
    bad(str("sizes must be positive (hidden=", hidden, " layers=", n_layers, " heads=", n_heads,
            " intermediate=", intermediate, " vocab=", vocab_size, " max_positions=",
            max_positions, " labels=", num_labels, " type_vocab_size=", type_vocab_size, ")"));
  if (hidden > (1 << 16) || intermediate > (1 << 18) || n_layers > 1024 ||
      vocab_size > (1 << 22) || max_positions > (1 << 16) || num_labels > (1 << 16) ||
      type_vocab_size > (1 << 16) || n_heads > hidden)
    bad(str("sizes out of range (hidden=", hidden, " intermediate=", intermediate, " layers=",
            n_layers, " heads=", n_heads, " vocab=", vocab_size, " max_positions=", max_positions,
            ")"));
  if (hidden % n_heads != 0)
    bad(str("hidden size ", hidden, " is not a multiple of the head count ", n_heads));
  if (!(static_cast<float>(layer_norm_eps) > 0) || !std::isfinite(layer_norm_eps))
    bad(str("layer_norm_eps must be > 0, got ", layer_norm_eps));
  if (arch == BertArch::distilbert && type_vocab_size != 0)
    bad("DistilBERT has no token type embeddings");
  if (modern()) {
    if (type_vocab_size != 0 || position_offset != 0)
      bad("ModernBERT has no token type embeddings and no position table");
    if (global_every < 1) bad(str("global_attn_every_n_layers must be >= 1, got ", global_every));
    if (local_window < 2) bad(str("local_attention must be >= 2, got ", local_window));
    if (head_dim() % 2 != 0) bad(str("rotary positions need an even head size, got ", head_dim()));
    for (const double theta : {rope_theta_global, rope_theta_local})
      if (!(theta > 1.0) || !std::isfinite(theta)) bad(str("rope theta must be > 1, got ", theta));
  }
  if (position_offset < 0 || position_offset >= max_positions)
    bad(str("position offset ", position_offset, " leaves no position of the ", max_positions,
            " for a token"));
  if (!labels.empty() && static_cast<int>(labels.size()) != num_labels)
    bad(str(labels.size(), " label names for ", num_labels, " labels"));
}

const TensorSource& BertSource::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw FileError(origin, str("missing tensor '", name, "'"));
  return it->second;
}

// ---- Packed model -----------------------------------------------------------------------------------

const std::string& BertBuildOptions::format_for(const std::string& tensor_class) const {
  auto it = class_format.find(tensor_class);
  return it == class_format.end() ? format : it->second;
}

std::string BertBuildOptions::describe() const {
  std::string s = format;
  for (const auto& [cls, fmt] : class_format) s += "," + cls + "=" + fmt;
  if (sparsity > 0) s += str(",sparsity=", sparsity);
  return s;
}

size_t BertModel::projection_bytes() const {
  size_t b = 0;
  for (const BertLayer& l : layers) b += l.wqkv.bytes() + l.wo.bytes() + l.w_in.bytes() + l.w_out.bytes();
  return b;
}

size_t BertModel::repacked_bytes() const {
  size_t b = head_dense.repacked_bytes() + classifier.repacked_bytes();
  for (const BertLayer& l : layers)
    b += l.wqkv.repacked_bytes() + l.wo.repacked_bytes() + l.w_in.repacked_bytes() + l.w_out.repacked_bytes();
  return b;
}

size_t BertModel::weight_bytes() const {
  size_t floats = word_embeddings.size() + position_embeddings.size() + type_embeddings.size() +
                  emb_norm_w.size() + emb_norm_b.size() + final_norm_w.size() + final_norm_b.size() +
                  head_norm_w.size() + head_norm_b.size() + head_dense_b.size() + classifier_b.size();
  for (const BertLayer& l : layers)
    floats += l.bqkv.size() + l.bo.size() + l.attn_norm_w.size() + l.attn_norm_b.size() +
              l.b_in.size() + l.b_out.size() + l.ffn_norm_w.size() + l.ffn_norm_b.size() +
              l.qkv_in_norm_w.size() + l.qkv_in_norm_b.size() + l.ffn_in_norm_w.size() +
              l.ffn_in_norm_b.size();
  return floats * sizeof(float) + projection_bytes() + head_dense.bytes() + classifier.bytes();
}

BertModel build_bert(const BertSource& src, const BertBuildOptions& opts) {
  const BertConfig& c = src.config;
  c.validate(src.origin);
  for (const auto& [cls, fmt] : opts.class_format) {
    if (cls != "attention" && cls != "ffn")
      throw Error(str("unknown tensor class '", cls,
                      "' in encoder format overrides (known: attention, ffn)"));
    format_by_name(fmt);
  }
  const FormatRow& fa = format_by_name(opts.format_for("attention"));
  const FormatRow& ff = format_by_name(opts.format_for("ffn"));
  const FormatRow& f32 = format_by_name("f32");
  if (!(opts.sparsity >= 0.0 && opts.sparsity < 1.0))
    throw Error(str("sparsity must be in [0, 1), got ", opts.sparsity));
  // Projections are read row block by row block; pruning patterns are per row, so pruning
  // each block is pruning the matrix.
  auto pruned = [&](int64_t cols, const FormatRow& fmt, RowSource read) -> RowSource {
    if (opts.sparsity == 0.0) return read;
    const std::string pattern = prune_pattern_for_format(fmt.name);
    const double sparsity = opts.sparsity;
    return [read, cols, pattern, sparsity](int64_t r0, int64_t n, float* dst) {
      read(r0, n, dst);
      prune_magnitude(dst, n, cols, sparsity, pattern);
    };
  };

  // Shapes are checked again here so a hand-made source cannot slip through.
  auto get = [&](const std::string& name) -> const TensorSource& {
    const TensorSource& t = src.tensor(name);
    const std::vector<int64_t> want = bert_tensor_shape(c, name);
    const int64_t rows = want.size() == 2 ? want[0] : 1;
    if (t.rows != rows || t.cols != want.back()) {
      auto it = src.source_names.find(name);
      throw FileError(src.weights_path.empty() ? src.origin : src.weights_path,
                      str("tensor '", it == src.source_names.end() ? name : it->second,
                          "' has shape [", t.rows, ", ", t.cols, "] but the config implies ",
                          shape_str(want)));
    }
    return t;
  };
  auto vec = [&](const std::string& name) { return get(name).read_all(); };
  // A bias the architecture may lack (ModernBERT's flags): zeros when absent.
  auto bias = [&](const std::string& name) {
    return bert_has_tensor(c, name) ? vec(name)
                                    : std::vector<float>(static_cast<size_t>(bert_tensor_shape(c, name)[0]), 0.0f);
  };
  auto pack = [&](const std::string& name, const FormatRow& fmt, bool prune) {
    const TensorSource& t = get(name);
    return pack_matrix(name, t.rows, t.cols, fmt, prune ? pruned(t.cols, fmt, t.read) : t.read);
  };

  BertModel m;
  m.config = c;
  m.origin = src.origin;
  m.container = src.container;
  m.content_hash = src.content_hash;
  m.build = opts;
  m.word_embeddings = vec("embeddings.word");
  if (bert_has_tensor(c, "embeddings.position")) m.position_embeddings = vec("embeddings.position");
  if (c.type_vocab_size > 0) m.type_embeddings = vec("embeddings.token_type");
  m.emb_norm_w = vec("embeddings.norm.weight");
  m.emb_norm_b = bias("embeddings.norm.bias");
  const int64_t h = c.hidden;
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    BertLayer& L = m.layers[l];
    // Query, key and value rows stacked into one matrix: one pass over the activations.
    const TensorSource* qkv[3] = {&get(p + "query.weight"), &get(p + "key.weight"),
                                  &get(p + "value.weight")};
    L.wqkv = pack_matrix(p + "qkv", 3 * h, h, fa,
                         pruned(h, fa, [&](int64_t r0, int64_t n, float* dst) {
                           for (int64_t r = r0; r < r0 + n;) {
                             const int64_t part = r / h, in_part = r % h;
                             const int64_t take = std::min(r0 + n - r, h - in_part);
                             qkv[part]->read(in_part, take, dst + (r - r0) * h);
                             r += take;
                           }
                         }));
    L.bqkv.reserve(3 * h);
    for (const char* b : {"query.bias", "key.bias", "value.bias"}) {
      const std::vector<float> v = bias(p + b);
      L.bqkv.insert(L.bqkv.end(), v.begin(), v.end());
    }
    L.wo = pack(p + "attn_out.weight", fa, true);
    L.bo = bias(p + "attn_out.bias");
    if (bert_has_tensor(c, p + "attn_norm.weight")) {  // ModernBERT's layer 0: the identity
      L.attn_norm_w = vec(p + "attn_norm.weight");
      L.attn_norm_b = bias(p + "attn_norm.bias");
    }
    L.w_in = pack(p + "ffn_in.weight", ff, true);
    L.b_in = bias(p + "ffn_in.bias");
    L.w_out = pack(p + "ffn_out.weight", ff, true);
    L.b_out = bias(p + "ffn_out.bias");
    L.ffn_norm_w = vec(p + "ffn_norm.weight");
    L.ffn_norm_b = bias(p + "ffn_norm.bias");
    // Folded second LayerNorm outputs (recipes only): both parameters or neither.
    for (auto [name, w, b] : {std::tuple{"qkv_in_norm", &L.qkv_in_norm_w, &L.qkv_in_norm_b},
                              std::tuple{"ffn_in_norm", &L.ffn_in_norm_w, &L.ffn_in_norm_b}}) {
      const std::string n = p + name;
      const bool hw = src.tensors.count(n + ".weight") != 0, hb = src.tensors.count(n + ".bias") != 0;
      if (hw != hb)
        throw FileError(src.origin, str("tensor '", n, hw ? ".weight" : ".bias", "' without '", n,
                                        hw ? ".bias" : ".weight", "'"));
      if (hw) {
        *w = vec(n + ".weight");
        *b = vec(n + ".bias");
      }
    }
  }
  if (c.modern()) {
    m.final_norm_w = vec("final_norm.weight");
    m.final_norm_b = bias("final_norm.bias");
    m.head_norm_w = vec("head.norm.weight");
    m.head_norm_b = bias("head.norm.bias");
  }
  m.head_dense = pack("head.dense.weight", f32, false);
  m.head_dense_b = bias("head.dense.bias");
  m.classifier = pack("head.classifier.weight", f32, false);
  m.classifier_b = vec("head.classifier.bias");
  return m;
}

// ---- Session --------------------------------------------------------------------------------------
namespace {

template <typename T>
T* buf(AlignedBuffer& b) {
  return b.as<T>();
}

// Runs fn(row) for rows [0, n) split across the pool, or on this thread alone when the pass
// is short (under about 64K values: tens of microseconds, the price of waking the pool).
template <typename Fn>
void parallel_rows(ThreadPool& pool, int64_t n, int64_t row_values, Fn&& fn) {
  constexpr int64_t kSerialValues = 1 << 16;
  if (pool.size() == 1 || n * row_values < kSerialValues) {
    for (int64_t r = 0; r < n; ++r) fn(r);
    return;
  }
  pool.run([&](int i, int parts) {
    int64_t b, e;
    ThreadPool::split(n, i, parts, &b, &e);
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

// One layer's self-attention over B sequences of L rows of qkv (each row: the query, key and
// value columns of every head, biases added), split by (sequence, head) over the pool (on
// this thread alone under ~1M multiply-adds). Per task: rotary positions on the
// queries and keys when rope_cos is set (rotate-half: dimensions i and i + head_dim / 2 turn by
// the angle of position t, tables of head_dim / 2 per position); scores Q K^T / sqrt(head_dim);
// the masked softmax per query over every key, or over the keys within `reach` positions when
// reach >= 0 (a sliding window; the others get weight 0); then P V into ctx (rows n_q per
// sequence, `h` apart). `scores` holds per_thread floats per thread: n_q x L scores and the
// head's values transposed (head_dim x L).
void self_attention(const KernelTable& k, ThreadPool& pool, float* qkv, const uint8_t* mask,
                    int64_t B, int64_t L, int64_t n_q, int64_t h, int64_t nh, const float* rope_cos,
                    const float* rope_sin, int64_t reach, float* scores, int64_t per_thread, float* ctx) {
  const int64_t h3 = 3 * h, hd = h / nh, half = hd / 2;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  auto attention = [&](int ti, int parts) {
    float* s = scores + ti * per_thread;  // (n_q, L)
    float* vt = s + L * L;                // (hd, L)
    int64_t b0, b1;
    ThreadPool::split(B * nh, ti, parts, &b0, &b1);
    for (int64_t task = b0; task < b1; ++task) {
      const int64_t b = task / nh, head = task % nh;
      float* base = qkv + b * L * h3 + head * hd;
      const uint8_t* mrow = mask ? mask + b * L : nullptr;
      if (rope_cos)
        for (int64_t part = 0; part < 2; ++part)
          for (int64_t t = 0, rows = part == 0 ? n_q : L; t < rows; ++t) {
            float* v = base + t * h3 + part * h;
            const float* cs = rope_cos + t * half;
            const float* sn = rope_sin + t * half;
            for (int64_t i = 0; i < half; ++i) {
              const float a = v[i], e = v[i + half];
              v[i] = a * cs[i] - e * sn[i];
              v[i + half] = e * cs[i] + a * sn[i];
            }
          }
      k.matmul_f32(base + h, h3, base, h3, s, L, n_q, L, hd);
      for (int64_t qi = 0; qi < n_q; ++qi) {
        const int64_t lo = reach < 0 ? 0 : std::max<int64_t>(0, qi - reach);
        const int64_t hi = reach < 0 ? L : std::min<int64_t>(L, qi + reach + 1);
        float* sr = s + qi * L;
        k.masked_softmax(sr + lo, mrow ? mrow + lo : nullptr, hi - lo, scale);
        std::fill(sr, sr + lo, 0.0f);
        std::fill(sr + hi, sr + L, 0.0f);
      }
      // out = P V, with V transposed so the product is another X W^T
      k.transpose_f32(base + 2 * h, h3, L, hd, vt, L);
      k.matmul_f32(vt, L, s, L, ctx + b * n_q * h + head * hd, h, n_q, hd, L);
    }
  };
  if (pool.size() == 1 || 2 * B * n_q * L * h < (int64_t{1} << 20))
    attention(0, 1);
  else
    pool.run(attention);
}

}  // namespace

BertSession::BertSession(const BertModel& model, const BertSessionOptions& opts)
    : model_(model), opts_(opts) {
  const BertConfig& c = model.config;
  isa_ = opts.isa < 0 ? active_isa() : static_cast<Isa>(opts.isa);
  CIBENCH_CHECK(opts.isa < 0 || isa_supported(isa_), "ISA ", isa_name(isa_),
                " is not supported on this CPU");
  max_length_ = opts.max_length > 0 ? opts.max_length : c.max_length();
  CIBENCH_CHECK(max_length_ <= c.max_length(), "max_length ", max_length_,
                " exceeds the model's ", c.max_length(), " positions");
  CIBENCH_CHECK(opts.max_batch >= 1, "max_batch must be at least 1, got ", opts.max_batch);
  pool_ = std::make_unique<ThreadPool>(opts.threads, opts.pin_threads);
  mm_ = std::make_unique<MatmulRunner>(*pool_, isa_);
  const int64_t rows = static_cast<int64_t>(opts.max_batch) * max_length_;
  const int64_t h = c.hidden, f = c.intermediate;
  mm_->reserve(rows, std::max(h, f));
  auto floats = [](int64_t n) { return AlignedBuffer(static_cast<size_t>(n) * sizeof(float)); };
  x_ = floats(rows * h);
  qkv_ = floats(rows * 3 * h);
  ctx_ = floats(rows * h);
  proj_ = floats(rows * h);
  ffn_ = floats(rows * (c.modern() ? 2 * f : f));  // ModernBERT: input and gate
  for (const BertLayer& l : model.layers)
    if (c.modern() || !l.qkv_in_norm_w.empty() || !l.ffn_in_norm_w.empty()) {
      xin_ = floats(rows * h);  // the folded LayerNorm outputs; ModernBERT's pre-LayerNorm rows
      break;
    }
  if (c.modern()) {
    // Rotary angles t * theta^(-2i / head_dim), in binary64 and rounded once.
    const int64_t half = c.head_dim() / 2;
    for (int g = 0; g < 2; ++g) {
      const double theta = g == 0 ? c.rope_theta_global : c.rope_theta_local;
      rope_cos_[g].resize(static_cast<size_t>(max_length_ * half));
      rope_sin_[g].resize(rope_cos_[g].size());
      for (int64_t t = 0; t < max_length_; ++t)
        for (int64_t i = 0; i < half; ++i) {
          const double a = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim()));
          rope_cos_[g][static_cast<size_t>(t * half + i)] = static_cast<float>(std::cos(a));
          rope_sin_[g][static_cast<size_t>(t * half + i)] = static_cast<float>(std::sin(a));
        }
    }
  }
  // Per thread: one head's scores (L x L) and its values transposed (head_dim x L).
  scores_ = floats(static_cast<int64_t>(opts.threads) *
                   (static_cast<int64_t>(max_length_) * max_length_ +
                    static_cast<int64_t>(c.head_dim()) * max_length_));
  cls_ = floats(2 * static_cast<int64_t>(opts.max_batch) * h);
  logits_ = floats(static_cast<int64_t>(opts.max_batch) * c.num_labels);
}

BertSession::~BertSession() = default;

void BertSession::matmul_bias_act(const WeightMatrix& w, const float* in, int64_t m, float* out,
                                  const float* bias, Activation act) {
  const int64_t n = w.rows;
  // Bias and activation on each thread's columns as soon as it has computed them (in cache).
  auto cols = [&, add = kernels_for(isa_).bias_activation](int64_t c0, int64_t c1) {
    for (int64_t r = 0; r < m; ++r) add(out + r * n + c0, bias + c0, c1 - c0, act);
  };
  mm_->matmul(
      w, in, w.cols, m, out, n,
      [](void* g, int64_t c0, int64_t c1) { (*static_cast<decltype(cols)*>(g))(c0, c1); }, &cols);
}

size_t BertSession::scratch_bytes() const {
  return x_.size() + qkv_.size() + ctx_.size() + proj_.size() + ffn_.size() + xin_.size() +
         scores_.size() + cls_.size() + logits_.size() +
         2 * (rope_cos_[0].size() + rope_cos_[1].size()) * sizeof(float);
}

const float* BertSession::classify(const int* ids, int n, const int* token_types) {
  forward(ids, nullptr, token_types, 1, n, buf<float>(logits_));
  return buf<float>(logits_);
}

void BertSession::classify_batch(const int* ids, const uint8_t* mask, int batch, int seq_len,
                                 float* logits, const int* token_types) {
  forward(ids, mask, token_types, batch, seq_len, logits);
}

void BertSession::forward(const int* ids, const uint8_t* mask, const int* token_types, int batch,
                          int seq_len, float* logits) {
  const BertConfig& c = model_.config;
  CIBENCH_CHECK(batch >= 1 && batch <= opts_.max_batch, "batch of ", batch,
                " sequences; this session takes 1..", opts_.max_batch);
  CIBENCH_CHECK(seq_len >= 1 && seq_len <= max_length_, "sequence length ", seq_len,
                "; this session takes 1..", max_length_);
  const int64_t B = batch, L = seq_len, M = B * L;
  const int64_t h = c.hidden, f = c.intermediate, nh = c.n_heads, hd = c.head_dim();
  const float eps = static_cast<float>(c.layer_norm_eps);
  for (int64_t r = 0; r < M; ++r) {
    CIBENCH_CHECK(ids[r] >= 0 && ids[r] < c.vocab_size, "token id ", ids[r], " at position ", r,
                  " is outside the vocabulary of ", c.vocab_size);
    if (token_types)
      CIBENCH_CHECK(token_types[r] >= 0 && token_types[r] < std::max(1, c.type_vocab_size),
                    "token type ", token_types[r], " at position ", r, " is outside 0..",
                    std::max(1, c.type_vocab_size) - 1);
  }
  if (c.modern()) return forward_modern(ids, mask, batch, seq_len, logits);
  const KernelTable& k = kernels_for(isa_);
  // LayerNorm(x + a + bias), optionally with a folded second output (encoder_math.h).
  auto layer_norm = [&k](float* xv, const float* a, const float* bias, const float* w, const float* b, int64_t n,
                         float eps_, float* out2 = nullptr, const float* w2 = nullptr, const float* b2 = nullptr) {
    k.add_layer_norm(xv, a, bias, w, b, n, eps_, out2, w2, b2);
  };
  ThreadPool& pool = *pool_;
  float* x = buf<float>(x_);
  float* qkv = buf<float>(qkv_);
  float* ctx = buf<float>(ctx_);
  float* proj = buf<float>(proj_);
  float* ffn = buf<float>(ffn_);
  float* xin = xin_.size() ? buf<float>(xin_) : nullptr;  // folded LayerNorm outputs
  ActivationObserver* obs = opts_.observer;
  float* cls = buf<float>(cls_);        // (B, h): the [CLS] rows through the last layer
  float* pooled = cls + B * h;          // (B, h): the head's hidden layer
  const int64_t per_thread = L * L + hd * L;

  auto rows_parallel = [&](int64_t n, int64_t row_values, auto&& fn) { parallel_rows(pool, n, row_values, fn); };

  // ---- embeddings: word + position + token type, LayerNorm
  rows_parallel(M, h, [&](int64_t r) {
    const int64_t t = r % L;
    float* xr = x + r * h;
    const float* we = model_.word_embeddings.data() + static_cast<int64_t>(ids[r]) * h;
    const float* pe = model_.position_embeddings.data() + (t + c.position_offset) * h;
    for (int64_t i = 0; i < h; ++i) xr[i] = we[i] + pe[i];
    if (c.type_vocab_size > 0) {
      const float* te = model_.type_embeddings.data() + (token_types ? token_types[r] : 0) * h;
      for (int64_t i = 0; i < h; ++i) xr[i] += te[i];
    }
    const BertLayer& L0 = model_.layers[0];
    if (L0.qkv_in_norm_w.empty())
      layer_norm(xr, nullptr, nullptr, model_.emb_norm_w.data(), model_.emb_norm_b.data(), h,
                     eps);
    else
      layer_norm(xr, nullptr, nullptr, model_.emb_norm_w.data(), model_.emb_norm_b.data(), h,
                     eps, xin + r * h, L0.qkv_in_norm_w.data(), L0.qkv_in_norm_b.data());
  });

  for (int l = 0; l < c.n_layers; ++l) {
    const BertLayer& Ly = model_.layers[l];
    // In the last layer only the [CLS] rows feed the head: their queries alone are attended,
    // and the projections after attention run on B rows instead of B * L.
    const bool last = l + 1 == c.n_layers;
    const int64_t n_q = last ? 1 : L;

    // ---- self-attention
    const std::string lp = obs ? "layers." + std::to_string(l) + "." : std::string();
    const float* qkv_in = Ly.qkv_in_norm_w.empty() ? x : xin;
    if (obs) obs->observe(lp + "query", qkv_in, M, h);
    matmul_bias_act(Ly.wqkv, qkv_in, M, qkv, Ly.bqkv.data(), Activation::none);
    self_attention(k, pool, qkv, mask, B, L, n_q, h, nh, nullptr, nullptr, -1,
                   buf<float>(scores_), per_thread, ctx);

    float* xs = x;          // the rows that continue: all of them, or the [CLS] rows
    int64_t m = M;
    if (last) {
      for (int64_t b = 0; b < B; ++b) std::memcpy(cls + b * h, x + b * L * h, h * sizeof(float));
      xs = cls;
      m = B;
    }
    // ---- attention output, residual, LayerNorm
    if (obs) obs->observe(lp + "attn_out", ctx, m, h);
    mm_->matmul(Ly.wo, ctx, h, m, proj, h);
    const bool ffn_fold = !Ly.ffn_in_norm_w.empty();
    rows_parallel(m, h, [&](int64_t r) {
      if (ffn_fold)
        layer_norm(xs + r * h, proj + r * h, Ly.bo.data(), Ly.attn_norm_w.data(),
                       Ly.attn_norm_b.data(), h, eps, xin + r * h, Ly.ffn_in_norm_w.data(),
                       Ly.ffn_in_norm_b.data());
      else
        layer_norm(xs + r * h, proj + r * h, Ly.bo.data(), Ly.attn_norm_w.data(),
                       Ly.attn_norm_b.data(), h, eps);
    });
    // ---- feed-forward, residual, LayerNorm
    const float* ffn_in = ffn_fold ? xin : xs;
    if (obs) obs->observe(lp + "ffn_in", ffn_in, m, h);
    matmul_bias_act(Ly.w_in, ffn_in, m, ffn, Ly.b_in.data(), c.activation);
    if (obs) obs->observe(lp + "ffn_out", ffn, m, f);
    mm_->matmul(Ly.w_out, ffn, f, m, proj, h);
    // The next layer's folded q/k/v input comes out of this LayerNorm as a second output.
    const BertLayer* next = last ? nullptr : &model_.layers[l + 1];
    const bool qkv_fold = next && !next->qkv_in_norm_w.empty();
    rows_parallel(m, h, [&](int64_t r) {
      if (qkv_fold)
        layer_norm(xs + r * h, proj + r * h, Ly.b_out.data(), Ly.ffn_norm_w.data(),
                       Ly.ffn_norm_b.data(), h, eps, xin + r * h, next->qkv_in_norm_w.data(),
                       next->qkv_in_norm_b.data());
      else
        layer_norm(xs + r * h, proj + r * h, Ly.b_out.data(), Ly.ffn_norm_w.data(),
                       Ly.ffn_norm_b.data(), h, eps);
    });
  }

  // ---- classification head on the [CLS] rows
  mm_->matmul(model_.head_dense, cls, h, B, pooled, h);
  for (int64_t b = 0; b < B; ++b) {
    float* p = pooled + b * h;
    if (c.arch != BertArch::distilbert)
      for (int64_t i = 0; i < h; ++i) p[i] = std::tanh(p[i] + model_.head_dense_b[i]);
    else
      for (int64_t i = 0; i < h; ++i) p[i] = std::max(0.0f, p[i] + model_.head_dense_b[i]);
  }
  const int64_t nl = c.num_labels;
  mm_->matmul(model_.classifier, pooled, h, B, logits, nl);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < nl; ++i) logits[b * nl + i] += model_.classifier_b[i];
}

// ModernBERT: pre-LayerNorm residual layers with rotary positions, local (sliding-window) or
// global attention, and a gated feed-forward; final LayerNorm, pooling, dense + act + LayerNorm
// head. The arithmetic of bert_reference.cpp's forward_modern, in kernels and packed matrices.
void BertSession::forward_modern(const int* ids, const uint8_t* mask, int batch, int seq_len,
                                 float* logits) {
  const BertConfig& c = model_.config;
  const int64_t B = batch, L = seq_len, M = B * L;
  const int64_t h = c.hidden, f = c.intermediate, f2 = 2 * f, nh = c.n_heads;
  const int64_t hd = c.head_dim(), reach = c.local_window / 2;
  const float eps = static_cast<float>(c.layer_norm_eps);
  const KernelTable& k = kernels_for(isa_);
  ThreadPool& pool = *pool_;
  auto rows_parallel = [&](int64_t n, int64_t row_values, auto&& fn) { parallel_rows(pool, n, row_values, fn); };
  float* x = buf<float>(x_);
  float* qkv = buf<float>(qkv_);
  float* ctx = buf<float>(ctx_);
  float* proj = buf<float>(proj_);
  float* ffn = buf<float>(ffn_);
  float* xin = buf<float>(xin_);  // LayerNorm outputs: the residual stream x stays as it is
  ActivationObserver* obs = opts_.observer;
  float* cls = buf<float>(cls_);  // (B, h): the pooled rows
  float* pooled = cls + B * h;    // (B, h): the head's hidden layer
  const bool cls_pooling = c.pooling == BertPooling::cls;
  const int64_t per_thread = L * L + hd * L;
  auto layer_norm = [&](float* row, const std::vector<float>& w, const std::vector<float>& b) {
    k.add_layer_norm(row, nullptr, nullptr, w.data(), b.data(), h, eps, nullptr, nullptr, nullptr);
  };
  // dst rows = LayerNorm(src rows), src unchanged.
  auto norm_into = [&](const float* src, float* dst, int64_t n, const std::vector<float>& w,
                       const std::vector<float>& b) {
    rows_parallel(n, h, [&](int64_t r) {
      std::memcpy(dst + r * h, src + r * h, static_cast<size_t>(h) * sizeof(float));
      layer_norm(dst + r * h, w, b);
    });
  };

  // ---- embeddings: the token's row, LayerNorm
  rows_parallel(M, h, [&](int64_t r) {
    std::memcpy(x + r * h, model_.word_embeddings.data() + static_cast<int64_t>(ids[r]) * h,
                static_cast<size_t>(h) * sizeof(float));
    layer_norm(x + r * h, model_.emb_norm_w, model_.emb_norm_b);
  });
  for (int l = 0; l < c.n_layers; ++l) {
    const BertLayer& Ly = model_.layers[l];
    // With [CLS] pooling only the first row of each sequence leaves the last layer: its query
    // alone is attended, and the projections after attention run on B rows instead of B * L.
    const bool last = l + 1 == c.n_layers, cls_only = last && cls_pooling;
    const int64_t n_q = cls_only ? 1 : L;
    const bool global = c.global_layer(l);
    const float* rcos = rope_cos_[global ? 0 : 1].data();
    const float* rsin = rope_sin_[global ? 0 : 1].data();

    // ---- self-attention on LayerNorm(x) (layer 0: x itself)
    const std::string lp = obs ? "layers." + std::to_string(l) + "." : std::string();
    const float* ain = x;
    if (!Ly.attn_norm_w.empty()) {
      norm_into(x, xin, M, Ly.attn_norm_w, Ly.attn_norm_b);
      ain = xin;
    }
    if (obs) obs->observe(lp + "query", ain, M, h);
    matmul_bias_act(Ly.wqkv, ain, M, qkv, Ly.bqkv.data(), Activation::none);
    // Global layers see every key; local ones the keys within local_window / 2 of the query.
    self_attention(k, pool, qkv, mask, B, L, n_q, h, nh, rcos, rsin, global ? -1 : reach,
                   buf<float>(scores_), per_thread, ctx);

    float* xs = x;  // the rows that continue: all of them, or the [CLS] rows
    int64_t m = M;
    if (cls_only) {
      for (int64_t b = 0; b < B; ++b) std::memcpy(cls + b * h, x + b * L * h, static_cast<size_t>(h) * sizeof(float));
      xs = cls;
      m = B;
    }
    // ---- attention output and residual
    if (obs) obs->observe(lp + "attn_out", ctx, m, h);
    mm_->matmul(Ly.wo, ctx, h, m, proj, h);
    rows_parallel(m, h, [&](int64_t r) {
      for (int64_t i = 0; i < h; ++i) xs[r * h + i] += proj[r * h + i] + Ly.bo[static_cast<size_t>(i)];
    });
    // ---- gated feed-forward on LayerNorm(x): act(input) * gate, then the output projection
    norm_into(xs, xin, m, Ly.ffn_norm_w, Ly.ffn_norm_b);
    if (obs) obs->observe(lp + "ffn_in", xin, m, h);
    mm_->matmul(Ly.w_in, xin, h, m, ffn, f2);
    rows_parallel(m, f2, [&](int64_t r) {
      float* row = ffn + r * f2;
      k.bias_activation(row, Ly.b_in.data(), f, c.activation);
      for (int64_t i = 0; i < f; ++i) row[i] *= row[f + i] + Ly.b_in[static_cast<size_t>(f + i)];
    });
    int64_t ld = f2;  // the gated values are the first f of each row
    if (obs) {        // packed to rows of f for the observer (in order: a row never overtakes its source)
      for (int64_t r = 0; r < m; ++r) std::memmove(ffn + r * f, ffn + r * f2, static_cast<size_t>(f) * sizeof(float));
      ld = f;
      obs->observe(lp + "ffn_out", ffn, m, f);
    }
    mm_->matmul(Ly.w_out, ffn, ld, m, proj, h);
    rows_parallel(m, h, [&](int64_t r) {
      for (int64_t i = 0; i < h; ++i) xs[r * h + i] += proj[r * h + i] + Ly.b_out[static_cast<size_t>(i)];
    });
  }

  // ---- final LayerNorm and pooling
  if (cls_pooling) {
    for (int64_t b = 0; b < B; ++b) layer_norm(cls + b * h, model_.final_norm_w, model_.final_norm_b);
  } else {
    rows_parallel(M, h, [&](int64_t r) { layer_norm(x + r * h, model_.final_norm_w, model_.final_norm_b); });
    for (int64_t b = 0; b < B; ++b) {
      float* p = cls + b * h;
      std::fill(p, p + h, 0.0f);
      int64_t count = 0;
      for (int64_t t = 0; t < L; ++t) {
        if (mask && !mask[b * L + t]) continue;
        ++count;
        const float* xr = x + (b * L + t) * h;
        for (int64_t i = 0; i < h; ++i) p[i] += xr[i];
      }
      const float inv = static_cast<float>(std::max<int64_t>(count, 1));
      for (int64_t i = 0; i < h; ++i) p[i] /= inv;
    }
  }
  // ---- head: LayerNorm(act(dense(pooled))), then the classifier
  mm_->matmul(model_.head_dense, cls, h, B, pooled, h);
  for (int64_t b = 0; b < B; ++b) {
    k.bias_activation(pooled + b * h, model_.head_dense_b.data(), h, c.head_activation);
    layer_norm(pooled + b * h, model_.head_norm_w, model_.head_norm_b);
  }
  const int64_t nl = c.num_labels;
  mm_->matmul(model_.classifier, pooled, h, B, logits, nl);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < nl; ++i) logits[b * nl + i] += model_.classifier_b[static_cast<size_t>(i)];
}

}  // namespace cibench
