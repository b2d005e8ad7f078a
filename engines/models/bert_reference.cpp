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
#include <cmath>

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
  }
  return v;
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
  word = read("embeddings.word");
  position = read("embeddings.position");
  if (c_.type_vocab_size > 0) token_type = read("embeddings.token_type");
  emb_norm_w = read("embeddings.norm.weight");
  emb_norm_b = read("embeddings.norm.bias");
  for (int l = 0; l < c_.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Layer L;
    L.wq = read(p + "query.weight");
    L.bq = read(p + "query.bias");
    L.wk = read(p + "key.weight");
    L.bk = read(p + "key.bias");
    L.wv = read(p + "value.weight");
    L.bv = read(p + "value.bias");
    L.wo = read(p + "attn_out.weight");
    L.bo = read(p + "attn_out.bias");
    L.attn_norm_w = read(p + "attn_norm.weight");
    L.attn_norm_b = read(p + "attn_norm.bias");
    L.w_in = read(p + "ffn_in.weight");
    L.b_in = read(p + "ffn_in.bias");
    L.w_out = read(p + "ffn_out.weight");
    L.b_out = read(p + "ffn_out.bias");
    L.ffn_norm_w = read(p + "ffn_norm.weight");
    L.ffn_norm_b = read(p + "ffn_norm.bias");
    layers.push_back(std::move(L));
  }
  head_w = read("head.dense.weight");
  head_b = read("head.dense.bias");
  cls_w = read("head.classifier.weight");
  cls_b = read("head.classifier.bias");
}

template <typename Real>
std::vector<Real> BertReferenceT<Real>::forward(const std::vector<int>& ids,
                                                const std::vector<uint8_t>& mask,
                                                const std::vector<int>& token_types) const {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t h = c_.hidden, f = c_.intermediate, nh = c_.n_heads, hd = c_.head_dim();
  CIBENCH_CHECK(n >= 1 && n <= c_.max_length(), "sequence length ", n, " is outside 1..",
                c_.max_length());
  CIBENCH_CHECK(mask.empty() || static_cast<int64_t>(mask.size()) == n, "mask length ",
                mask.size(), " differs from the sequence length ", n);
  CIBENCH_CHECK(token_types.empty() || static_cast<int64_t>(token_types.size()) == n,
                "token_types length ", token_types.size(), " differs from the sequence length ", n);

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
  std::vector<Real> q(n * h), k(n * h), v(n * h), att(n * h), tmp(h), hid(f), scores(n);
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(hd));
  const Real masked = static_cast<Real>(-3.4028234663852886e38);  // the most negative float
  for (const Layer& L : layers) {
    for (int64_t t = 0; t < n; ++t) {
      linear(L.wq, L.bq, &x[t * h], h, h, &q[t * h]);
      linear(L.wk, L.bk, &x[t * h], h, h, &k[t * h]);
      linear(L.wv, L.bv, &x[t * h], h, h, &v[t * h]);
    }
    // attention, head by head
    for (int64_t head = 0; head < nh; ++head) {
      for (int64_t t = 0; t < n; ++t) {
        const Real* qt = &q[t * h + head * hd];
        Real mx = -INFINITY;
        for (int64_t s = 0; s < n; ++s) {
          Real d = 0;
          for (int64_t i = 0; i < hd; ++i) d += qt[i] * k[s * h + head * hd + i];
          // padding keys get the most negative float added, as Hugging Face does
          scores[s] = d * scale + (mask.empty() || mask[s] ? Real(0) : masked);
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

template class BertReferenceT<float>;
template class BertReferenceT<double>;

}  // namespace cibench
