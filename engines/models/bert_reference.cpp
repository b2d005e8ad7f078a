// The readable reference forward pass of the BERT-family encoder: plain scalar FP32 over one
// sequence, no threads, no kernels table, no packed formats. The oracle for BertSession.
//
//   x = LayerNorm(word[id] + position[t + offset] + token_type[tt])    embeddings (offset:
//                                                                        RoBERTa's 2, else 0)
//   for each layer:                                                      (post-LayerNorm)
//     q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv
//     per head: a = softmax(q k^T / sqrt(head_dim) + mask) v
//     x = LayerNorm(x + a Wo^T + bo)
//     x = LayerNorm(x + act(x W1^T + b1) W2^T + b2)
//   BERT:       logits = Wc tanh(Wp x[0] + bp) + bc                      pooler + classifier
//   RoBERTa:    the same (classifier.dense, classifier.out_proj)
//   DistilBERT: logits = Wc relu(Wp x[0] + bp) + bc                      pre_classifier + classifier
//
// ModernBERT (forward_modern): pre-LayerNorm, rotary positions, no position table.
//   x = LayerNorm(word[id])
//   for each layer l:
//     a = l == 0 ? x : LayerNorm(x)
//     q, k, v = a Wq^T + bq, a Wk^T + bk, a Wv^T + bv       (the row blocks of Wqkv)
//     q, k = rope(q, t), rope(k, t)   per head, rotate-half: (x1, x2) -> (x1 c - x2 s, x2 c + x1 s)
//                                     with angle t * theta^(-2i / head_dim), theta global or local
//     per head: a = softmax(q k^T / sqrt(head_dim) + mask) v, where a local layer
//               (l % global_every != 0) also masks the keys farther than local_window / 2
//     x = x + a Wo^T + bo
//     u = LayerNorm(x) Wi^T + bi;  x = x + (act(u[:f]) * u[f:]) Wo'^T + bo'
//   x = LayerNorm(x);  p = x[0] ([CLS] pooling) or the mean of the tokens' rows (mean pooling)
//   logits = Wc LayerNorm(act(Wd p + bd)) + bc
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engines/core/error.h"
#include "engines/models/bert.h"

namespace cibench {
namespace {

// y (n_out) = W x + b, W (n_out, n_in) row-major.
template <typename Real>
void linear(const std::vector<Real>& w, const std::vector<Real>& b, const Real* x,
            int64_t n_in, int64_t n_out, Real* y) {
  for (int64_t o = 0; o < n_out; ++o) {
    Real s = 0;
    for (int64_t i = 0; i < n_in; ++i) s += w[o * n_in + i] * x[i];
    y[o] = s + b[o];
  }
}

template <typename Real>
void layer_norm(Real* x, const std::vector<Real>& w, const std::vector<Real>& b, int64_t n,
                Real eps) {
  Real mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<Real>(n);
  Real var = 0;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<Real>(n);
  const Real inv = Real(1) / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - mean) * inv * w[i] + b[i];
}

template <typename Real>
Real activation(Real v, BertActivation act) {
  const Real half = Real(0.5), one = Real(1);
  switch (act) {
    case BertActivation::gelu:  // exact: 0.5 v (1 + erf(v / sqrt(2)))
      return half * v * (one + std::erf(v / std::sqrt(Real(2))));
    case BertActivation::gelu_tanh:
      return half * v *
             (one + std::tanh(std::sqrt(Real(2) / Real(3.14159265358979)) * (v + Real(0.044715) * v * v * v)));
    case BertActivation::relu:
      return v > Real(0) ? v : Real(0);
    case BertActivation::none:
      return v;
  }
  return v;
}

// Self-attention of every query row over every key row, head by head:
//   att[t] = sum_s softmax_s(q_t . k_s / sqrt(head_dim) + m(t, s)) v_s
// where a key the query may not see (hidden(t, s): padding, or outside a sliding window) gets
// the most negative float added, as Hugging Face's masks do. q, k, v, att are (n, h) rows.
template <typename Real, typename Hidden>
void attention(const std::vector<Real>& q, const std::vector<Real>& k, const std::vector<Real>& v, int64_t n,
               int64_t h, int64_t nh, Hidden hidden, std::vector<Real>& att) {
  const int64_t hd = h / nh;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(hd));
  const Real masked = static_cast<Real>(-3.4028234663852886e38);  // the most negative float
  std::vector<Real> scores(n);
  for (int64_t head = 0; head < nh; ++head) {
    for (int64_t t = 0; t < n; ++t) {
      const Real* qt = &q[t * h + head * hd];
      Real mx = -INFINITY;
      for (int64_t s = 0; s < n; ++s) {
        Real d = 0;
        for (int64_t i = 0; i < hd; ++i) d += qt[i] * k[s * h + head * hd + i];
        scores[s] = d * scale + (hidden(t, s) ? masked : Real(0));
        mx = std::max(mx, scores[s]);
      }
      Real sum = 0;
      for (int64_t s = 0; s < n; ++s) {
        scores[s] = std::exp(scores[s] - mx);
        sum += scores[s];
      }
      for (int64_t i = 0; i < hd; ++i) {
        Real o = 0;
        for (int64_t s = 0; s < n; ++s) o += scores[s] / sum * v[s * h + head * hd + i];
        att[t * h + head * hd + i] = o;
      }
    }
  }
}

template <typename Real>
std::vector<Real> widen(const std::vector<float>& f) {
  return std::vector<Real>(f.begin(), f.end());
}

}  // namespace

template <typename Real>
BertReferenceT<Real>::BertReferenceT(const BertSource& src) : c_(src.config) {
  c_.validate(src.origin);
  // The folded second LayerNorm outputs (layers.{i}.qkv_in_norm / ffn_in_norm, written by the
  // quantisation recipes with channel scales folded into the projections) are not part of this
  // forward pass: computing without them would silently give other logits.
  for (const auto& entry : src.tensors) {
    const std::string& name = entry.first;
    for (const char* folded : {".qkv_in_norm.", ".ffn_in_norm."})
      if (name.find(folded) != std::string::npos)
        throw FileError(src.origin,
                        str("tensor '", name,
                            "' is a folded LayerNorm output of a quantisation recipe; the "
                            "reference forward pass runs unfolded Hugging Face weights only"));
  }
  auto read = [&](const std::string& name) { return widen<Real>(src.tensor(name).read_all()); };
  // A tensor the architecture may lack (ModernBERT's biases and layer 0's attn_norm): read when
  // the config has it, else zeros for a bias and nothing for a LayerNorm weight.
  auto maybe = [&](const std::string& name) {
    if (bert_has_tensor(c_, name)) return read(name);
    const bool is_bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    return is_bias ? std::vector<Real>(static_cast<size_t>(bert_tensor_shape(c_, name)[0]), Real(0)) : std::vector<Real>();
  };
  word = read("embeddings.word");
  position = maybe("embeddings.position");
  if (c_.type_vocab_size > 0) token_type = read("embeddings.token_type");
  emb_norm_w = read("embeddings.norm.weight");
  emb_norm_b = maybe("embeddings.norm.bias");
  for (int l = 0; l < c_.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Layer L;
    L.wq = read(p + "query.weight");
    L.bq = maybe(p + "query.bias");
    L.wk = read(p + "key.weight");
    L.bk = maybe(p + "key.bias");
    L.wv = read(p + "value.weight");
    L.bv = maybe(p + "value.bias");
    L.wo = read(p + "attn_out.weight");
    L.bo = maybe(p + "attn_out.bias");
    L.attn_norm_w = maybe(p + "attn_norm.weight");
    L.attn_norm_b = maybe(p + "attn_norm.bias");
    L.w_in = read(p + "ffn_in.weight");
    L.b_in = maybe(p + "ffn_in.bias");
    L.w_out = read(p + "ffn_out.weight");
    L.b_out = maybe(p + "ffn_out.bias");
    L.ffn_norm_w = read(p + "ffn_norm.weight");
    L.ffn_norm_b = maybe(p + "ffn_norm.bias");
    layers.push_back(std::move(L));
  }
  head_w = read("head.dense.weight");
  head_b = maybe("head.dense.bias");
  if (c_.modern()) {
    final_norm_w = read("final_norm.weight");
    final_norm_b = maybe("final_norm.bias");
    head_norm_w = read("head.norm.weight");
    head_norm_b = maybe("head.norm.bias");
  }
  cls_w = read("head.classifier.weight");
  cls_b = read("head.classifier.bias");
}

template <typename Real>
std::vector<Real> BertReferenceT<Real>::forward(const std::vector<int>& ids,
                                                const std::vector<uint8_t>& mask,
                                                const std::vector<int>& token_types) const {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t h = c_.hidden, f = c_.intermediate, nh = c_.n_heads;
  CIBENCH_CHECK(n >= 1 && n <= c_.max_length(), "sequence length ", n, " is outside 1..",
                c_.max_length());
  CIBENCH_CHECK(mask.empty() || static_cast<int64_t>(mask.size()) == n, "mask length ",
                mask.size(), " differs from the sequence length ", n);
  CIBENCH_CHECK(token_types.empty() || static_cast<int64_t>(token_types.size()) == n,
                "token_types length ", token_types.size(), " differs from the sequence length ", n);
  if (c_.modern()) {
    for (int tt : token_types) CIBENCH_CHECK(tt == 0, "token type ", tt, ": ModernBERT has none");
    return forward_modern(ids, mask);
  }

  // ---- embeddings -----------------------------------------------------------------------------
  std::vector<Real> x(n * h);  // (n, hidden)
  for (int64_t t = 0; t < n; ++t) {
    CIBENCH_CHECK(ids[t] >= 0 && ids[t] < c_.vocab_size, "token id ", ids[t], " out of range");
    const int tt = token_types.empty() ? 0 : token_types[t];
    for (int64_t i = 0; i < h; ++i) {
      Real e = word[ids[t] * h + i] + position[(t + c_.position_offset) * h + i];
      if (c_.type_vocab_size > 0) e += token_type[tt * h + i];
      x[t * h + i] = e;
    }
    layer_norm(&x[t * h], emb_norm_w, emb_norm_b, h, static_cast<Real>(c_.layer_norm_eps));
  }

  // ---- encoder layers -------------------------------------------------------------------------
  std::vector<Real> q(n * h), k(n * h), v(n * h), att(n * h), tmp(h), hid(f);
  for (const Layer& L : layers) {
    for (int64_t t = 0; t < n; ++t) {
      linear(L.wq, L.bq, &x[t * h], h, h, &q[t * h]);
      linear(L.wk, L.bk, &x[t * h], h, h, &k[t * h]);
      linear(L.wv, L.bv, &x[t * h], h, h, &v[t * h]);
    }
    // attention; padding keys hidden
    attention(q, k, v, n, h, nh, [&](int64_t, int64_t s) { return !mask.empty() && !mask[s]; }, att);
    // output projection, residual, LayerNorm; feed-forward, residual, LayerNorm
    for (int64_t t = 0; t < n; ++t) {
      Real* xt = &x[t * h];
      linear(L.wo, L.bo, &att[t * h], h, h, tmp.data());
      for (int64_t i = 0; i < h; ++i) xt[i] += tmp[i];
      layer_norm(xt, L.attn_norm_w, L.attn_norm_b, h, static_cast<Real>(c_.layer_norm_eps));
      linear(L.w_in, L.b_in, xt, h, f, hid.data());
      for (int64_t i = 0; i < f; ++i) hid[i] = activation(hid[i], c_.activation);
      linear(L.w_out, L.b_out, hid.data(), f, h, tmp.data());
      for (int64_t i = 0; i < h; ++i) xt[i] += tmp[i];
      layer_norm(xt, L.ffn_norm_w, L.ffn_norm_b, h, static_cast<Real>(c_.layer_norm_eps));
    }
  }

  // ---- classification head on [CLS] (position 0) -------------------------------------------------
  std::vector<Real> pooled(h), logits(c_.num_labels);
  linear(head_w, head_b, &x[0], h, h, pooled.data());
  for (int64_t i = 0; i < h; ++i)
    pooled[i] = c_.arch != BertArch::distilbert ? std::tanh(pooled[i]) : std::max(Real(0), pooled[i]);
  linear(cls_w, cls_b, pooled.data(), h, c_.num_labels, logits.data());
  return logits;
}


template <typename Real>
std::vector<Real> BertReferenceT<Real>::forward_modern(const std::vector<int>& ids,
                                                       const std::vector<uint8_t>& mask) const {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t h = c_.hidden, f = c_.intermediate, nh = c_.n_heads, hd = c_.head_dim(), half = hd / 2;
  const Real eps = static_cast<Real>(c_.layer_norm_eps);

  // ---- embeddings -----------------------------------------------------------------------------
  std::vector<Real> x(n * h);
  for (int64_t t = 0; t < n; ++t) {
    CIBENCH_CHECK(ids[t] >= 0 && ids[t] < c_.vocab_size, "token id ", ids[t], " out of range");
    for (int64_t i = 0; i < h; ++i) x[t * h + i] = word[ids[t] * h + i];
    layer_norm(&x[t * h], emb_norm_w, emb_norm_b, h, eps);
  }

  // rotary angles t * theta^(-2i / head_dim), computed in binary64 and rounded once
  auto rope_tables = [&](double theta, std::vector<Real>& cs, std::vector<Real>& sn) {
    cs.resize(n * half);
    sn.resize(n * half);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
        cs[t * half + i] = static_cast<Real>(std::cos(a));
        sn[t * half + i] = static_cast<Real>(std::sin(a));
      }
  };
  std::vector<Real> cos_tab[2], sin_tab[2];
  rope_tables(c_.rope_theta_global, cos_tab[0], sin_tab[0]);
  rope_tables(c_.rope_theta_local, cos_tab[1], sin_tab[1]);

  // ---- encoder layers -------------------------------------------------------------------------
  std::vector<Real> a(n * h), q(n * h), k(n * h), v(n * h), att(n * h), tmp(h), u(2 * f), g(f);
  const int64_t reach = c_.local_window / 2;
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    const bool global = c_.global_layer(static_cast<int>(l));
    const std::vector<Real>& cs = cos_tab[global ? 0 : 1];
    const std::vector<Real>& sn = sin_tab[global ? 0 : 1];
    a = x;
    if (!L.attn_norm_w.empty())
      for (int64_t t = 0; t < n; ++t) layer_norm(&a[t * h], L.attn_norm_w, L.attn_norm_b, h, eps);
    for (int64_t t = 0; t < n; ++t) {
      linear(L.wq, L.bq, &a[t * h], h, h, &q[t * h]);
      linear(L.wk, L.bk, &a[t * h], h, h, &k[t * h]);
      linear(L.wv, L.bv, &a[t * h], h, h, &v[t * h]);
      for (Real* r : {&q[t * h], &k[t * h]})
        for (int64_t head = 0; head < nh; ++head) {
          Real* e = r + head * hd;
          for (int64_t i = 0; i < half; ++i) {
            const Real x1 = e[i], x2 = e[i + half];
            e[i] = x1 * cs[t * half + i] - x2 * sn[t * half + i];
            e[i + half] = x2 * cs[t * half + i] + x1 * sn[t * half + i];
          }
        }
    }
    // padding keys, and in a local layer the keys beyond the window, hidden
    attention(q, k, v, n, h, nh,
              [&](int64_t t, int64_t s) {
                return (!mask.empty() && !mask[s]) || (!global && std::abs(t - s) > reach);
              },
              att);
    for (int64_t t = 0; t < n; ++t) {
      Real* xt = &x[t * h];
      linear(L.wo, L.bo, &att[t * h], h, h, tmp.data());
      for (int64_t i = 0; i < h; ++i) xt[i] += tmp[i];
      std::vector<Real> m(xt, xt + h);
      layer_norm(m.data(), L.ffn_norm_w, L.ffn_norm_b, h, eps);
      linear(L.w_in, L.b_in, m.data(), h, 2 * f, u.data());
      for (int64_t i = 0; i < f; ++i) g[i] = activation(u[i], c_.activation) * u[f + i];
      linear(L.w_out, L.b_out, g.data(), f, h, tmp.data());
      for (int64_t i = 0; i < h; ++i) xt[i] += tmp[i];
    }
  }

  // ---- final LayerNorm, pooling, head ---------------------------------------------------------------
  for (int64_t t = 0; t < n; ++t) layer_norm(&x[t * h], final_norm_w, final_norm_b, h, eps);
  std::vector<Real> pooled(h, Real(0)), hid(h), logits(c_.num_labels);
  if (c_.pooling == BertPooling::cls) {
    std::copy(x.begin(), x.begin() + h, pooled.begin());
  } else {
    int64_t count = 0;
    for (int64_t t = 0; t < n; ++t) {
      if (!mask.empty() && !mask[t]) continue;
      ++count;
      for (int64_t i = 0; i < h; ++i) pooled[i] += x[t * h + i];
    }
    for (int64_t i = 0; i < h; ++i) pooled[i] /= static_cast<Real>(std::max<int64_t>(count, 1));
  }
  linear(head_w, head_b, pooled.data(), h, h, hid.data());
  for (int64_t i = 0; i < h; ++i) hid[i] = activation(hid[i], c_.head_activation);
  layer_norm(hid.data(), head_norm_w, head_norm_b, h, eps);
  linear(cls_w, cls_b, hid.data(), h, c_.num_labels, logits.data());
  return logits;
}

template class BertReferenceT<float>;
template class BertReferenceT<double>;

}  // namespace cibench
